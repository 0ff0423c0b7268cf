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
        if tiers.contains(.memory), let hit = memory.value(forKey: key) { return hit }
        return try await valueAfterMemoryMiss(forKey: key, from: tiers)
    }

    /// The disk and remote part of the `async` ``value(forKey:from:)``, on the disk's queue.
    @usableFromInline
    func valueAfterMemoryMiss(forKey key: String, from tiers: CacheTiers) async throws(CacheError) -> Value? {
        try await cache.disk.ioQueue.runBlocking(key: key) { () throws(CacheError) in
            try self.valueAfterMemoryMiss(forKey: key, from: tiers)
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
