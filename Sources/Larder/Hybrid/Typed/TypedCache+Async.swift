import Foundation

// The `async` twins of the typed view's calls, named after them. As with the hybrid's, a memory
// hit is answered on the calling task; everything that may touch a file runs its synchronous twin
// on the disk's ``DiskCache/ioQueue``, and a task cancelled before that work starts gets
// ``CacheError/Code/cancelled`` with nothing done.
extension TypedCache {
    /// Returns the value under `key`; see ``value(forKey:from:)``.
    /// - Throws: ``CacheError/Code/cancelled`` when the task is cancelled before the disk is
    ///   read, or what the synchronous call throws.
    @inlinable
    public func value(forKey key: String, from tiers: CacheTiers = .all) async throws(CacheError) -> Value? {
        if tiers.contains(.memory) {
            if cache.followsFolder { cache.followFolder() }
            if let hit = memory.value(forKey: key) { return hit }
        }
        return try await valueAfterMemoryMiss(forKey: key, from: tiers)
    }

    /// The disk and remote part of the `async` ``value(forKey:from:)``, on the disk's queue.
    @usableFromInline
    func valueAfterMemoryMiss(forKey key: String, from tiers: CacheTiers) async throws(CacheError) -> Value? {
        try await cache.disk.ioQueue.runBlocking(key: key) { () throws(CacheError) in
            try self.valueAfterMemoryMiss(forKey: key, from: tiers)
        }
    }

    /// Returns the value under `key`, or on a miss loads it once, stores it encoded with
    /// `expiry` and returns it: the typed form of `HybridCache.value(forKey:expiry:staleWindows:orLoad:)`,
    /// with its single flight per key, its stale windows and its errors.
    ///
    /// ```swift
    /// let profiles = cache.typed(Profile.self)
    /// let me = try await profiles.value(forKey: "me", expiry: .seconds(600)) { try await api.profile("me") }
    /// ```
    ///
    /// A hit in the view's memory returns the value itself: nothing is decoded. Otherwise the
    /// hybrid's load-through read answers with bytes (from its memory, the disk, the remote
    /// tier, the loader, or a stale copy), which are decoded once; when they are the key's live
    /// value (the hybrid's memory holds them: a stale copy never enters it) the decoded value is
    /// kept in the view's memory until the same expiry, and the next read is a memory hit.
    /// - Parameters:
    ///   - key: The key.
    ///   - expiry: The loaded value's expiry (``Expiry/default``: the disk's default expiration).
    ///   - staleWindows: This call's stale windows; `nil` (the default) means the hybrid's
    ///     ``HybridCache/staleWindows``.
    ///   - loader: Fetches the value on a miss; what it returns is encoded with ``coder``. A value
    ///     that cannot be encoded fails the load (``CacheError/Code/loadFailed``, with the
    ///     ``CacheError/Code/encodingFailed`` error as its ``CacheError/underlying``).
    /// - Returns: The value: from memory, decoded, loaded, or stale.
    /// - Throws: ``CacheError/Code/decodingFailed`` naming the key and type when stored bytes do
    ///   not decode, or what `HybridCache.value(forKey:expiry:staleWindows:orLoad:)` throws.
    public func value(
        forKey key: String, expiry: Expiry = .default, staleWindows: StaleWindows? = nil,
        orLoad loader: @escaping @Sendable () async throws -> Value
    ) async throws(CacheError) -> Value {
        if cache.followsFolder { cache.followFolder() }
        if let hit = memory.value(forKey: key) { return hit }
        let coder = self.coder
        let data = try await cache.value(forKey: key, expiry: expiry, staleWindows: staleWindows) {
            try coder.encoded(await loader(), key: key)
        }
        let value = try coder.decoded(Value.self, from: data, key: key)
        keepIfLive(value, encodedAs: data, forKey: key)
        return value
    }

    /// Keeps `value` in the view's memory when `data`, its bytes, is what the hybrid's memory
    /// holds for `key` now, with the same deadline: the hybrid promotes only live values there
    /// (a store, a fresh disk or remote hit), never a stale copy, and every change of the key
    /// drops them under the key's lock, which this holds.
    private func keepIfLive(_ value: Value, encodedAs data: Data, forKey key: String) {
        cache.keyLocks.withLock(forKey: key) {
            // Taken before the look at the hybrid's copy: a drop of the key after it stops the copy.
            let mark = cache.folderGenerations?.snapshot(key)
            guard let held = cache.memory.peek(key), held.value == data else { return }
            if let mark {
                cache.storeCopy(value, cost: data.count, forKey: key, deadline: held.deadline, into: memory, since: mark)
            } else if held.deadline == .infinity {
                try? memory.store(value, forKey: key, cost: data.count)
            } else {
                let remaining = held.deadline - cache.memory.clock.now
                if remaining > 0 { try? memory.store(value, forKey: key, cost: data.count, expiry: .seconds(remaining)) }
            }
        }
    }

    /// Stores `value` under `key`; see ``store(_:forKey:in:expiry:locked:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func store(
        _ value: Value, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false
    ) async throws(CacheError) {
        try await cache.disk.ioQueue.runBlocking(.write, key: key) { () throws(CacheError) in
            try self.store(value, forKey: key, in: tiers, expiry: expiry, locked: locked)
        }
    }

    /// Removes `key` from every tier; see ``remove(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func remove(forKey key: String) async throws(CacheError) -> Bool {
        try await cache.remove(forKey: key)
    }

    /// Removes the keys in `keys` from every tier; see ``remove(forKeys:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func remove(forKeys keys: [String]) async throws(CacheError) -> [String] {
        try await cache.remove(forKeys: keys)
    }

    /// Records a use of `key`; see ``touch(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func touch(forKey key: String) async throws(CacheError) -> Bool {
        try await cache.touch(forKey: key)
    }
}
