import Dispatch
import Foundation

// SPTPersistentCache's shape, for code migrating from it: each call is named after its
// synchronous twin, runs it on ``DiskCache/ioQueue`` and delivers a ``CacheResponse`` on the
// queue given (the main queue by default), through `runBlocking(deliveringOn:_:completion:)`.
// Each delivers what its synchronous twin returns: a load's `nil` as `.notFound`, anything else
// as `.success`.
extension DiskCache {
    /// Stores `data` under `key` in the background, then reports `.success(())` or `.failure`
    /// on `queue` (SPT's `storeData:forKey:ttl:locked:withCallback:onQueue:`).
    public func store(
        _ data: Data, forKey key: String, expiry: Expiry = .default, locked: Bool = false,
        queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Void>
    ) {
        ioQueue.runBlocking(
            .write,
            deliveringOn: queue, { () throws(CacheError) in try self.store(data, forKey: key, expiry: expiry, locked: locked) },
            completion: completion)
    }

    /// Reads the payload under `key` in the background, then reports `.success(data)`,
    /// `.notFound` or `.failure` on `queue`; see `value(forKey:)`.
    public func value(forKey key: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Data>) {
        ioQueue.runBlocking(deliveringOn: queue, { () throws(CacheError) in try self.value(forKey: key) }, completion: completion)
    }

    /// Reads the record under `key` in the background, then reports `.success(record)`,
    /// `.notFound` or `.failure` on `queue` (SPT's `loadDataForKey:withCallback:onQueue:`).
    public func record(forKey key: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<CacheRecord>) {
        ioQueue.runBlocking(deliveringOn: queue, { () throws(CacheError) in try self.record(forKey: key) }, completion: completion)
    }

    /// Records a use of `key` in the background, then reports `.success(true)`, `.success(false)`
    /// (no live record was there; SPT's `touchDataForKey:callback:onQueue:` reports NotFound) or
    /// `.failure` on `queue`; see `touch(forKey:)`.
    public func touch(forKey key: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Bool>) {
        ioQueue.runBlocking(.write, deliveringOn: queue, { () throws(CacheError) in try self.touch(forKey: key) }, completion: completion)
    }

    /// Removes the record under `key` in the background, then reports `.success(true)`,
    /// `.success(false)` (nothing was there) or `.failure` on `queue`; see `remove(forKey:)`.
    public func remove(forKey key: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Bool>) {
        ioQueue.runBlocking(.delete, deliveringOn: queue, { () throws(CacheError) in try self.remove(forKey: key) }, completion: completion)
    }

    /// Removes the records under `keys` in the background, then reports `.success(removedKeys)`
    /// or `.failure` on `queue` (SPT's `removeDataForKeys:callback:onQueue:`).
    public func remove(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.remove(forKeys: keys) }, completion: completion)
    }

    /// Locks the records under `keys` in the background, then reports `.success(lockedKeys)` or
    /// `.failure` on `queue` (SPT's `lockDataForKeys:callback:onQueue:`).
    public func lock(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        ioQueue.runBlocking(.write, deliveringOn: queue, { () throws(CacheError) in try self.lock(forKeys: keys) }, completion: completion)
    }

    /// Unlocks the records under `keys` in the background, then reports `.success(unlockedKeys)`
    /// or `.failure` on `queue` (SPT's `unlockDataForKeys:callback:onQueue:`).
    public func unlock(forKeys keys: [String], queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.unlock(forKeys: keys) }, completion: completion)
    }

    /// Gathers the keys starting with `prefix` in the background, then reports `.success(keys)` or
    /// `.failure` on `queue`; see `keys(withPrefix:includingExpired:)`.
    public func keys(
        withPrefix prefix: String = "", includingExpired: Bool = false, queue: DispatchQueue = .main,
        completion: @escaping CacheCompletion<[String]>
    ) {
        ioQueue.runBlocking(
            deliveringOn: queue, { () throws(CacheError) in try self.keys(withPrefix: prefix, includingExpired: includingExpired) },
            completion: completion)
    }

    /// Removes every record in the background, then reports on `queue` (SPT's `prune`).
    public func removeAll(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Void>) {
        ioQueue.runBlocking(.delete, deliveringOn: queue, { () throws(CacheError) in try self.removeAll() }, completion: completion)
    }

    /// Removes every unlocked record in the background, then reports on `queue` (SPT's `wipeNonLockedFiles`).
    public func removeAllUnlocked(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Void>) {
        ioQueue.runBlocking(.delete, deliveringOn: queue, { () throws(CacheError) in try self.removeAllUnlocked() }, completion: completion)
    }

    /// Removes every locked record in the background, then reports on `queue` (SPT's `wipeLockedFiles`).
    public func removeAllLocked(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Void>) {
        ioQueue.runBlocking(.delete, deliveringOn: queue, { () throws(CacheError) in try self.removeAllLocked() }, completion: completion)
    }

    /// Writes access times and the index snapshot in the background (see `flush()`), then
    /// reports `.success(written)` (whether the snapshot was written) or `.failure` on `queue`.
    public func flush(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<Bool>) {
        ioQueue.runBlocking(.write, deliveringOn: queue, { () throws(CacheError) in try self.flush() }, completion: completion)
    }

    /// Runs one collection in the background, then reports `.success(report)` or `.failure` on
    /// `queue` (SPT's `runGarbageCollector`).
    public func collectGarbage(queue: DispatchQueue = .main, completion: @escaping CacheCompletion<CollectionReport>) {
        ioQueue.runBlocking(
            .collection, deliveringOn: queue, { () throws(CacheError) in try self.collectGarbage() }, completion: completion)
    }
}
