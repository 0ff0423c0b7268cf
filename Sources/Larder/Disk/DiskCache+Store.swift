import Foundation

// A store in three steps, each a plain call: `prepareStore` writes the record to a temporary file
// holding no lock; `commitStore` renames it into place and indexes it under the record's lock;
// `finishStore` syncs its folder (with `.fsync`) and enforces the limits, holding no lock again.
// `store(_:forKey:expiry:locked:)` makes the three calls in a row. `HybridCache` makes them
// itself, with the commit and its memory tiers' change under its own key lock, so that the two
// tiers change together, a read of another key of the same lock stripe never waits for a file
// being written, and nothing the disk does calls back into the hybrid.

/// A record written to a temporary file, not yet in place (``DiskCache/prepareStore(_:forKey:expiry:locked:)``).
/// Committed (``DiskCache/commitStore(_:)``) or discarded (``DiskCache/discardStore(_:)``), once.
struct PendingRecord: Sendable {
    let name: String
    let key: String
    let path: String
    let data: Data
    let keyBytes: [UInt8]
    let header: RecordHeader
    /// The temporary file, a name no other write uses.
    fileprivate(set) var temporaryPath = ""
    fileprivate(set) var fileSize = 0
    /// What making room or making the cache's folder again reported on the way; emitted when
    /// the store ends.
    fileprivate(set) var events: [CacheEvent] = []
}

/// A record in place and indexed, whose store ``DiskCache/finishStore(_:)`` completes.
struct StoredRecord: Sendable {
    let name: String
    /// The key, for errors (`nil` for a record imported under its file name).
    let key: String?
    let path: String
    var events: [CacheEvent]
}

extension DiskCache {
    /// Stores `data` under `key`, replacing any record there.
    /// - Parameters:
    ///   - data: The payload.
    ///   - key: The key.
    ///   - expiry: ``Expiry/default`` (the default) for the cache's
    ///     ``DiskCacheOptions/defaultExpiration``, counted from the last store, read or touch;
    ///     ``Expiry/seconds(_:)`` for a lifetime counted from now whatever the reads (rounded up
    ///     to whole seconds).
    ///   - locked: Whether to store it with a lock count of 1, so that it never expires until unlocked.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/invalidArgument`` for an
    ///   expiry of zero, negative or non-finite seconds, ``CacheError/Code/diskFull`` when the
    ///   volume stays full after the cache freed room, ``CacheError/Code/ioFailure``,
    ///   ``CacheError/Code/readOnly``, ``CacheError/Code/closed``, and
    ///   ``CacheError/Code/invalidArgument`` for a payload larger than
    ///   ``DiskCacheOptions/maximumRecordSize``. A failed store leaves the
    ///   previous record intact, with one exception: with ``Durability/fsync``, when only the
    ///   final sync of the record's folder fails, the new record is already in place (and
    ///   indexed) but may not survive a power loss; the error says so.
    public func store(_ data: Data, forKey key: String, expiry: Expiry = .default, locked: Bool = false) throws(CacheError) {
        try timed(.store, key) { () throws(CacheError) in
            let pending = try prepareStore(data, forKey: key, expiry: expiry, locked: locked)
            try finishStore(commitStore(pending))
        }
    }

    /// The first step of a store: checks the arguments and writes the record to a temporary
    /// file, holding no lock of the cache. Retries once after making room when the volume is
    /// full, or after making the cache's folder again when it was deleted behind its back.
    /// - Throws: What ``store(_:forKey:expiry:locked:)`` throws; nothing is left behind.
    func prepareStore(_ data: Data, forKey key: String, expiry: Expiry, locked: Bool) throws(CacheError) -> PendingRecord {
        try checkWritable(key: key)
        let ttl = try ExpiryRule.headerTTL(for: expiry, key: key)
        guard data.count <= options.maximumRecordSize else {
            throw CacheError(
                .invalidArgument, "the payload (\(data.count) bytes) is larger than maximumRecordSize (\(options.maximumRecordSize))",
                key: key)
        }
        let name = try options.keyEncoding.fileName(for: key)
        let keyBytes = options.keyEncoding.storesKey ? Array(key.utf8) : []
        guard keyBytes.count <= RecordHeader.maximumKeyLength else {
            throw CacheError(.invalidKey, "key is longer than \(RecordHeader.maximumKeyLength) bytes", key: key)
        }
        let now = options.clock.now
        let header = RecordHeader(
            refCount: locked ? 1 : 0, ttl: ttl, updateTimeSec: expiryRule.headerSeconds(now), payloadSizeBytes: UInt64(data.count),
            payloadChecksum: data.withUnsafeBytes { CRC32.checksum($0) }, lastAccessMilliseconds: Self.milliseconds(now),
            storedKey: keyBytes)
        var pending = PendingRecord(name: name, key: key, path: layout.path(for: name), data: data, keyBytes: keyBytes, header: header)
        try writeTemporary(&pending)
        return pending
    }

    /// The second step of a store: renames the prepared file into place and indexes it, under
    /// the record's lock. When the file went with the cache's folder (deleted behind its back)
    /// the folder is made again and the file written again, once.
    /// - Throws: ``CacheError/Code/closed`` when ``close()`` has begun, ``CacheError/Code/ioFailure``,
    ///   ``CacheError/Code/unsafeDirectory``; the previous record is intact, the temporary file
    ///   gone and the events emitted.
    func commitStore(_ pending: PendingRecord) throws(CacheError) -> StoredRecord {
        var pending = pending
        let sync = options.durability == .fsync
        for attempt in 0 ... 1 {
            let admitted: Void?
            do throws(Errno) {
                admitted = try changingRecord(pending.name) { [pending] () throws(Errno) in
                    try records.moveIntoPlace(
                        pending.temporaryPath, path: pending.path, folder: layout.folder(for: pending.name), sync: sync)
                    _indexWrittenRecord(
                        pending.name, key: pending.key, header: pending.header, fileSize: pending.fileSize, payloadBytes: pending.data.count
                    )
                }
            } catch let error where error == .noSuchFileOrDirectory && attempt == 0 {
                _ = try? io.unlink(pending.temporaryPath)
                try writeTemporary(&pending)
                continue
            } catch {
                discardStore(pending)
                throw recordWriteFailure(error, name: pending.name, key: pending.key)
            }
            guard admitted != nil else {
                discardStore(pending)
                throw closedError(key: pending.key)
            }
            return StoredRecord(name: pending.name, key: pending.key, path: pending.path, events: pending.events)
        }
        discardStore(pending)
        throw CacheError(.ioFailure, "cannot write the record", key: pending.key, path: pending.path)
    }

    /// The last step of a store (and of an import): syncs the record's folder with
    /// ``Durability/fsync``, enforces the limits and emits what the store reported.
    /// - Throws: ``CacheError/Code/ioFailure`` when the folder cannot be synced: the record is in
    ///   place but may not survive a power loss.
    func finishStore(_ stored: StoredRecord) throws(CacheError) {
        var events = stored.events
        if options.durability == .fsync {
            do throws(Errno) { try records.syncFolder(layout.folder(for: stored.name)) } catch {
                emit(events)
                throw CacheError(
                    .ioFailure, "the record was stored, but its folder could not be synced, so it may not survive a power loss",
                    key: stored.key, path: stored.path, errno: error.rawValue)
            }
        }
        events += enforceLimits(excluding: stored.name)
        emit(events)
    }

    /// Indexes the record `name` just written with `header` (its file `fileSize` bytes long, with
    /// `payloadBytes` of payload): the commit of a store or an import. Expects the key lock of
    /// `name` held.
    func _indexWrittenRecord(_ name: String, key: String?, header: RecordHeader, fileSize: Int, payloadBytes: Int) {
        let entry = IndexEntry(
            name: name, key: key, diskSize: diskSize(fileSize), fileSize: fileSize, updateTime: header.updateTimeSec,
            lastAccessMs: header.reserved2, ttl: header.ttl, lockCount: header.refCount)
        state.withLock { $0.recordStore(entry, bytes: payloadBytes) }
    }

    /// Ends a prepared store without putting it in place: removes the temporary file and emits
    /// what the store reported.
    func discardStore(_ pending: PendingRecord) {
        _ = try? io.unlink(pending.temporaryPath)
        emit(pending.events)
    }

    /// Writes `pending`'s temporary file (see ``prepareStore(_:forKey:expiry:locked:)``).
    private func writeTemporary(_ pending: inout PendingRecord) throws(CacheError) {
        let temporary = nextTemporaryPath()
        let sync = options.durability == .fsync
        let (header, keyBytes, data) = (pending.header, pending.keyBytes, pending.data)
        let bytesNeeded = diskSize(header.payloadOffset + data.count)
        var events = pending.events
        defer { pending.events = events }
        do {
            pending.fileSize = try retryingChange(pending.name, key: pending.key, bytesNeeded: bytesNeeded, events: &events) {
                () throws(Errno) -> Int in
                try records.writeTemporary(header: header, keyBytes: keyBytes, payload: data, temporaryPath: temporary, sync: sync)
            }
        } catch {
            emit(events)
            throw error
        }
        pending.temporaryPath = temporary
    }

    /// Runs the write of record `name` (`body`: write the file, index it) under the record's lock,
    /// retrying once after making room for `bytesNeeded` when the volume is full, or after making
    /// the cache's folder again when it was deleted behind the cache's back. The write path of
    /// imports; stores go through ``prepareStore(_:forKey:expiry:locked:)``.
    /// - Parameter events: Gathers what making room or the folder reported; the caller emits them.
    /// - Throws: ``CacheError/Code/diskFull`` (the previous record is intact),
    ///   ``CacheError/Code/ioFailure``, ``CacheError/Code/closed`` when ``close()`` has begun, or
    ///   what making the folder again threw.
    func writingRecord<T>(
        _ name: String, key: String?, bytesNeeded: Int, events: inout [CacheEvent], _ body: () throws(Errno) -> T
    ) throws(CacheError) -> T {
        try retryingChange(name, key: key, bytesNeeded: bytesNeeded, events: &events) { () throws(Errno) -> T in
            try withKeyLock(name) { () throws(Errno) -> T in
                defer { records.descriptors?.retire(name) }
                // Recorded in the change log when writers share the folder.
                return try _sharingChange(body)
            }
        }
    }

    /// Runs `body`, a change to record `name`, as a change the close waits for
    /// (``changingRecords(name:_:)``), retrying it once after making room for `bytesNeeded` when
    /// the volume is full, or after making the cache's folder again when it was deleted.
    private func retryingChange<T>(
        _ name: String, key: String?, bytesNeeded: Int, events: inout [CacheEvent], _ body: () throws(Errno) -> T
    ) throws(CacheError) -> T {
        for attempt in 0 ... 1 {
            let result: T?
            do throws(Errno) {
                result = try changingRecords(name: name, body)
            } catch let error where error == .noSpace && attempt == 0 {
                // Make room for this record, least recently used and unlocked first, then retry once.
                events += makeRoom(bytes: bytesNeeded, excluding: name)
                continue
            } catch let error where error == .noSuchFileOrDirectory && attempt == 0 {
                // The cache's folder may have been deleted behind its back: make it again, then
                // retry once (also when another thread has moved the cache meanwhile).
                switch recoverRemovedFolder() {
                case .recovered(let recreated): events += recreated
                case .notRemoved: break
                case .failed(let failure): throw failure
                }
                continue
            } catch {
                throw recordWriteFailure(error, name: name, key: key)
            }
            // `nil`: the change was refused because `close()` has begun.
            guard let result else { throw closedError(key: key) }
            return result
        }
        throw CacheError(.ioFailure, "cannot write the record", key: key, path: layout.path(for: name))
    }

    /// The error a failed write of record `name` throws.
    private func recordWriteFailure(_ error: Errno, name: String, key: String?) -> CacheError {
        let path = layout.path(for: name)
        switch error {
        case .untrusted:
            let folder = layout.folder(for: name)
            let problem = io.root?.problem(withFolder: String(folder.dropFirst(layout.root.count + 1))) ?? "cannot be trusted"
            return CacheError(
                .unsafeDirectory,
                "the record's folder \(problem); whoever controls it could read or replace the record, so nothing is written through it; remove it if this is your cache",
                key: key, path: folder, errno: error.rawValue)
        case .noSpace:
            return CacheError(
                .diskFull, "the volume is full; the previous record \(key == nil ? "in this file" : "under this key") is intact",
                key: key, path: path, errno: Errno.noSpace.rawValue)
        default:
            return CacheError(.ioFailure, "cannot write the record", key: key, path: path, errno: error.rawValue)
        }
    }
}
