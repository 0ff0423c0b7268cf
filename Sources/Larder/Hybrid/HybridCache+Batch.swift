import Foundation

// Reading many keys at once: memory and disk per key, then one call to the remote tier for every
// key they missed (on Redis: one `MGET`).
extension HybridCache {
    /// Returns the payloads stored under `keys`, in the same order, `nil` where no tier asked
    /// holds a live value: each key as `value(forKey:from:)` reads it, except that the keys memory
    /// and disk miss go to the remote tier together, in one call.
    ///
    /// ```swift
    /// let avatars = try cache.values(forKeys: ids.map { "avatar/\($0)" })
    /// ```
    /// - Parameters:
    ///   - keys: The keys; a key may appear more than once.
    ///   - tiers: Where to look (``CacheTiers/all``).
    /// - Returns: One payload or `nil` per key.
    /// - Throws: ``CacheError`` from the disk tier, as `value(forKey:from:)` does.
    /// - Complexity: O(*n*) in the keys, and one remote call for all the local misses.
    public func values(forKeys keys: [String], from tiers: CacheTiers = .all) throws(CacheError) -> [Data?] {
        guard let remote = tiers.contains(.remote) ? self.remote : nil else {
            return try keys.map { (key) throws(CacheError) in try value(forKey: key, from: tiers) }
        }
        var results = [Data?](repeating: nil, count: keys.count)
        var missed: [(index: Int, key: String, generation: KeyGenerations.Snapshot)] = []
        if tiers.contains(.memory), followsFolder { followFolder() }
        for (index, key) in keys.enumerated() {
            if tiers.contains(.memory), let hit = memory.value(forKey: key, countingMiss: true, countingOwnerHit: true) {
                results[index] = hit
                continue
            }
            // Hashed once: the key lock, the generation, and the promotion's key lock.
            let keyHash = StripedLock.hash(ofKey: key)
            // The generation is read once: under the key lock, before the disk misses, when the
            // disk is asked (as `value(forKey:from:)` reads it).
            var generation: KeyGenerations.Snapshot?
            if tiers.contains(.disk) {
                let local = try keyLocks.withLock(forKeyHash: keyHash) { () throws(CacheError) -> Data? in
                    if tiers.contains(.memory), let hit = memory.value(forKey: key, countingMiss: false, countingOwnerHit: true) {
                        return hit
                    }
                    generation = remote.generations.snapshot(keyHash: keyHash)
                    return try _valueFromDisk(forKey: key, promoting: tiers.contains(.memory), countingMiss: false)
                }
                if let local {
                    results[index] = local
                    continue
                }
            }
            missed.append((index, key, generation ?? remote.generations.snapshot(keyHash: keyHash)))
        }
        guard !missed.isEmpty else { return results }
        let now = disk.options.clock.now
        let fetched = remote.values(forKeys: missed.map(\.key), now: now)
        var hits: [(key: String, data: Data, end: Double, generation: KeyGenerations.Snapshot)] = []
        hits.reserveCapacity(missed.count)
        for (miss, found) in zip(missed, fetched) {
            guard let (data, lifetime) = found else {
                counters.misses.add(1, ordering: .relaxed)
                continue
            }
            results[miss.index] = data
            if lifetime > 0 { hits.append((miss.key, data, now + lifetime, miss.generation)) }
        }
        // With tracking down, a copy kept here could miss its invalidation: served, not kept.
        guard !hits.isEmpty, remote.keepsRemoteHits else { return results }
        // Memory copies first, all in one critical section, then the disk copies queued as one
        // job: the worker, which starts once half its backlog waits, does not take key locks
        // while this batch's memory copies are still being made.
        if tiers.contains(.memory) { copyRemoteHitsToMemory(remote, count: hits.count) { hits[$0] } }
        guard tiers.contains(.disk), let copier = remoteHitCopier else { return results }
        let write: PromotionQueue.BatchJob = { [hits] positions in
            for hit in hits[positions] { copier.write(hit.data, forKey: hit.key, end: hit.end, generation: hit.generation) }
        }
        let refused = remote.promotions.submit(batch: hits.count, write)
        if !refused.isEmpty { write(refused) }
        return results
    }

    /// Returns the payloads stored under `keys`, on the disk's queue; see `values(forKeys:from:)`.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func values(forKeys keys: [String], from tiers: CacheTiers = .all) async throws(CacheError) -> [Data?] {
        try await disk.ioQueue.runBlocking(key: keys.first) { () throws(CacheError) in try self.values(forKeys: keys, from: tiers) }
    }
}
