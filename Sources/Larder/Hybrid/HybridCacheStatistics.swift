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
    /// Reads no tier served (the remote tier included, when there is one). A load-through read that finds only a stale value counts one; a
    /// load-through caller that joins a load in flight counts as a coalesced wait instead.
    public var misses: Int
    /// Stores through the hybrid.
    public var insertions: Int
    /// Loader calls made by load-through reads (`value(forKey:expiry:staleWindows:orLoad:)`):
    /// one per key per miss, however many callers asked.
    public var loads: Int
    /// Load-through callers that joined a load already in flight instead of starting one.
    public var coalescedWaits: Int
    /// Load-through callers given a value past its expiry (stale-while-revalidate or stale-if-error).
    public var staleServes: Int
    /// Loader calls that threw.
    public var loaderFailures: Int
    /// The remote tier's counters; `nil` without one (``HybridCacheOptions/remote``).
    public var remote: RemoteTierStatistics?

    /// Creates the counters from their parts.
    /// - Parameters:
    ///   - memory: The memory tier's counters.
    ///   - disk: The disk tier's counters.
    ///   - memoryHits: Reads the memory tier served.
    ///   - diskHits: Reads the disk tier served.
    ///   - preloadedHits: Reads served from preloaded entries.
    ///   - misses: Reads no tier served.
    ///   - insertions: Stores through the hybrid.
    ///   - loads: Loader calls made by load-through reads.
    ///   - coalescedWaits: Load-through callers that joined a load in flight.
    ///   - staleServes: Load-through callers given a stale value.
    ///   - loaderFailures: Loader calls that threw.
    ///   - remote: The remote tier's counters, if there is one.
    public init(
        memory: CacheStatistics, disk: CacheStatistics, memoryHits: Int, diskHits: Int, preloadedHits: Int, misses: Int,
        insertions: Int, loads: Int = 0, coalescedWaits: Int = 0, staleServes: Int = 0, loaderFailures: Int = 0,
        remote: RemoteTierStatistics? = nil
    ) {
        self.remote = remote
        self.memory = memory
        self.disk = disk
        self.memoryHits = memoryHits
        self.diskHits = diskHits
        self.preloadedHits = preloadedHits
        self.misses = misses
        self.insertions = insertions
        self.loads = loads
        self.coalescedWaits = coalescedWaits
        self.staleServes = staleServes
        self.loaderFailures = loaderFailures
    }

    /// The hybrid as one cache: hits from any tier, misses of every tier, stores through the
    /// hybrid, and both tiers' expirations, evictions, bytes, corrupt records and collections.
    public var combined: CacheStatistics {
        var result = memory.adding(disk)
        result.hits = memoryHits + diskHits + preloadedHits + (remote?.hits ?? 0)
        result.misses = misses
        result.insertions = insertions
        return result
    }
}
