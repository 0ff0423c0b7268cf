import Dispatch
import Foundation

// SPTPersistentCache's shape, for code migrating from it: each call is named after its
// synchronous twin, runs it on the disk's ``DiskCache/ioQueue`` and delivers a ``CacheResponse``
// on the queue given (the main queue by default), through
// `runBlocking(deliveringOn:_:completion:)`: the same core, not a second implementation.
extension HybridCache {
    /// A callback receiving a call's outcome.
    public typealias Completion<Value: Sendable> = @Sendable (CacheResponse<Value>) -> Void

    /// Stores `data` under `key` in the background, then reports `.success(())` or `.failure` on
    /// `queue`; see `store(_:forKey:in:expiry:locked:)`.
    public func store(
        _ data: Data, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false,
        queue: DispatchQueue = .main, completion: @escaping Completion<Void>
    ) {
        disk.ioQueue.runBlocking(
            .write,
            deliveringOn: queue, { () throws(CacheError) in try self.store(data, forKey: key, in: tiers, expiry: expiry, locked: locked) },
            completion: completion)
    }

    /// Reads the payload under `key` in the background, then reports `.success(data)`,
    /// `.notFound` or `.failure` on `queue`; see `value(forKey:from:)`.
    public func value(
        forKey key: String, from tiers: CacheTiers = .all, queue: DispatchQueue = .main, completion: @escaping Completion<Data>
    ) {
        disk.ioQueue.runBlocking(
            deliveringOn: queue, { () throws(CacheError) in try self.value(forKey: key, from: tiers) }, completion: completion)
    }

    /// Writes the disk tier's access times and index snapshot in the background, then reports
    /// `.success(written)` (whether the snapshot was written) or `.failure` on `queue`; see `flush()`.
    public func flush(queue: DispatchQueue = .main, completion: @escaping Completion<Bool>) {
        disk.flush(queue: queue, completion: completion)
    }

    /// Removes `key` from every tier in the background, then reports `.success(())`, `.notFound`
    /// (no tier held it) or `.failure` on `queue`; see `remove(forKey:)`.
    public func remove(forKey key: String, queue: DispatchQueue = .main, completion: @escaping Completion<Void>) {
        disk.ioQueue.runBlocking(
            .delete,
            deliveringOn: queue, { () throws(CacheError) in try self.remove(forKey: key) ? () : nil }, completion: completion)
    }

    /// Removes the keys in `keys` from every tier in the background, then reports
    /// `.success(removedKeys)` or `.failure` on `queue`; see `remove(forKeys:)`.
    public func remove(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping Completion<[String]>) {
        disk.ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.remove(forKeys: keys) }, completion: completion)
    }

    /// Removes every entry in the background, then reports on `queue`; see `removeAll()`.
    public func removeAll(queue: DispatchQueue = .main, completion: @escaping Completion<Void>) {
        disk.ioQueue.runBlocking(.delete, deliveringOn: queue, { () throws(CacheError) in try self.removeAll() }, completion: completion)
    }

    /// Records a use of `key` in the background, then reports `.success(())`, `.notFound` or
    /// `.failure` on `queue`; see `touch(forKey:)`.
    public func touch(forKey key: String, queue: DispatchQueue = .main, completion: @escaping Completion<Void>) {
        disk.ioQueue.runBlocking(
            .write,
            deliveringOn: queue, { () throws(CacheError) in try self.touch(forKey: key) ? () : nil }, completion: completion)
    }

    /// Locks the entries under `keys` in the background, then reports `.success(lockedKeys)` on
    /// `queue`; see `lock(forKeys:)`.
    public func lock(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping Completion<[String]>) {
        disk.ioQueue.runBlocking(
            .write, deliveringOn: queue, { () throws(CacheError) in try self.lock(forKeys: keys) }, completion: completion)
    }

    /// Unlocks the entries under `keys` in the background, then reports `.success(unlockedKeys)`
    /// on `queue`; see `unlock(forKeys:)`.
    public func unlock(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping Completion<[String]>) {
        disk.ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.unlock(forKeys: keys) }, completion: completion)
    }

    /// Reads and decodes the value under `key` in the background, then reports `.success(value)`,
    /// `.notFound` or `.failure` on `queue`; see `value(_:forKey:from:coder:)`.
    public func value<T: Decodable & Sendable>(
        _ type: T.Type, forKey key: String, from tiers: CacheTiers = .all, coder: CacheCoder? = nil,
        queue: DispatchQueue = .main, completion: @escaping Completion<T>
    ) {
        disk.ioQueue.runBlocking(
            deliveringOn: queue, { () throws(CacheError) in try self.value(type, forKey: key, from: tiers, coder: coder) },
            completion: completion)
    }
}
