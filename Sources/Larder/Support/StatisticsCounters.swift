/// The counters a tier keeps under its lock, bumped on hot paths without hashing: eviction
/// counts sit in fixed fields and become ``CacheStatistics/evictions`` only when read.
@usableFromInline
struct StatisticsCounters: Sendable {
    @usableFromInline var hits = 0
    @usableFromInline var misses = 0
    @usableFromInline var insertions = 0
    @usableFromInline var expirations = 0
    @usableFromInline var bytesRead = 0
    @usableFromInline var bytesWritten = 0
    @usableFromInline var corruptRecordsRemoved = 0
    @usableFromInline var collections = 0
    /// Evictions by ``EvictionReason``, in the order of `EvictionReason.allCases`.
    @usableFromInline var evictions = (0, 0, 0, 0, 0, 0, 0)

    @inlinable
    init() {}

    /// Counts one eviction for `reason`.
    @inlinable
    mutating func countEviction(_ reason: EvictionReason) {
        switch reason {
        case .countLimit: evictions.0 += 1
        case .costLimit: evictions.1 += 1
        case .sizeLimit: evictions.2 += 1
        case .expired: evictions.3 += 1
        case .memoryPressure: evictions.4 += 1
        case .trimmed: evictions.5 += 1
        case .diskFull: evictions.6 += 1
        }
    }

    /// The counters as the public value.
    var statistics: CacheStatistics {
        var result = CacheStatistics()
        result.hits = hits
        result.misses = misses
        result.insertions = insertions
        result.expirations = expirations
        result.bytesRead = bytesRead
        result.bytesWritten = bytesWritten
        result.corruptRecordsRemoved = corruptRecordsRemoved
        result.collections = collections
        let counts = [evictions.0, evictions.1, evictions.2, evictions.3, evictions.4, evictions.5, evictions.6]
        for (reason, count) in zip(EvictionReason.allCases, counts) where count > 0 {
            result.evictions[reason] = count
        }
        return result
    }
}
