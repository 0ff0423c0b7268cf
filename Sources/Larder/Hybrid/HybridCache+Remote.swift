import Foundation

// The shared remote tier (`HybridCacheOptions.remote`): reads that memory and disk miss, the
// promotion of what it serves, and the invalidations other instances publish.
extension HybridCache {
    /// Reads `key` from the remote tier, outside the key lock, and promotes a hit into the local
    /// tiers of `tiers` with a lifetime no longer than the remote's time to live and the local
    /// cap, unless the key changed locally meanwhile (`generation`). Counts the miss.
    func valueFromRemote(_ remote: RemoteTier, forKey key: String, into tiers: CacheTiers, generation: KeyGenerations.Snapshot) -> Data? {
        let now = disk.options.clock.now
        guard let (data, lifetime) = remote.value(forKey: key, now: now) else {
            counters.misses.add(1, ordering: .relaxed)
            return nil
        }
        promoteRemoteHit(data, forKey: key, lifetime: lifetime, into: tiers, generation: generation, now: now)
        return data
    }

    /// Puts a remote hit in memory now and on disk soon (as `tiers` says), for `lifetime` seconds
    /// from now. The disk write would double the read's latency (a file written per hit;
    /// `larder-bench remote`), so it goes to the remote tier's bounded promotion queue; when the
    /// queue is full, the caller writes it itself.
    func promoteRemoteHit(
        _ data: Data, forKey key: String, lifetime: Double, into tiers: CacheTiers, generation: KeyGenerations.Snapshot, now: Double
    ) {
        guard let remote,
            let write = promoteRemoteHitToMemory(data, forKey: key, lifetime: lifetime, into: tiers, generation: generation, now: now)
        else { return }
        if !remote.promotions.submit(key, write) { write() }
    }

    /// The memory half of `promoteRemoteHit(_:forKey:lifetime:into:generation:now:)`, done now; returns
    /// the disk half, the job that writes the disk copy (`nil` when `tiers` has no disk or the
    /// hit has no lifetime left). The same `data` goes to memory and to the job: no copy.
    /// `now` is the disk clock's time of the read, from which `lifetime` counts.
    func promoteRemoteHitToMemory(
        _ data: Data, forKey key: String, lifetime: Double, into tiers: CacheTiers, generation: KeyGenerations.Snapshot, now: Double
    ) -> PromotionQueue.Job? {
        // With tracking down, a copy kept here could miss its invalidation: served from the
        // remote tier, not kept.
        guard lifetime > 0, let remote, remote.keepsRemoteHits else { return nil }
        let end = now + lifetime
        if tiers.contains(.memory) {
            copyRemoteHitsToMemory(remote, count: 1) { _ in (key, data, end, generation) }
        }
        guard tiers.contains(.disk), let copier = remoteHitCopier else { return nil }
        return { copier.write(data, forKey: key, end: end, generation: generation) }
    }

    /// Copies remote hits into the memory tier, each until its `end` (disk clock time), unless
    /// its key changed locally since its read (`generation`), all in one critical section of the
    /// memory tier's lock.
    ///
    /// Each key's generation is checked inside that critical section: every local change of a
    /// key moves its generation on before it changes the memory tier (which takes that lock), so
    /// a change whose move came before the check makes the copy go unused, and one whose move
    /// came after it changes memory after the copy is made, replacing or removing it. The key
    /// locks are not needed for that, and so a batch takes none.
    func copyRemoteHitsToMemory(
        _ remote: RemoteTier, count: Int,
        _ hit: (Int) -> (key: String, data: Data, end: Double, generation: KeyGenerations.Snapshot)
    ) {
        // Read now, not at the `GET`: the copy ends at `end`, not the read's latency after it.
        let now = disk.options.clock.now
        memory.storeCopies(count: count, now: now) { index in
            let hit = hit(index)
            guard remote.generations.allows(hit.generation) else { return nil }
            return MemoryCache.Copy(key: hit.key, value: hit.data, cost: hit.data.count, deadline: hit.end)
        }
    }

    /// When the remote copy of an entry stored locked expires: as it would unlocked. A lock pins
    /// the local disk record only; on the shared store the entry is a cache entry like any other,
    /// and nothing would ever remove it if it never expired (an unlock is not shared).
    func remoteExpiration(_ expiry: Expiry, seconds: Double?, in tiers: CacheTiers, now: Double) -> Double? {
        if tiers.contains(.disk) { return storeExpiration(expiry, locked: false, now: now) }
        return (seconds ?? memory.defaultExpiration).map { now + $0 }
    }

    /// When the remote copy of `record` expires: the record's own expiry, computed as if unlocked
    /// (see `remoteExpiration(_:seconds:in:now:)`).
    func remoteExpiration(of record: CacheRecord) -> Double? {
        if let time = record.expirationTime { return time }
        guard let ttl = try? ExpiryRule.headerTTL(for: record.expiry, key: nil) else { return nil }
        let anchor = ttl == 0 ? max(record.updateTime, record.lastAccessTime) : record.updateTime
        return disk.expiryRule.expirationTime(lockCount: 0, ttl: ttl, anchor: disk.expiryRule.headerSeconds(anchor))
    }

    /// Subscribes to the invalidations of the other instances sharing the remote tier.
    func startRemoteSubscription() {
        // The background handle: handling an event never holds the owner's handle, so its
        // release closes the cache at once. The subscription (and with it this handle) goes
        // with the owner's release or `close()`.
        let background = backgroundHandle
        remote?.subscribe { event in background.handleRemote(event) }
    }

    /// Applies what the subscription reports.
    func handleRemote(_ event: RemoteSubscriptionEvent) {
        guard let remote else { return }
        switch event {
        case .message(let message):
            guard let invalidation = RemoteInvalidation(decoding: message), invalidation.sender != remote.id else { return }
            remote.counters.received.add(1, ordering: .relaxed)
            applyInvalidation(invalidation.scope)
            remote.report(.invalidated(invalidation.scope))
        case .subscribed(let afterReconnect):
            guard afterReconnect else {
                remote.setTracking(true)
                return remote.report(.subscribed)
            }
            // Invalidations published while the connection was down are lost: the memory tier
            // forgets everything; disk copies of remote values end within the local cap. With
            // tracking, the disk tier goes too: what this instance stored while tracking was
            // down may have been replaced by another meanwhile.
            remote.generations.bump(nil)
            if remote.options.invalidation == .tracking {
                dropLocalCopies()
                remote.setTracking(true)
            } else {
                memory.removeAll()
                typedMemories.removeAll()
            }
            remote.report(.subscriptionRestored)
        case .lost(let reason):
            remote.counters.failures.add(1, ordering: .relaxed)
            // With tracking, a loss is the moment copies stop being provably fresh: they go now
            // (once per outage), and remote hits stay out of the local tiers until it is back.
            if remote.options.invalidation == .tracking, remote.setTracking(false) { dropLocalCopies() }
            remote.report(.subscriptionLost(reason))
        case .changed(let storeKeys):
            guard let storeKeys else {
                remote.counters.received.add(1, ordering: .relaxed)
                applyInvalidation(.all)
                return remote.report(.invalidated(.all))
            }
            for storeKey in storeKeys {
                guard let key = remote.cacheKey(ofStoreKey: storeKey) else { continue }
                remote.counters.received.add(1, ordering: .relaxed)
                applyInvalidation(.key(key))
                remote.report(.invalidated(.key(key)))
            }
        }
    }

    /// Empties the memory and disk tiers (the memory tier alone when the disk fails), after
    /// moving every key's generation on so that no remote read under way promotes its value.
    private func dropLocalCopies() {
        remote?.generations.bump(nil)
        if (try? removeAllLocally()) == nil {
            memory.removeAll()
            typedMemories.removeAll()
        }
    }

    /// Drops this instance's memory and disk copies covered by `scope`.
    func applyInvalidation(_ scope: RemoteInvalidation.Scope) {
        switch scope {
        case .key(let key):
            remote?.generations.bump(key)
            if (try? removeLocally(forKey: key)) == nil {
                memory.remove(forKey: key)
                typedMemories.remove(forKey: key)
            }
        case .prefix(let prefix):
            remote?.generations.bump(nil)
            if (try? removeLocally(withPrefix: prefix)) == nil {
                for key in memory.keys() where key.hasPrefix(prefix) { memory.remove(forKey: key) }
                for key in typedMemories.keys(withPrefix: prefix) { typedMemories.remove(forKey: key) }
            }
        case .all:
            remote?.generations.bump(nil)
            if (try? removeAllLocally()) == nil {
                memory.removeAll()
                typedMemories.removeAll()
            }
        }
    }

    /// Waits for the remote tier's background work queued so far: its writes in
    /// ``RemoteTierOptions/WriteMode/background`` mode, and the disk copies of remote hits.
    /// Returns at once without a remote tier.
    public func flushRemoteWrites() {
        remote?.drainWrites()
    }
}

/// Writes the disk copies of remote hits (the promotion queue's jobs run it): one per cache,
/// shared by its handles, so that a job holds one reference to it beside the hit.
final class RemoteHitCopier: Sendable {
    let remote: RemoteTier
    /// The disk tier's background handle (``DiskCache/backgroundHandle``).
    let disk: DiskCache
    let keyLocks: StripedLock
    let clock: any CacheClock

    init(remote: RemoteTier, disk: DiskCache, keyLocks: StripedLock, clock: any CacheClock) {
        self.remote = remote
        self.disk = disk
        self.keyLocks = keyLocks
        self.clock = clock
    }

    /// Writes the disk copy of a remote hit of `key`, until `end` (disk clock time), unless the
    /// key changed locally since its read (`generation`).
    ///
    /// It writes the file first, holding no lock
    /// (``DiskCache/prepareStore(_:forKey:expiry:locked:)``), and takes the key lock only to
    /// check that the key did not change locally since the read and to rename the file into
    /// place (``DiskCache/commitStore(_:)``). Every local change of the key (a store, a removal,
    /// an invalidation, `removeAll`) moves its generation on before it takes that lock (or every
    /// key lock) to change the disk, so a change that began before the check makes the copy go
    /// unused, and one that begins after it replaces the copy. No lock is held while the file is
    /// written, so a read of a key of the same lock stripe never waits for it.
    func write(_ data: Data, forKey key: String, end: Double, generation: KeyGenerations.Snapshot) {
        // A copy already out of date is not written at all; the check that decides is the one
        // under the key lock.
        guard remote.generations.allows(generation) else { return }
        // The disk keeps whole seconds (rounded up): round down, so its copy never outlives the
        // remote's.
        let seconds = (end - clock.now).rounded(.down)
        guard seconds >= 1 else { return }
        try? disk.timed(.store, key) { () throws(CacheError) in
            let pending = try disk.prepareStore(data, forKey: key, expiry: .seconds(seconds), locked: false)
            let stored = try keyLocks.withLock(forKeyHash: generation.keyHash) { () throws(CacheError) -> StoredRecord? in
                guard remote.generations.allows(generation) else { return nil }
                return try disk.commitStore(pending)
            }
            guard let stored else { return disk.discardStore(pending) }
            try disk.finishStore(stored)
        }
    }
}
