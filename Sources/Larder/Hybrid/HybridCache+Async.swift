import Foundation

// The `async` twins of the throwing calls, named after them. Memory hits are answered on the
// calling task (one lock, no I/O); everything that may touch a file runs its synchronous twin on
// the disk's ``DiskCache/ioQueue`` through `runBlocking(key:_:)`, never on the cooperative pool,
// and a task cancelled before that work starts gets ``CacheError/Code/cancelled`` with nothing done.
extension HybridCache {
    /// Returns the payload under `key`; see ``value(forKey:from:)``.
    /// - Throws: ``CacheError/Code/cancelled`` when the task is cancelled before the disk is
    ///   read, or what the synchronous call throws.
    public func value(forKey key: String, from tiers: CacheTiers = .all) async throws(CacheError) -> Data? {
        if tiers.contains(.memory) {
            if followsFolder { followFolder() }
            if let hit = memory.value(forKey: key, countingMiss: true, countingOwnerHit: true) { return hit }
        }
        return try await disk.ioQueue.runBlocking(key: key) { () throws(CacheError) in
            try self.valueAfterMemoryMiss(forKey: key, from: tiers)
        }
    }

    /// Stores `data` under `key`; see ``store(_:forKey:in:expiry:locked:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func store(
        _ data: Data, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false
    ) async throws(CacheError) {
        try await disk.ioQueue.runBlocking(.write, key: key) { () throws(CacheError) in
            try self.store(data, forKey: key, in: tiers, expiry: expiry, locked: locked)
        }
    }

    /// Removes `key` from every tier; see ``remove(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func remove(forKey key: String) async throws(CacheError) -> Bool {
        try await disk.ioQueue.runBlocking(.delete, key: key) { () throws(CacheError) in try self.remove(forKey: key) }
    }

    /// Removes the keys in `keys` from every tier; see ``remove(forKeys:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func remove(forKeys keys: [String]) async throws(CacheError) -> [String] {
        try await disk.ioQueue.runBlocking(.delete, key: keys.first) { () throws(CacheError) in try self.remove(forKeys: keys) }
    }

    /// Removes every entry from every tier; see ``removeAll()``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    /// - Complexity: O(*n*) in the entries of both tiers.
    public func removeAll() async throws(CacheError) {
        try await disk.ioQueue.runBlocking(.delete, key: nil) { () throws(CacheError) in try self.removeAll() }
    }

    /// Records a use of `key`; see ``touch(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func touch(forKey key: String) async throws(CacheError) -> Bool {
        try await disk.ioQueue.runBlocking(.write, key: key) { () throws(CacheError) in try self.touch(forKey: key) }
    }

    /// Locks the entries under `keys`; see ``lock(forKeys:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func lock(forKeys keys: [String]) async throws(CacheError) -> [String] {
        try await disk.ioQueue.runBlocking(.write, key: keys.first) { () throws(CacheError) in try self.lock(forKeys: keys) }
    }

    /// Unlocks the entries under `keys`; see ``unlock(forKeys:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func unlock(forKeys keys: [String]) async throws(CacheError) -> [String] {
        try await disk.ioQueue.runBlocking(.delete, key: keys.first) { () throws(CacheError) in try self.unlock(forKeys: keys) }
    }

    /// The keys of every entry whose key starts with `prefix`, gathered on the disk's own queue;
    /// see ``keys(withPrefix:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    /// - Complexity: O(*n*) in the entries of both tiers.
    public func keys(withPrefix prefix: String = "") async throws(CacheError) -> [String] {
        try await disk.ioQueue.runBlocking(key: nil) { () throws(CacheError) in try self.keys(withPrefix: prefix) }
    }

    /// Runs one collection of both tiers, the disk's on its own queue; see ``collectGarbage()``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func collectGarbage() async throws(CacheError) -> CollectionReport {
        try await disk.ioQueue.runBlocking(.collection, key: nil) { () throws(CacheError) in try self.collectGarbage() }
    }

    /// Writes the disk tier's access times and index snapshot on its own queue; see `flush()`.
    /// - Returns: `true` when the snapshot was written, `false` when a change in flight made the
    ///   flush skip it.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func flush() async throws(CacheError) -> Bool {
        try await disk.flush()
    }

    /// Encodes `value` on the calling task, then stores it; see ``store(_:forKey:in:expiry:locked:coder:)``.
    /// - Throws: ``CacheError/Code/encodingFailed``, ``CacheError/Code/cancelled``, or what the store throws.
    public func store<T: Encodable>(
        _ value: T, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false,
        coder: CacheCoder? = nil
    ) async throws(CacheError) {
        try await store((coder ?? self.coder).encoded(value, key: key), forKey: key, in: tiers, expiry: expiry, locked: locked)
    }

    /// Reads the bytes, then decodes them on the calling task; see ``value(_:forKey:from:coder:)``.
    /// - Throws: ``CacheError/Code/decodingFailed``, ``CacheError/Code/cancelled``, or what the read throws.
    public func value<T: Decodable>(
        _ type: T.Type, forKey key: String, from tiers: CacheTiers = .all, coder: CacheCoder? = nil
    ) async throws(CacheError) -> T? {
        guard let data = try await value(forKey: key, from: tiers) else { return nil }
        return try (coder ?? self.coder).decoded(type, from: data, key: key)
    }
}
