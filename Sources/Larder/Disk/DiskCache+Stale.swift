import Foundation

// Stale reads, for the hybrid's stale-while-revalidate and stale-if-error: the payload of a
// record that expired a short while ago. `record(forKey:)` treats such a record as a miss, and
// leaves it in place while it expired less than the stale retention ago (else removes it); this
// read returns it as it is, without counting it as a use (a use would slide a default-expiry
// record's anchor and make it fresh again) and without removing it.
extension DiskCache {
    /// Seconds an expired, unlocked record stays on disk for stale reads: a read within it is a
    /// miss that leaves the record, and a collection removes an expired record only once it has
    /// been expired this long. ``DiskCacheOptions/staleRetention``, or more when a
    /// ``HybridCache`` in front of this cache has a longer stale window (its longest window,
    /// ``StaleWindows/whileRevalidate`` or ``StaleWindows/ifError``).
    public var staleRetention: TimeInterval { state.withLock { $0.staleRetention } }

    /// Raises ``staleRetention`` to `seconds` when it is lower; never lowers it (a cache may
    /// have several hybrids in front, each relying on its own windows).
    func retainStale(for seconds: TimeInterval) {
        guard seconds.isFinite, seconds > 0 else { return }
        state.withLock { s in s.staleRetention = max(s.staleRetention, seconds) }
    }

    /// Whether an expired, unlocked record with these fields stays for stale reads at `now`:
    /// it expired less than `retention` seconds ago, as ``staleRecord(forKey:within:)`` measures
    /// it, so that a read keeps every record a stale read within `retention` may return.
    func isRetained(ttl: UInt64, anchor: UInt64, now: Double, retention: Double) -> Bool {
        guard retention > 0 else { return false }
        return now - (Double(anchor) + expiryRule.threshold(ttl: ttl)) < retention
    }

    /// The record stored under `key` if it has expired less than `window` seconds ago (measured
    /// from its ``CacheRecord/expirationTime``), read without a use and left in place.
    ///
    /// Answers `nil` when the record is absent, live (locked records never expire), corrupt, or
    /// expired longer ago; `record(forKey:)` then serves, reports or removes it as usual. Counted
    /// as a miss, with its bytes read. Expects no key lock of this cache held.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``.
    func staleRecord(forKey key: String, within window: Double) throws(CacheError) -> CacheRecord? {
        guard window > 0 else { return nil }
        try checkOpen(key: key)
        let now = options.clock.now
        let ownsDirectory = !options.isReadOnly
        // The index answers most cases without a read: live, long expired, or absent.
        let known: (name: String?, isCandidate: Bool) = state.withLock { s in
            if let slot = s.index.slot(forKey: key) {
                let entry = s.index[slot: slot]
                return (entry.name, isExpired(entry, now: now) && isWithin(window, entry: entry, now: now))
            }
            return (nil, !(ownsDirectory && s.knowsEveryKey))
        }
        guard known.isCandidate else { return nil }
        let name: String
        if let indexed = known.name { name = indexed } else { name = try options.keyEncoding.fileName(for: key) }
        let path = layout.path(for: name)
        return try withKeyLock(name) { () throws(CacheError) -> CacheRecord? in
            let result: RecordReadResult
            do throws(Errno) {
                result = try records.read(path, verifyPayload: options.verifiesPayloadChecksum, expectedKey: key)
            } catch {
                throw CacheError(.ioFailure, "cannot read the record", key: key, path: path, errno: error.rawValue)
            }
            // Missing and corrupt records are the ordinary read's to report.
            guard case .record(let contents) = result else { return nil }
            let header = contents.header
            let anchor = anchor(of: header, name: name)
            guard expiryRule.isExpired(lockCount: header.refCount, ttl: header.ttl, anchor: anchor, now: now),
                let expiration = expiryRule.expirationTime(lockCount: header.refCount, ttl: header.ttl, anchor: anchor),
                now - expiration < window
            else { return nil }
            state.withLock { s in
                s.counters.misses += 1
                s.counters.bytesRead += Int(header.payloadSizeBytes)
            }
            let lastAccess = header.lastAccessMilliseconds.map { Double($0) / 1000 } ?? Double(header.updateTimeSec)
            return CacheRecord(
                key: key, data: contents.payload ?? Data(), expiry: header.ttl == 0 ? .default : .seconds(TimeInterval(header.ttl)),
                lockCount: Int(header.refCount), updateTime: Double(anchor), lastAccessTime: lastAccess, expirationTime: expiration)
        }
    }

    /// Whether an indexed record's expiry lies less than `window` seconds before `now`.
    private func isWithin(_ window: Double, entry: IndexEntry, now: Double) -> Bool {
        guard let expiration = expiryRule.expirationTime(lockCount: entry.lockCount, ttl: entry.ttl, anchor: entry.updateTime) else {
            return false
        }
        return now - expiration < window
    }
}
