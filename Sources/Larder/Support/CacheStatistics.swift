/// Counters that describe how a cache has been used since it was created or opened: one shape
/// for every tier.
///
/// ```swift
/// let stats = cache.statistics
/// print("hit rate \(stats.hitRate), \(stats.totalEvictions) evicted, \(stats.evictions[.sizeLimit, default: 0]) for size")
/// ```
///
/// Byte counts, collections and corrupt records apply to the disk tier; the memory tier leaves
/// them at 0. ``HybridCache/statistics`` gives each tier's counters and the two combined.
public struct CacheStatistics: Hashable, Sendable, CustomStringConvertible {
    /// Reads that returned a value.
    public var hits = 0
    /// Reads that returned `nil`: the key was absent, its value had expired, or (on disk) its
    /// record was corrupt.
    public var misses = 0
    /// Values admitted by a store, including those that replaced an older value under the same key.
    public var insertions = 0
    /// Values dropped because their lifetime had passed: met by a read, a removal or a
    /// collection.
    public var expirations = 0
    /// Values dropped on the cache's own account (a limit, a trim, memory pressure, a collection,
    /// a full volume), by reason. Expiries met by reads and removals are ``expirations`` only; a
    /// collection's removal of expired values counts in both, under ``EvictionReason/expired``.
    public var evictions: [EvictionReason: Int] = [:]
    /// Payload bytes returned by reads (disk).
    public var bytesRead = 0
    /// Payload bytes written by stores (disk).
    public var bytesWritten = 0
    /// Corrupt records found and removed (disk).
    public var corruptRecordsRemoved = 0
    /// Collections run (disk).
    public var collections = 0

    /// Creates zeroed counters.
    public init() {}

    /// Every eviction, whatever the reason.
    public var totalEvictions: Int { evictions.values.reduce(0, +) }

    /// Reads in total: `hits + misses`.
    public var lookups: Int { hits + misses }

    /// The share of reads that returned a value, from 0 to 1; 0 when there have been no reads.
    public var hitRate: Double {
        lookups == 0 ? 0 : Double(hits) / Double(lookups)
    }

    /// The counters added up: ``HybridCacheStatistics/combined`` is built with it.
    /// - Parameter other: Another set of counters.
    /// - Returns: Each counter summed; evictions summed by reason.
    public func adding(_ other: CacheStatistics) -> CacheStatistics {
        var sum = self
        sum.hits += other.hits
        sum.misses += other.misses
        sum.insertions += other.insertions
        sum.expirations += other.expirations
        sum.evictions.merge(other.evictions, uniquingKeysWith: +)
        sum.bytesRead += other.bytesRead
        sum.bytesWritten += other.bytesWritten
        sum.corruptRecordsRemoved += other.corruptRecordsRemoved
        sum.collections += other.collections
        return sum
    }

    /// The counters as one line, as in `hits 3, misses 1, insertions 4, expirations 0, evictions 1`,
    /// followed by the evictions by reason and the disk counters when they are not zero.
    public var description: String {
        var text = "hits \(hits), misses \(misses), insertions \(insertions), expirations \(expirations), evictions \(totalEvictions)"
        let reasons = EvictionReason.allCases.compactMap { reason in evictions[reason].map { "\(reason) \($0)" } }
        if !reasons.isEmpty { text += " (\(reasons.joined(separator: ", ")))" }
        if bytesRead != 0 || bytesWritten != 0 { text += ", bytes read \(bytesRead), bytes written \(bytesWritten)" }
        if corruptRecordsRemoved != 0 { text += ", corrupt records removed \(corruptRecordsRemoved)" }
        if collections != 0 { text += ", collections \(collections)" }
        return text
    }
}
