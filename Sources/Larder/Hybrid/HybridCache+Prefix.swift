import Dispatch
import Foundation

// Bulk invalidation across the tiers: every entry whose key starts with a prefix, removed from
// memory and disk under each key's lock, as `remove(forKey:)` removes one.
extension HybridCache {
    /// Removes every entry whose key starts with `prefix` from every tier, expired or not: the
    /// disk records the index holds (see `DiskCache.remove(withPrefix:)`), and the keys held only
    /// in memory. An empty prefix removes every entry.
    ///
    /// ```swift
    /// try cache.remove(withPrefix: "user/42/")   // one user's entries, in both tiers
    /// ```
    ///
    /// Each key goes under its key lock, so no read of it promotes the old value to memory again
    /// once it is removed. An entry stored while the call runs may stay; one stored before it
    /// began does not. Loads in flight are not interrupted: one that ends after the call stores
    /// its value. Read-through preloaded entries are not hidden (as with `remove(forKey:)`).
    /// - Parameter prefix: The start of the keys to remove.
    /// - Returns: The keys that either tier held a live value for, the disk's least recently used
    ///   first, then those held only in memory.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/closed``,
    ///   ``CacheError/Code/ioFailure`` (the keys before the failing one are removed).
    /// - Complexity: O(*n*) in the entries of both tiers, plus one file removal per match on disk.
    @discardableResult
    public func remove(withPrefix prefix: String) throws(CacheError) -> [String] {
        // With a remote tier, the remote copies go and one prefix invalidation is published after
        // the local tiers have dropped theirs; `removeLocally` is what a received invalidation runs.
        guard let remote else { return try removeLocally(withPrefix: prefix) }
        remote.generations.begin(nil)
        defer { remote.remove(withPrefix: prefix) }
        return try removeLocally(withPrefix: prefix)
    }

    /// Removes every entry whose key starts with `prefix` from this process's tiers.
    func removeLocally(withPrefix prefix: String) throws(CacheError) -> [String] {
        var removed: [String] = []
        var onDisk = Set<String>()
        for match in try disk.records(withPrefix: prefix) {
            try disk.checkOpen(key: match.key)
            guard let key = match.key else {
                // A record that does not store its key cannot be in memory under it.
                if try disk.removeRecord(named: match.name, key: nil) { removed.append(match.name) }
                continue
            }
            onDisk.insert(key)
            let wasLive = try keyLocks.withLock(forKey: key) { () throws(CacheError) -> Bool in
                let inMemory = memory.remove(forKey: key)
                typedMemories.remove(forKey: key)
                return try disk.removeRecord(named: match.name, key: key) || inMemory
            }
            if wasLive { removed.append(key) }
        }
        for key in memory.keys() where key.hasPrefix(prefix) && !onDisk.contains(key) {
            if keyLocks.withLock(forKey: key, { memory.remove(forKey: key) }) { removed.append(key) }
        }
        // Typed copies of keys the disk no longer holds (their disk records went first).
        for key in typedMemories.keys(withPrefix: prefix) where !onDisk.contains(key) {
            _ = keyLocks.withLock(forKey: key) { typedMemories.remove(forKey: key) }
        }
        return removed
    }

    /// Removes every entry whose key starts with `prefix`, on the disk's queue; see `remove(withPrefix:)`.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    /// - Complexity: O(*n*) in the entries of both tiers, plus one file removal per match on disk.
    @discardableResult
    public func remove(withPrefix prefix: String) async throws(CacheError) -> [String] {
        try await disk.ioQueue.runBlocking(.delete, key: nil) { () throws(CacheError) in try self.remove(withPrefix: prefix) }
    }

    /// Removes every entry whose key starts with `prefix` in the background, then reports
    /// `.success(removedKeys)` or `.failure` on `queue`; see `remove(withPrefix:)`.
    public func remove(withPrefix prefix: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        disk.ioQueue.runBlocking(
            .delete,
            deliveringOn: queue, { () throws(CacheError) in try self.remove(withPrefix: prefix) }, completion: completion)
    }
}
