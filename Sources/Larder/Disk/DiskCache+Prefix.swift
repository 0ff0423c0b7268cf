import Dispatch

// Bulk invalidation: removing every record whose key starts with a prefix (one user's entries,
// one feed's pages). The index knows every stored key (the file name under `.verbatim`, the key
// stored in the record under `.sha256` and custom encodings), so the matches come from it and no
// file is read; each match then goes through the per-record removal path of `remove(forKey:)`,
// under its key lock, so that the index, the statistics and the snapshot stay in step.
extension DiskCache {
    /// A record the index holds whose key starts with a prefix.
    struct PrefixMatch: Sendable {
        /// The record's file name.
        var name: String
        /// Its key; `nil` for a record that does not store one (an SPT record under a hashed encoding).
        var key: String?
    }

    /// Removes every record whose key starts with `prefix`, expired or not.
    ///
    /// The keys are the ones `keys(withPrefix:)` matches: each record's key, or for a record
    /// that does not store its key (an SPT record under a hashed encoding), its file name. An empty
    /// prefix removes every record. Waits for the index. A record stored while the call runs may
    /// stay; one stored before it began does not.
    /// - Parameter prefix: The start of the keys to remove.
    /// - Returns: The keys of the live records removed, least recently used first (expired ones
    ///   are removed too, but not listed, as `remove(forKey:)` does not count them).
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/closed``,
    ///   ``CacheError/Code/ioFailure`` (the records before the failing one are removed).
    /// - Complexity: O(*n*) in the records of the index, plus one file removal per match.
    @discardableResult
    public func remove(withPrefix prefix: String) throws(CacheError) -> [String] {
        var removed: [String] = []
        for match in try records(withPrefix: prefix) {
            try checkOpen(key: match.key)
            if try removeRecord(named: match.name, key: match.key) { removed.append(match.key ?? match.name) }
        }
        return removed
    }

    /// The records whose key (or, without one, file name) starts with `prefix`, expired or not,
    /// least recently used first. Waits for the index.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/closed``.
    func records(withPrefix prefix: String) throws(CacheError) -> [PrefixMatch] {
        try checkWritable(key: nil)
        waitForIndex()
        // What other writers of the folder stored under the prefix is listed too.
        followFolder()
        return state.withLock { s in
            var matches: [PrefixMatch] = []
            s.index.forEachLeastRecentFirst { entry in
                if (entry.key ?? entry.name).hasPrefix(prefix) { matches.append(PrefixMatch(name: entry.name, key: entry.key)) }
                return true
            }
            return matches
        }
    }

    /// Removes every record whose key starts with `prefix` on the cache's own queue; see
    /// `remove(withPrefix:)`.
    /// - Throws: ``CacheError/Code/cancelled``, or what the synchronous call throws.
    /// - Complexity: O(*n*) in the records of the index, plus one file removal per match.
    @discardableResult
    public func remove(withPrefix prefix: String) async throws(CacheError) -> [String] {
        try await ioQueue.runBlocking(.delete, key: nil) { () throws(CacheError) in try self.remove(withPrefix: prefix) }
    }

    /// Removes every record whose key starts with `prefix` in the background, then reports
    /// `.success(removedKeys)` or `.failure` on `queue`; see `remove(withPrefix:)`.
    public func remove(withPrefix prefix: String, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<[String]>) {
        ioQueue.runBlocking(
            .delete, deliveringOn: queue, { () throws(CacheError) in try self.remove(withPrefix: prefix) }, completion: completion)
    }
}
