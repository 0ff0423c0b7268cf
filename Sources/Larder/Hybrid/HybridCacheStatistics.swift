/// A ``HybridCache``'s counters: each tier's own, the two combined, and which tier served each hit.
///
/// ```swift
/// let stats = cache.statistics
/// print("\(stats.memoryHits) from memory, \(stats.diskHits) from disk, hit rate \(stats.combined.hitRate)")
/// ```
public struct HybridCacheStatistics: Hashable, Sendable {
    /// The memory tier's counters. A read that memory misses and the disk serves counts one
    /// memory miss.
    public var memory: CacheStatistics
    /// The disk tier's counters, including reads of entries memory missed and stores.
    public var disk: CacheStatistics
    /// Reads the memory tier served.
    public var memoryHits: Int
    /// Reads the disk tier served (and promoted to memory when asked to).
    public var diskHits: Int
    /// Reads served from read-through preloaded entries.
    public var preloadedHits: Int
    /// Reads no tier served.
    public var misses: Int
    /// Stores through the hybrid.
    public var insertions: Int

    /// Creates the counters from their parts.
    /// - Parameters:
    ///   - memory: The memory tier's counters.
    ///   - disk: The disk tier's counters.
    ///   - memoryHits: Reads the memory tier served.
    ///   - diskHits: Reads the disk tier served.
    ///   - preloadedHits: Reads served from preloaded entries.
    ///   - misses: Reads no tier served.
    ///   - insertions: Stores through the hybrid.
    public init(
        memory: CacheStatistics, disk: CacheStatistics, memoryHits: Int, diskHits: Int, preloadedHits: Int, misses: Int,
        insertions: Int
    ) {
        self.memory = memory
        self.disk = disk
        self.memoryHits = memoryHits
        self.diskHits = diskHits
        self.preloadedHits = preloadedHits
        self.misses = misses
        self.insertions = insertions
    }

    /// The hybrid as one cache: hits from any tier, misses of every tier, stores through the
    /// hybrid, and both tiers' expirations, evictions, bytes, corrupt records and collections.
    public var combined: CacheStatistics {
        var result = memory.adding(disk)
        result.hits = memoryHits + diskHits + preloadedHits
        result.misses = misses
        result.insertions = insertions
        return result
    }
}
