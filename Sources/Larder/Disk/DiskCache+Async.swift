import Foundation

// The `async` twins of the throwing calls, named after them. Each runs its synchronous twin on
// ``DiskCache/ioQueue`` through `runBlocking(key:_:)`, so blocking file work never occupies the
// cooperative pool, and a task cancelled before the work starts gets
// ``CacheError/Code/cancelled`` with nothing done.
extension DiskCache {
    /// Stores `data` under `key` on the cache's own queue; see ``store(_:forKey:expiry:locked:)``.
    /// - Throws: ``CacheError/Code/cancelled`` when the task is cancelled before the store starts,
    ///   or what the synchronous call throws.
    public func store(_ data: Data, forKey key: String, expiry: Expiry = .default, locked: Bool = false) async throws(CacheError) {
        try await ioQueue.runBlocking(.write, key: key) { () throws(CacheError) in
            try self.store(data, forKey: key, expiry: expiry, locked: locked)
        }
    }

    /// Returns the payload under `key`, read on the cache's own queue; see ``value(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func value(forKey key: String) async throws(CacheError) -> Data? {
        try await ioQueue.runBlocking(key: key) { () throws(CacheError) in try self.value(forKey: key) }
    }

    /// Returns the record under `key`, read on the cache's own queue; see ``record(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func record(forKey key: String) async throws(CacheError) -> CacheRecord? {
        try await ioQueue.runBlocking(key: key) { () throws(CacheError) in try self.record(forKey: key) }
    }

    /// Records a use of `key` on the cache's own queue; see ``touch(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func touch(forKey key: String) async throws(CacheError) -> Bool {
        try await ioQueue.runBlocking(.write, key: key) { () throws(CacheError) in try self.touch(forKey: key) }
    }

    /// Removes the record under `key` on the cache's own queue; see ``remove(forKey:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func remove(forKey key: String) async throws(CacheError) -> Bool {
        try await ioQueue.runBlocking(.delete, key: key) { () throws(CacheError) in try self.remove(forKey: key) }
    }

    /// Removes the records under `keys` on the cache's own queue; see ``remove(forKeys:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func remove(forKeys keys: [String]) async throws(CacheError) -> [String] {
        try await ioQueue.runBlocking(.delete, key: keys.first) { () throws(CacheError) in try self.remove(forKeys: keys) }
    }

    /// Locks the records under `keys` on the cache's own queue; see ``lock(forKeys:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func lock(forKeys keys: [String]) async throws(CacheError) -> [String] {
        try await ioQueue.runBlocking(.write, key: keys.first) { () throws(CacheError) in try self.lock(forKeys: keys) }
    }

    /// Unlocks the records under `keys` on the cache's own queue; see ``unlock(forKeys:)``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func unlock(forKeys keys: [String]) async throws(CacheError) -> [String] {
        try await ioQueue.runBlocking(.delete, key: keys.first) { () throws(CacheError) in try self.unlock(forKeys: keys) }
    }

    /// The keys starting with `prefix`, gathered on the cache's own queue; see
    /// `keys(withPrefix:includingExpired:)`.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    /// - Complexity: O(*n*) in the number of records.
    public func keys(withPrefix prefix: String = "", includingExpired: Bool = false) async throws(CacheError) -> [String] {
        try await ioQueue.runBlocking(key: nil) { () throws(CacheError) in
            try self.keys(withPrefix: prefix, includingExpired: includingExpired)
        }
    }

    /// Runs one collection on the cache's own queue; see ``collectGarbage()``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func collectGarbage() async throws(CacheError) -> CollectionReport {
        try await ioQueue.runBlocking(.collection, key: nil) { () throws(CacheError) in try self.collectGarbage() }
    }

    /// Writes access times and the index snapshot on the cache's own queue; see `flush()`.
    /// - Returns: `true` when the snapshot was written, `false` when a change in flight made the
    ///   flush skip it.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    @discardableResult
    public func flush() async throws(CacheError) -> Bool {
        try await ioQueue.runBlocking(.write, key: nil) { () throws(CacheError) in try self.flush() }
    }

    /// Removes every record on the cache's own queue; see ``removeAll()``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func removeAll() async throws(CacheError) {
        try await ioQueue.runBlocking(.delete, key: nil) { () throws(CacheError) in try self.removeAll() }
    }

    /// Removes every unlocked record on the cache's own queue; see ``removeAllUnlocked()``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func removeAllUnlocked() async throws(CacheError) {
        try await ioQueue.runBlocking(.delete, key: nil) { () throws(CacheError) in try self.removeAllUnlocked() }
    }

    /// Removes every locked record on the cache's own queue; see ``removeAllLocked()``.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func removeAllLocked() async throws(CacheError) {
        try await ioQueue.runBlocking(.delete, key: nil) { () throws(CacheError) in try self.removeAllLocked() }
    }

    /// Encodes `value` on the calling task, then stores the bytes on the cache's own queue; see
    /// ``store(_:forKey:expiry:locked:coder:)``.
    /// - Throws: ``CacheError/Code/encodingFailed``, ``CacheError/Code/cancelled``, or what the store throws.
    public func store<T: Encodable>(
        _ value: T, forKey key: String, expiry: Expiry = .default, locked: Bool = false, coder: CacheCoder = .json
    ) async throws(CacheError) {
        try await store(coder.encoded(value, key: key), forKey: key, expiry: expiry, locked: locked)
    }

    /// Reads the record on the cache's own queue, then decodes it on the calling task; see
    /// ``value(_:forKey:coder:)``.
    /// - Throws: ``CacheError/Code/decodingFailed``, ``CacheError/Code/cancelled``, or what the read throws.
    public func value<T: Decodable>(_ type: T.Type, forKey key: String, coder: CacheCoder = .json) async throws(CacheError) -> T? {
        guard let data = try await value(forKey: key) else { return nil }
        return try coder.decoded(type, from: data, key: key)
    }
}
