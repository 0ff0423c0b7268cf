import Dispatch
import Foundation

// SPTPersistentCache's `loadDataForKeysWithPrefix:chooseKeyCallback:withCallback:onQueue:`: offer
// the live keys under a prefix to a chooser, and load the one it picks, in one call.
extension DiskCache {
    /// Loads one of the records whose keys start with `prefix`, chosen by `choosingKey` from the
    /// keys of the live ones (expired records are never offered, nor records a load would reject
    /// as corrupt; locked records never expire),
    /// least recently used first (SPTPersistentCache's `loadDataForKeysWithPrefix:chooseKeyCallback:`).
    ///
    /// ```swift
    /// // The largest cached rendition of an image, whatever its size suffix.
    /// let record = try cache.record(forKeyWithPrefix: "cover-42@") { keys in keys.max() }
    /// ```
    /// - Parameters:
    ///   - prefix: The prefix the keys share.
    ///   - choosingKey: Called once, on the calling thread, with the candidate keys (never an
    ///     empty list: with no candidate the call returns `nil` without calling it); returns the
    ///     key to load, or `nil` for none.
    /// - Returns: The chosen key's record, as `record(forKey:)` returns it (a use of that
    ///   record), or `nil` when no live key has the prefix, the chooser returned `nil`, or the
    ///   chosen record is gone by the time it is loaded.
    /// - Throws: What `keys(withPrefix:includingExpired:)` and `record(forKey:)` throw.
    public func record(forKeyWithPrefix prefix: String, choosingKey: ([String]) -> String?) throws(CacheError) -> CacheRecord? {
        let candidates = try offerable(try keys(withPrefix: prefix))
        guard !candidates.isEmpty, let chosen = choosingKey(candidates) else { return nil }
        return try record(forKey: chosen)
    }

    /// The keys of `keys` a load would not reject: those whose headers this process has read or
    /// written, and the others once their header has been read now and found sound and live
    /// (SPT reads every header before it offers a key). An index built from a snapshot trusts
    /// its entries without reading them, and a file may have been damaged since the snapshot;
    /// a corrupt one met here is removed and reported as a load would.
    private func offerable(_ keys: [String]) throws(CacheError) -> [String] {
        var events: [CacheEvent] = []
        defer { emit(events) }
        let now = options.clock.now
        var result: [String] = []
        result.reserveCapacity(keys.count)
        for key in keys {
            guard let name = try? options.keyEncoding.fileName(for: key) else { continue }
            if holdsVerifiedHeader(name) {
                result.append(key)
                continue
            }
            let live = try withKeyLock(name) { () throws(CacheError) -> Bool in
                let path = layout.path(for: name)
                guard let contents = try _readValidHeader(name: name, key: key, path: path, events: &events) else { return false }
                return !isExpired(contents.header, name: name, now: now)
            }
            if live { result.append(key) }
        }
        return result
    }

    /// Loads one of the records whose keys start with `prefix`, chosen by `choosingKey`, on the
    /// cache's own queue; see `record(forKeyWithPrefix:choosingKey:)`. The chooser runs there.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    public func record(
        forKeyWithPrefix prefix: String, choosingKey: @escaping @Sendable ([String]) -> String?
    ) async throws(CacheError) -> CacheRecord? {
        try await ioQueue.runBlocking(.read, key: prefix) { () throws(CacheError) in
            try self.record(forKeyWithPrefix: prefix, choosingKey: choosingKey)
        }
    }

    /// Loads one of the records whose keys start with `prefix`, chosen by `choosingKey`, in the
    /// background, then reports `.success(record)`, `.notFound` or `.failure` on `queue`
    /// (SPT's `loadDataForKeysWithPrefix:chooseKeyCallback:withCallback:onQueue:`). The chooser
    /// runs on the cache's own queue.
    public func record(
        forKeyWithPrefix prefix: String, choosingKey: @escaping @Sendable ([String]) -> String?,
        queue: DispatchQueue = .main, completion: @escaping CacheCompletion<CacheRecord>
    ) {
        ioQueue.runBlocking(
            .read, deliveringOn: queue,
            { () throws(CacheError) in try self.record(forKeyWithPrefix: prefix, choosingKey: choosingKey) },
            completion: completion)
    }
}
