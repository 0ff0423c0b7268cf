import Foundation

/// A view of a ``HybridCache`` for values of one type, whose memory tier holds decoded values:
/// a memory hit returns the value itself, with no decoding.
///
/// ```swift
/// let profiles = try cache.typed(Profile.self)
/// try profiles.store(me, forKey: "me")
/// let hit = try profiles.value(forKey: "me")   // from memory: no JSON decoded
/// ```
///
/// The view shares the hybrid's disk tier (and its remote tier and read-through preloaded
/// entries, when it has them): what it stores is encoded with its ``coder`` and written there,
/// so the hybrid and every other view read the same entries. Only the memory tier is its own:
/// a ``MemoryCache`` of values whose cost is their encoded size in bytes, the unit of the
/// hybrid's `memory.totalCostLimit` (``HybridCacheOptions/memory``).
///
/// **Writing a key through the hybrid and a view.** Every memory tier (the hybrid's, each
/// view's) holds a key's current value or nothing. A change to a key through the hybrid or any
/// view (store, removal, touch, lock, a disk eviction, an invalidation from another instance)
/// drops the copies the other tiers hold, under the key's lock, and the writer keeps its own;
/// the next read through another view decodes the new bytes from disk once. So a value stored
/// through the hybrid is never served from a view's memory as the value it replaced.
///
/// Make one view per type and keep it: each call to ``HybridCache/typed(_:coder:countLimit:totalCostLimit:)``
/// makes a new, empty memory tier. A view keeps its hybrid alive.
public final class TypedCache<Value: Codable & Sendable>: Sendable {
    /// The hybrid cache whose disk (and remote) tier the view reads and writes.
    public let cache: HybridCache
    /// The view's memory tier: decoded values, each costing its encoded size.
    public let memory: MemoryCache<String, Value>
    /// How values become bytes on disk, and back.
    public let coder: CacheCoder

    init(cache: HybridCache, coder: CacheCoder, countLimit: Int, totalCostLimit: Int) throws(CacheError) {
        self.cache = cache
        self.coder = coder
        let tier = cache.memory
        memory = try MemoryCache(
            countLimit: countLimit, totalCostLimit: totalCostLimit, defaultExpiration: tier.defaultExpiration,
            clock: cache.disk.options.clock, policy: tier.policy)
        if let center = tier.memoryPressureCenter { memory.respondToMemoryPressure(true, center: center) }
        cache.typedMemories.add(memory)
    }

    // MARK: Reading

    /// Returns the value stored under `key`, from the first of `tiers` that holds it: the view's
    /// memory (no decoding), then the disk (and read-through preloaded entries), then the remote
    /// tier.
    ///
    /// A disk hit is decoded once and kept in the view's memory when `tiers` includes
    /// ``CacheTiers/memory``, with a cost of its encoded size and a lifetime ending at its disk
    /// expiry. A remote hit is decoded and returned; the hybrid keeps its bytes on disk, and the
    /// next read decodes them into memory.
    /// - Parameters:
    ///   - key: The key.
    ///   - tiers: Where to look (``CacheTiers/all``).
    /// - Returns: The value, or `nil` when no tier asked holds a live entry.
    /// - Throws: ``CacheError/Code/decodingFailed`` naming the key and type when the bytes do not
    ///   decode, or what `HybridCache.value(forKey:from:)` throws.
    @inlinable
    public func value(forKey key: String, from tiers: CacheTiers = .all) throws(CacheError) -> Value? {
        // Inlinable, like `MemoryCache.value(forKey:)`: compiled here, for any `Value`, the memory
        // hit went through the unspecialized generic cache (1,040 against 155 ns in `larder-bench
        // hybrid`'s get-hit-memory-typed); in the caller's module it is specialized for its type.
        if tiers.contains(.memory) {
            if cache.followsFolder { cache.followFolder() }
            if let hit = memory.value(forKey: key) { return hit }
        }
        return try valueAfterMemoryMiss(forKey: key, from: tiers)
    }

    /// The disk and remote part of ``value(forKey:from:)``, once the view's memory has missed.
    @usableFromInline
    func valueAfterMemoryMiss(forKey key: String, from tiers: CacheTiers) throws(CacheError) -> Value? {
        let remote = tiers.contains(.remote) ? cache.remote : nil
        var generation: KeyGenerations.Snapshot?
        if tiers.contains(.disk) {
            let local = try cache.keyLocks.withLock(forKey: key) { () throws(CacheError) -> Value? in
                // Another caller may have decoded it while this one waited.
                if tiers.contains(.memory), let hit = memory.value(forKey: key, countingMiss: false) { return hit }
                generation = remote?.generations.snapshot(key)
                let mark = tiers.contains(.memory) ? cache.folderMark(forKey: key) : nil
                guard let entry = try cache._entryFromDisk(forKey: key, countingMiss: remote == nil) else { return nil }
                let value = try coder.decoded(Value.self, from: entry.data, key: key)
                if tiers.contains(.memory) {
                    cache.promote(value, cost: entry.data.count, forKey: key, expiration: entry.expiration, into: memory, since: mark)
                }
                return value
            }
            guard local == nil, let remote else { return local }
            return try decodedRemoteValue(remote, forKey: key, from: tiers, generation: generation ?? remote.generations.snapshot(key))
        }
        guard let remote else {
            cache.counters.misses.add(1, ordering: .relaxed)
            return nil
        }
        return try decodedRemoteValue(remote, forKey: key, from: tiers, generation: remote.generations.snapshot(key))
    }

    /// Reads `key` from the remote tier (the hybrid keeps a hit on disk when `tiers` says so)
    /// and decodes it.
    private func decodedRemoteValue(_ remote: RemoteTier, forKey key: String, from tiers: CacheTiers, generation: KeyGenerations.Snapshot)
        throws(CacheError) -> Value?
    {
        guard let data = cache.valueFromRemote(remote, forKey: key, into: tiers.subtracting(.memory), generation: generation) else {
            return nil
        }
        return try coder.decoded(Value.self, from: data, key: key)
    }

    /// Whether a live value is stored under `key` in the view's memory or on disk (see
    /// `HybridCache.contains(_:)`). Not a use.
    /// - Parameter key: The key.
    public func contains(_ key: String) -> Bool {
        if cache.followsFolder { cache.followFolder() }
        return memory.contains(key) || cache.disk.contains(key)
    }

    // MARK: Writing

    /// Encodes `value` and stores the bytes under `key` in `tiers`, keeping the value itself in
    /// the view's memory (at the cost of its encoded size) when `tiers` includes
    /// ``CacheTiers/memory``. The hybrid's memory and other views lose their copies of `key`.
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    ///   - tiers: Where to store it (``CacheTiers/all``); as `HybridCache.store(_:forKey:in:expiry:locked:)`.
    ///   - expiry: When it expires (``Expiry/default``: the disk's default expiration).
    ///   - locked: Whether it is locked against expiry.
    /// - Throws: ``CacheError/Code/encodingFailed`` naming the key and type, or what
    ///   `HybridCache.store(_:forKey:in:expiry:locked:)` throws; after a failure every tier keeps
    ///   its previous value.
    public func store(_ value: Value, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false)
        throws(CacheError)
    {
        let data = try coder.encoded(value, key: key)
        try cache.store(data, forKey: key, in: tiers, expiry: expiry, locked: locked) { [cache, memory] expiration, mark in
            cache.promote(value, cost: data.count, forKey: key, expiration: expiration, into: memory, since: mark)
        }
    }

    /// Removes `key` from every tier, this view's memory included (see `HybridCache.remove(forKey:)`).
    /// - Returns: Whether any tier held a live value.
    /// - Throws: What `HybridCache.remove(forKey:)` throws.
    @discardableResult
    public func remove(forKey key: String) throws(CacheError) -> Bool {
        try cache.remove(forKey: key)
    }

    /// Removes the keys in `keys` from every tier, as `remove(forKey:)` does for each.
    /// - Returns: The keys that any tier held a live value for, in the order given.
    /// - Throws: What `HybridCache.remove(forKeys:)` throws.
    @discardableResult
    public func remove(forKeys keys: [String]) throws(CacheError) -> [String] {
        try cache.remove(forKeys: keys)
    }

    /// Records a use of `key` on disk (see `HybridCache.touch(forKey:)`); the view's memory copy
    /// goes, and the next read decodes it again with the new expiry.
    /// - Returns: `false` when no live entry is stored on disk under `key`.
    /// - Throws: What `HybridCache.touch(forKey:)` throws.
    @discardableResult
    public func touch(forKey key: String) throws(CacheError) -> Bool {
        try cache.touch(forKey: key)
    }
}

extension HybridCache {
    /// A view of this cache for values of type `Value`, whose memory tier holds decoded values,
    /// so that a memory hit returns the value without decoding; see ``TypedCache``.
    ///
    /// ```swift
    /// let profiles = try cache.typed(Profile.self)
    /// ```
    /// - Parameters:
    ///   - type: The values' type.
    ///   - coder: How values become bytes; `nil` (the default) means the cache's ``coder``.
    ///   - countLimit: The most values the view's memory holds; 0 (the default) means no limit.
    ///   - totalCostLimit: The most encoded bytes the view's memory holds; `nil` (the default)
    ///     means the same limit as the hybrid's memory tier (``MemoryCache/totalCostLimit``), 0
    ///     no limit. The view's memory also responds to memory pressure when the hybrid's does,
    ///     and shares its default expiration and eviction policy.
    /// - Returns: A new view, with an empty memory tier.
    /// - Throws: ``CacheError/Code/invalidOptions`` naming a negative limit and its value, as any
    ///   cache's settings are checked when it is made.
    public func typed<Value: Codable & Sendable>(
        _ type: Value.Type, coder: CacheCoder? = nil, countLimit: Int = 0, totalCostLimit: Int? = nil
    ) throws(CacheError) -> TypedCache<Value> {
        try TypedCache(
            cache: self, coder: coder ?? self.coder, countLimit: countLimit, totalCostLimit: totalCostLimit ?? memory.totalCostLimit)
    }
}
