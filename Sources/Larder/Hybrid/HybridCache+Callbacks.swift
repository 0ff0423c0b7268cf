import Dispatch
import Foundation

// SPTPersistentCache's shape, for code migrating from it: each call is named after its
// synchronous twin, runs it on the disk's ``DiskCache/ioQueue`` and delivers a ``CacheResponse``
// on the queue given (the main queue by default), through
// `runBlocking(deliveringOn:_:completion:)`: the same core, not a second implementation.
// Each delivers what its synchronous twin returns: a load's `nil` as `.notFound`, anything else
// as `.success`.
extension HybridCache {
    /// Stores `data` under `key` in the background, then reports `.success(())` or `.failure` on
    /// `queue`; see `store(_:forKey:in:expiry:locked:)`.
    public func store(
        _ data: Data, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false,
        queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Void>
    ) {
        disk.ioQueue.runBlocking(
            .write,
            deliveringOn: queue, { () throws(CacheError) in try self.store(data, forKey: key, in: tiers, expiry: expiry, locked: locked) },
            completion: completion)
    }

    /// Reads the payload under `key` in the background, then reports `.success(data)`,
    /// `.notFound` or `.failure` on `queue`; see `value(forKey:from:)`.
    public func value(
        forKey key: String, from tiers: CacheTiers = .all, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Data>
    ) {
        disk.ioQueue.runBlocking(
            deliveringOn: queue, { () throws(CacheError) in try self.value(forKey: key, from: tiers) }, completion: completion)
    }

    /// Gathers the keys starting with `prefix` in the background, then reports `.success(keys)` or
    /// `.failure` on `queue`; see `keys(withPrefix:)`.
    public func keys(withPrefix prefix: String = "", queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        disk.ioQueue.runBlocking(
            deliveringOn: queue, { () throws(CacheError) in try self.keys(withPrefix: prefix) }, completion: completion)
    }

    /// Runs one collection of both tiers in the background, then reports `.success(report)` or
    /// `.failure` on `queue`; see `collectGarbage()`.
    public func collectGarbage(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<CollectionReport>) {
        disk.ioQueue.runBlocking(
            .collection, deliveringOn: queue, { () throws(CacheError) in try self.collectGarbage() }, completion: completion)
    }

    /// Writes the disk tier's access times and index snapshot in the background, then reports
    /// `.success(written)` (whether the snapshot was written) or `.failure` on `queue`; see `flush()`.
    public func flush(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Bool>) {
        disk.flush(queue: queue, completion: completion)
    }

    /// Removes `key` from every tier in the background, then reports `.success(true)`,
    /// `.success(false)` (no tier held it) or `.failure` on `queue`; see `remove(forKey:)`.
    public func remove(forKey key: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Bool>) {
        disk.ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.remove(forKey: key) }, completion: completion)
    }

    /// Removes the keys in `keys` from every tier in the background, then reports
    /// `.success(removedKeys)` or `.failure` on `queue`; see `remove(forKeys:)`.
    public func remove(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        disk.ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.remove(forKeys: keys) }, completion: completion)
    }

    /// Removes every entry in the background, then reports on `queue`; see `removeAll()`.
    public func removeAll(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Void>) {
        disk.ioQueue.runBlocking(.delete, deliveringOn: queue, { () throws(CacheError) in try self.removeAll() }, completion: completion)
    }

    /// Records a use of `key` in the background, then reports `.success(true)`, `.success(false)`
    /// (no live entry was there) or `.failure` on `queue`; see `touch(forKey:)`.
    public func touch(forKey key: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Bool>) {
        disk.ioQueue.runBlocking(
            .write, deliveringOn: queue, { () throws(CacheError) in try self.touch(forKey: key) }, completion: completion)
    }

    /// Locks the entries under `keys` in the background, then reports `.success(lockedKeys)` on
    /// `queue`; see `lock(forKeys:)`.
    public func lock(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        disk.ioQueue.runBlocking(
            .write, deliveringOn: queue, { () throws(CacheError) in try self.lock(forKeys: keys) }, completion: completion)
    }

    /// Unlocks the entries under `keys` in the background, then reports `.success(unlockedKeys)`
    /// on `queue`; see `unlock(forKeys:)`.
    public func unlock(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        disk.ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.unlock(forKeys: keys) }, completion: completion)
    }

    /// Reads and decodes the value under `key` in the background, then reports `.success(value)`,
    /// `.notFound` or `.failure` on `queue`; see `value(_:forKey:from:coder:)`.
    public func value<T: Decodable & Sendable>(
        _ type: T.Type, forKey key: String, from tiers: CacheTiers = .all, coder: CacheCoder? = nil,
        queue: DispatchQueue = .main, completion: @escaping CacheCompletion<T>
    ) {
        disk.ioQueue.runBlocking(
            deliveringOn: queue, { () throws(CacheError) in try self.value(type, forKey: key, from: tiers, coder: coder) },
            completion: completion)
    }
}
