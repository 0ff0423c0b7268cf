import Foundation

// Importing CacheHandler's disk cache (see `CacheHandlerFormat`): records written under the
// names CacheHandler gave its files, which are the names `.sha256` gives their keys.
extension DiskCache {
    /// Imports a CacheHandler disk cache folder (its `Caches/URLCache/`, or a bundle's
    /// `PreloadedCache/`), so that `value(forKey:)` with each original key finds its entry.
    ///
    /// CacheHandler names each file by the lowercase hex SHA-256 of its key's UTF-8, which is the
    /// file name this cache's ``KeyEncoding/sha256`` gives the key, so each entry is stored under
    /// its file's name. Its record:
    /// - holds the exact bytes of the file's `"response"` value (the JSON text CacheHandler's
    ///   `JSONSerialization` wrote: numbers and key order as they were), the payload a
    ///   ``CacheCoder/json`` decode or `JSONSerialization` reads back;
    /// - has the file's modification time as its update time (whole seconds, rounded down) and a
    ///   ttl of 6 days (518,400 s), so it expires when CacheHandler would have stopped serving it,
    ///   whatever the reads;
    /// - stores no key, since the file does not hold it: `keys(withPrefix:)` lists the file name
    ///   until the first read by key, which records the key in the index.
    ///
    /// Files are imported oldest modification time first. A file is skipped, and listed in the
    /// report with the reason, when it has expired (its 6 days have passed), when the cache
    /// already holds a live record under its name (that record is kept, so importing twice
    /// imports nothing new), when its name is not 64 lowercase hex digits (no key can find it),
    /// when it is a folder, a symbolic link (never followed), a FIFO (never opened blocking), a
    /// socket or a device, when it cannot be read, when it or its response is larger than
    /// ``DiskCacheOptions/maximumRecordSize`` (nothing is allocated for it), or when it is not
    /// JSON or has no top-level `"response"`. Hidden names are ignored.
    ///
    /// Each import is a store: it counts as an insertion, and the size and count limits apply
    /// after it, as after `store(_:forKey:expiry:locked:)`.
    /// - Parameter folder: The CacheHandler folder. It is only read.
    /// - Returns: The names imported and the files skipped.
    /// - Throws: ``CacheError/Code/keyEncodingMismatch`` when the cache's ``DiskCacheOptions/keyEncoding``
    ///   is not ``KeyEncoding/sha256``; ``CacheError/Code/notFound`` when the folder does not exist;
    ///   ``CacheError/Code/ioFailure`` when it cannot be opened or listed; ``CacheError/Code/readOnly``,
    ///   ``CacheError/Code/closed``; and what a store throws (``CacheError/Code/diskFull``,
    ///   ``CacheError/Code/ioFailure``), which stops the import: the entries imported before stay.
    /// - Complexity: O(*n*) file reads and record writes for *n* files.
    public func importCacheHandlerFolder(at folder: URL) throws(CacheError) -> CacheHandlerImportReport {
        try checkWritable(key: nil)
        guard case .sha256 = options.keyEncoding else {
            throw CacheError(
                .keyEncodingMismatch,
                "a CacheHandler folder can only be imported into a cache with sha256 keys (CacheHandler names each file by the SHA-256 of its key); this cache's keys are \(options.keyEncoding)",
                path: layout.root)
        }
        let path = folder.standardizedFileURL.path
        let source: CacheHandlerFolder
        let survey: (candidates: [String], skipped: [CacheHandlerImportReport.SkippedFile])
        do throws(Errno) {
            source = try CacheHandlerFolder(path: path)
            survey = try source.survey()
        } catch {
            throw CacheError(
                error == .noSuchFileOrDirectory ? .notFound : .ioFailure, "cannot read the CacheHandler folder", path: path,
                errno: error.rawValue)
        }
        var report = CacheHandlerImportReport()
        report.skipped = survey.skipped
        let ttl = CacheHandlerFormat.expiration
        for name in survey.candidates {
            let now = options.clock.now
            let read = source.read(name, maximumPayloadSize: options.maximumRecordSize) { info in
                // Expired files are skipped unread.
                let anchor = Self.updateTime(forModificationTime: info.modificationTime)
                guard expiryRule.isExpired(lockCount: 0, ttl: ttl, anchor: anchor, now: now) else { return nil }
                return .expired(at: expiryRule.expirationTime(lockCount: 0, ttl: ttl, anchor: anchor) ?? 0)
            }
            switch read {
            case .skipped(let reason):
                report.skipped.append(.init(name: name, reason: reason))
            case .entry(let entry):
                let updateTime = Self.updateTime(forModificationTime: entry.modificationTime)
                if try storeUnkeyedRecord(entry.payload, name: name, updateTime: updateTime, ttl: ttl) {
                    report.imported.append(name)
                } else {
                    report.skipped.append(.init(name: name, reason: .alreadyPresent))
                }
            }
        }
        return report
    }

    /// Imports a CacheHandler folder on the cache's own queue; see `importCacheHandlerFolder(at:)`.
    /// - Throws: ``CacheError/Code/cancelled`` when the task is cancelled before the import
    ///   starts, or what the synchronous call throws.
    public func importCacheHandlerFolder(at folder: URL) async throws(CacheError) -> CacheHandlerImportReport {
        try await ioQueue.runBlocking(.write, key: nil) { () throws(CacheError) in try self.importCacheHandlerFolder(at: folder) }
    }

    /// A file's modification time as a record's update time: whole seconds, rounded down, within
    /// what a header holds.
    static func updateTime(forModificationTime time: Double) -> UInt64 {
        min(seconds(time), RecordHeader.maximumTimestamp)
    }

    /// Whether a live (unexpired or locked) record is in the file `name`: what ``contains(_:)``
    /// answers, for a caller that knows the file name but not the key. Answered from the index
    /// once it is complete, else from the record's header.
    package func containsLiveRecord(named name: String) -> Bool {
        followFolder()
        let now = options.clock.now
        let known: Bool? = state.withLock { s in
            guard s.isIndexReady, !isClosed.isSet else { return nil }
            guard let entry = s.index[name] else { return false }
            return !isExpired(entry, now: now)
        }
        if let known { return known }
        guard case .record(let contents)? = try? records.read(layout.path(for: name), readPayload: false) else { return false }
        return !isExpired(contents.header, name: name, now: now)
    }

    /// Stores `payload` in the record file `name`, unless a live record (or a file that is not a
    /// record, ``RecordReadResult/foreign``) is there, with the given
    /// update time and ttl and no stored key: for entries whose key is unknown but whose file
    /// name is the one the cache's encoding gives it (CacheHandler's files under ``KeyEncoding/sha256``).
    /// The first read by key records the key in the index.
    ///
    /// The write path of `store(_:forKey:expiry:locked:)`: a temporary file renamed into place
    /// under the record's key lock, the index, totals and statistics updated with it, the
    /// snapshot withdrawn first, room made once on a full volume, the folder synced with
    /// ``Durability/fsync``, and the limits enforced after.
    /// - Parameters:
    ///   - payload: The payload.
    ///   - name: The record's file name: a safe file name.
    ///   - updateTime: The header's update time, in seconds since the epoch.
    ///   - ttl: The header's ttl in seconds (0 for the cache's default expiration).
    /// - Returns: Whether the record was stored; `false` when a live record was there (left alone).
    /// - Throws: ``CacheError/Code/invalidKey`` for a name that is not a safe file name,
    ///   ``CacheError/Code/invalidArgument`` for a payload over ``DiskCacheOptions/maximumRecordSize``,
    ///   and what `store(_:forKey:expiry:locked:)` throws for the write.
    package func storeUnkeyedRecord(_ payload: Data, name: String, updateTime: UInt64, ttl: UInt64) throws(CacheError) -> Bool {
        try checkWritable(key: nil)
        try KeyEncoding.validateFileName(name, key: name)
        guard payload.count <= options.maximumRecordSize else {
            throw CacheError(
                .invalidArgument,
                "the payload (\(payload.count) bytes) is larger than maximumRecordSize (\(options.maximumRecordSize))",
                path: layout.path(for: name))
        }
        let now = options.clock.now
        let header = RecordHeader(
            refCount: 0, ttl: min(ttl, RecordHeader.maximumTTL), updateTimeSec: min(updateTime, RecordHeader.maximumTimestamp),
            payloadSizeBytes: UInt64(payload.count), payloadChecksum: payload.withUnsafeBytes { CRC32.checksum($0) },
            lastAccessMilliseconds: Self.milliseconds(now), storedKey: nil)
        let path = layout.path(for: name)
        var events: [CacheEvent] = []
        var stored = false
        do {
            stored = try writingRecord(name, key: nil, bytesNeeded: diskSize(header.payloadOffset + payload.count), events: &events) {
                () throws(Errno) -> Bool in
                // Checked under the key lock, so no store of the same key slips in between. A file
                // there that is not a record is not Larder's to replace: left, and nothing stored.
                switch try? records.read(path, readPayload: false) {
                case .record(let contents)? where !isExpired(contents.header, name: name, now: now): return false
                case .foreign?: return false
                default: break
                }
                let fileSize = try records.write(
                    header: header, keyBytes: [], payload: payload, temporaryPath: nextTemporaryPath(), path: path,
                    folder: layout.folder(for: name), sync: options.durability == .fsync)
                _indexWrittenRecord(name, key: nil, header: header, fileSize: fileSize, payloadBytes: payload.count)
                return true
            }
        } catch {
            emit(events)
            throw error
        }
        guard stored else {
            emit(events)
            return false
        }
        try finishStore(StoredRecord(name: name, key: nil, path: path, events: events))
        return true
    }
}
