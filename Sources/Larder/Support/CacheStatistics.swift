/// Counters that describe how a cache has been used since it was created.
///
/// Every tier keeps the same five counters, so a hybrid cache can add its tiers' numbers up.
/// ```swift
/// let stats = cache.statistics
/// print("hit rate \(stats.hitRate), \(stats.evictions) evicted")
/// ```
public struct CacheStatistics: Hashable, Sendable, CustomStringConvertible {
    /// Reads that returned a value.
    public var hits: Int
    /// Reads that returned `nil`: the key was absent, or its value had expired.
    public var misses: Int
    /// Values admitted by a write, including those that replaced an older value under the same key.
    public var insertions: Int
    /// Values dropped because their time to live had passed.
    public var expirations: Int
    /// Values dropped to respect a limit, an explicit trim or memory pressure (not counting
    /// expirations, explicit removals, or values replaced by a write).
    public var evictions: Int

    /// Creates a set of counters; all default to zero.
    /// - Parameters:
    ///   - hits: Reads that returned a value.
    ///   - misses: Reads that returned `nil`.
    ///   - insertions: Values admitted by a write.
    ///   - expirations: Values dropped because their time to live had passed.
    ///   - evictions: Values dropped to respect a limit or memory pressure.
    public init(hits: Int = 0, misses: Int = 0, insertions: Int = 0, expirations: Int = 0, evictions: Int = 0) {
        self.hits = hits
        self.misses = misses
        self.insertions = insertions
        self.expirations = expirations
        self.evictions = evictions
    }

    /// Reads in total: `hits + misses`.
    public var lookups: Int { hits + misses }

    /// The share of reads that returned a value, from 0 to 1; 0 when there have been no reads.
    public var hitRate: Double {
        lookups == 0 ? 0 : Double(hits) / Double(lookups)
    }

    /// The counters as one line, as in `hits 3, misses 1, insertions 4, expirations 0, evictions 1`.
    public var description: String {
        "hits \(hits), misses \(misses), insertions \(insertions), expirations \(expirations), evictions \(evictions)"
    }
}
