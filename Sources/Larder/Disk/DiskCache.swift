#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Synchronization

/// A persistent cache with one file per record, each starting with SPTPersistentCache's 64-byte
/// header, written crash-safely (a temporary file, then a rename).
///
/// ```swift
/// let cache = try DiskCache(options: DiskCacheOptions(directory: url))
/// try cache.store(data, forKey: "https://example.com/a.png", ttl: 3600)
/// let record = try cache.load(forKey: "https://example.com/a.png")
/// ```
///
/// Operations on one key are serialised; different keys run in parallel. An in-memory index of
/// every record is built in the background at open (from a snapshot when there is one), so the
/// cache answers loads and stores at once; calls that need every record (totals, listings,
/// limits) wait for it. Only one writable instance, in any process, may open a directory.
public final class DiskCache: Sendable {
    /// The options the cache was opened with.
    public let options: DiskCacheOptions

    let layout: DiskLayout
    let io: FileIO
    let records: RecordFile
    let blockSize: Int
    let state: LarderMutex<State>
    /// Entered at open, left when the background index build ends.
    let indexBuild = DispatchGroup()
    /// The cache's own threads for blocking work: the index build, collections, async calls.
    package let ioQueue: DispatchQueue
    /// Held for the duration of a collection or a limit-enforcing trim.
    let collectionGate = LarderMutex(())
    /// Whether the index snapshot on disk is exact, and how many changes to records are under way.
    let snapshotGate = LarderMutex(SnapshotState())
    private let stripes: [KeyStripe]
    let directoryLock: DirectoryLock?
    private let temporaryCounter = Atomic<UInt64>(0)
    /// This process's id, part of every temporary file's name.
    private let processID = getpid()
    /// Whether ``close()`` has run; read without a lock on every call.
    let isClosed = Atomic<Bool>(false)

    struct State: ~Copyable {
        var index = DiskIndex()
        var isIndexReady = false
        /// Whether the build listed every folder, so that a name the index lacks has no file.
        var isIndexAuthoritative = false
        /// Files the build found corrupt or could not read: not indexed, but not known absent.
        var suspects: Set<String> = []
        /// Names stored, removed or read while the background build ran; the build defers to them.
        var touchedDuringBuild: Set<String> = []
        /// Names whose access times became newer in the index than in their header, in order; a
        /// name whose entry is gone or clean again by write-back time is skipped.
        var dirtyQueue: [String] = []
        var statistics = DiskCacheStatistics()
        var timer: (any DispatchSourceTimer)?
        var freeSpace: (checkedAt: Double, volumeSize: Int, available: Int)?
    }

    /// What the index says of a key before a load touches the disk.
    enum IndexLookup {
        case indexed(name: String, fileSize: Int)
        case absent
        case unknown
    }

    struct SnapshotState {
        var isOnDisk = false
        var changesInFlight = 0
    }

    final class KeyStripe: Sendable {
        let mutex = LarderMutex(())
    }

    /// Opens (creating when needed) the cache in `options.directory`.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidOptions`` for values out of range,
    ///   ``CacheError/Code/directoryInUse`` when another writer holds the directory,
    ///   ``CacheError/Code/keyEncodingMismatch`` when the directory records another key encoding,
    ///   ``CacheError/Code/ioFailure`` or ``CacheError/Code/notFound`` when it cannot be made or read.
    public convenience init(options: DiskCacheOptions) throws {
        try self.init(options: options, systemCalls: .live)
    }

    /// Opens the cache with a table of system calls of the caller's choosing (fault injection in tests).
    package init(options: DiskCacheOptions, systemCalls: SystemCalls) throws {
        try options.validate()
        // Every path below resolves beneath a descriptor of the root (see `FileIO`).
        let (layout, io) = try Self.openFolder(options: options, systemCalls: systemCalls)
        let lock = options.isReadOnly ? nil : try DirectoryLock(path: layout.lockPath, io: io, sharedWithGroup: options.sharing == .group)
        do {
            try Self.checkMetadata(layout: layout, options: options, io: io)
            if !options.isReadOnly { try Self.prepareTemporaryFolder(layout: layout, io: io) }
        } catch {
            lock?.release()
            throw error
        }
        let rootInfo = try? io.lstat(layout.root)
        self.options = options
        self.layout = layout
        self.io = io
        self.records = RecordFile(io: io, maximumPayloadSize: options.maximumRecordSize)
        self.blockSize = max(512, Int(rootInfo?.st_blksize ?? 4096))
        self.state = LarderMutex(State())
        self.ioQueue = DispatchQueue(label: "larder.disk", qos: .utility, attributes: .concurrent)
        self.stripes = (0 ..< 64).map { _ in KeyStripe() }
        self.directoryLock = lock
        indexBuild.enter()
        ioQueue.async { [self] in
            buildIndex()
            indexBuild.leave()
        }
    }

    deinit {
        closeNow()
    }

    // MARK: - Records

    /// Stores `data` under `key`, replacing any record there.
    /// - Parameters:
    ///   - data: The payload.
    ///   - key: The key.
    ///   - ttl: Seconds until it expires, counted from now whatever the reads; 0 (the default)
    ///     means the cache's default expiration, counted from the last store, load or touch.
    ///     Above ``RecordHeader/maximumTTL`` (100 years) it is clamped to that.
    ///   - locked: Whether to store it with a lock count of 1, so that it never expires until unlocked.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidKey``, ``CacheError/Code/invalidOptions``
    ///   for a negative or NaN TTL or a payload above ``DiskCacheOptions/maximumRecordSize``, ``CacheError/Code/diskFull`` when the volume stays full after the
    ///   cache freed room, ``CacheError/Code/ioFailure``. A failed store leaves the previous record
    ///   intact, with one exception: with ``Durability/fsync``, when only the final sync of the
    ///   record's folder fails, the new record is already in place (and indexed) but may not
    ///   survive a power loss; the error says so.
    public func store(_ data: Data, forKey key: String, ttl: TimeInterval = 0, locked: Bool = false) throws {
        try checkWritable(key: key)
        guard ttl.isFinite, ttl >= 0 else {
            throw CacheError(.invalidOptions, "ttl must be 0 (the default expiration) or a positive number of seconds, not \(ttl)", key: key)
        }
        guard data.count <= options.maximumRecordSize else {
            throw CacheError(.invalidOptions, "the payload (\(data.count) bytes) is larger than maximumRecordSize (\(options.maximumRecordSize))", key: key)
        }
        let name = try options.keyEncoding.fileName(for: key)
        let keyBytes = options.keyEncoding.storesKey ? Array(key.utf8) : []
        guard keyBytes.count <= RecordHeader.maximumKeyLength else {
            throw CacheError(.invalidKey, "key is longer than \(RecordHeader.maximumKeyLength) bytes", key: key)
        }
        let now = options.clock.now
        var flags: RecordFlags = [.payloadChecksum, .accessTime]
        if !keyBytes.isEmpty { flags.insert(.storedKey) }
        let header = RecordHeader(
            refCount: locked ? 1 : 0, ttl: UInt64(min(ttl, Double(RecordHeader.maximumTTL)).rounded(.up)), updateTimeSec: Self.seconds(now),
            payloadSizeBytes: UInt64(data.count), flags: flags,
            reserved1: data.withUnsafeBytes { CRC32.checksum($0) },
            reserved2: Self.milliseconds(now), reserved3: UInt32(keyBytes.count),
            reserved4: keyBytes.isEmpty ? 0 : CRC32.checksum(of: keyBytes))
        let path = layout.path(for: name)
        var events: [CacheEvent] = []
        for attempt in 0 ... 1 {
            do {
                try withStripe(name, changing: true) { () throws(Errno) in
                    let fileSize = try records.write(
                        header: header, keyBytes: keyBytes, payload: data, temporaryPath: nextTemporaryPath(),
                        path: path, folder: layout.folder(for: name), sync: options.durability == .fsync)
                    state.withLock { s in
                        s.index.upsert(IndexEntry(
                            name: name, key: key, diskSize: diskSize(fileSize), fileSize: fileSize, updateTime: header.updateTimeSec,
                            lastAccessMs: header.reserved2, ttl: header.ttl, lockCount: header.refCount))
                        if !s.isIndexReady { s.touchedDuringBuild.insert(name) }
                        s.statistics.stores += 1
                        s.statistics.bytesWritten += data.count
                    }
                }
                break
            } catch where error.rawValue == ENOSPC && attempt == 0 {
                // Make room for this record, least recently used and unlocked first, then retry once.
                let needed = diskSize(header.payloadOffset + data.count)
                events += makeRoom(bytes: needed, excluding: name)
            } catch where error.rawValue == ENOSPC {
                emit(events)
                throw CacheError(.diskFull, "the volume is full; the previous record under this key is intact", key: key, path: path, errno: ENOSPC)
            } catch {
                emit(events)
                throw CacheError(.ioFailure, "cannot write the record", key: key, path: path, errno: error.rawValue)
            }
        }
        // After the index records the new file: from here a failure no longer means the old record is there.
        if options.durability == .fsync {
            do throws(Errno) { try records.syncFolder(layout.folder(for: name)) } catch {
                emit(events)
                throw CacheError(.ioFailure, "the record was stored, but its folder could not be synced, so it may not survive a power loss", key: key, path: path, errno: error.rawValue)
            }
        }
        events += enforceLimits(excluding: name)
        emit(events)
    }

    /// Loads the record stored under `key`.
    ///
    /// A hit counts as a use: it moves the record to the most recently used end and, for `ttl` 0
    /// records, slides its expiry. The new times are kept in the index and written to the header
    /// in batches, so a load performs no write. Once the index is complete, a writable cache
    /// answers a miss from it without touching the disk (it owns the directory; a record copied
    /// in behind its back appears at the next open).
    /// - Returns: The record, or `nil` when it is absent, expired (and unlocked) or corrupt. A
    ///   corrupt record's file is removed and reported as ``CacheEvent/corruptRecordRemoved(key:file:reason:)``.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidKey``, ``CacheError/Code/ioFailure``.
    public func load(forKey key: String) throws -> CacheRecord? {
        try checkOpen(key: key)
        // Hashed names are only computed when the index cannot answer: verbatim and custom names
        // are computed first, since computing them is also what rejects an invalid key.
        var computedName: String?
        if case .sha256 = options.keyEncoding {} else { computedName = try options.keyEncoding.fileName(for: key) }
        let lookup: IndexLookup = state.withLock { s in
            if let slot = s.index.slot(forKey: key) {
                let entry = s.index[slot: slot]
                return .indexed(name: entry.name, fileSize: entry.fileSize)
            }
            // A writer owns its directory, so once its index is complete (every folder listed,
            // every entry's key known, no unreadable file pending) a key it lacks has no file:
            // the miss costs no system call.
            if !options.isReadOnly, s.isIndexAuthoritative, s.index.unmappedCount == 0, s.suspects.isEmpty {
                s.statistics.misses += 1
                return .absent
            }
            return .unknown
        }
        let name: String
        var expectedFileSize: Int?
        switch lookup {
        case .absent:
            return nil
        case .indexed(let indexedName, let fileSize):
            name = indexedName
            expectedFileSize = fileSize > 0 ? fileSize : nil
        case .unknown:
            name = try computedName ?? options.keyEncoding.fileName(for: key)
            // The same answer by name, for indexes with unkeyed entries or unreadable files.
            if !options.isReadOnly, state.withLock({ s in
                guard s.isIndexAuthoritative, !s.index.contains(name), !s.suspects.contains(name) else { return false }
                s.statistics.misses += 1
                return true
            }) {
                return nil
            }
        }
        let path = layout.path(for: name)
        let now = options.clock.now
        var events: [CacheEvent] = []
        let record: CacheRecord? = try withStripe(name) { () throws(CacheError) -> CacheRecord? in
            let result: RecordReadResult
            do throws(Errno) {
                result = try records.read(
                    path, verifyPayload: options.verifiesPayloadChecksum, expectedKey: key, expectedFileSize: expectedFileSize)
            } catch {
                throw CacheError(.ioFailure, "cannot read the record", key: key, path: path, errno: error.rawValue)
            }
            switch result {
            case .missing:
                state.withLock { s in
                    s.statistics.misses += 1
                    _forget(name, in: &s)
                }
                return nil
            case .corrupt(let reason):
                events.append(_removeCorrupt(name: name, key: key, path: path, reason: reason))
                return nil
            case .record(let contents):
                // `read` checked any stored key against `key`.
                return _registerHit(name: name, key: key, path: path, contents: contents, now: now, countsAsLoad: true)
            }
        }
        emit(events)
        return record
    }

    /// Whether a live (unexpired or locked) record is stored under `key`. Not a use.
    public func contains(_ key: String) -> Bool {
        guard let name = try? options.keyEncoding.fileName(for: key) else { return false }
        let now = options.clock.now
        let known: Bool? = state.withLock { s in
            guard s.isIndexReady, !isClosed.load(ordering: .acquiring) else { return nil }
            guard let entry = s.index[name] else { return false }
            return !isExpired(entry, now: now)
        }
        if let known { return known }
        guard case .record(let contents)? = try? records.read(layout.path(for: name), readPayload: false) else { return false }
        let anchor = effectiveUpdateTime(name: name, header: contents.header)
        return !contents.header.isExpired(now: now, defaultExpiration: options.defaultExpiration, anchor: anchor)
    }

    /// Records a use of `key` without reading its payload: it becomes the most recently used
    /// and, for `ttl` 0 records, its expiry slides (SPT's `touchDataForKey`).
    /// - Returns: `false` when no live record is stored under `key`.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidKey``, ``CacheError/Code/ioFailure``.
    @discardableResult
    public func touch(forKey key: String) throws -> Bool {
        try checkOpen(key: key)
        let name = try options.keyEncoding.fileName(for: key)
        let path = layout.path(for: name)
        let now = options.clock.now
        var events: [CacheEvent] = []
        let touched = try withStripe(name) { () throws(CacheError) -> Bool in
            guard let contents = try _readValidHeader(name: name, key: key, path: path, events: &events) else { return false }
            return _registerHit(name: name, key: key, path: path, contents: contents, now: now, countsAsLoad: false) != nil
        }
        emit(events)
        return touched
    }

    /// Removes the records stored under `keys`; absent keys are ignored.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidKey``, ``CacheError/Code/readOnly``,
    ///   ``CacheError/Code/ioFailure`` (the records before the failing one are removed).
    public func remove(forKeys keys: [String]) throws {
        for key in keys {
            try checkWritable(key: key)
            let name = try options.keyEncoding.fileName(for: key)
            let path = layout.path(for: name)
            try withStripe(name, changing: true) { () throws(CacheError) in
                do throws(Errno) { try io.unlink(path) } catch {
                    throw CacheError(.ioFailure, "cannot remove the record", key: key, path: path, errno: error.rawValue)
                }
                state.withLock { _forget(name, in: &$0) }
            }
        }
    }

    /// Locks the records under `keys` against expiry and collection (up to the size limit),
    /// incrementing each one's lock count.
    /// - Returns: The keys that were locked. Absent, corrupt, and expired unlocked records are not.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidKey``, ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    @discardableResult
    public func lock(forKeys keys: [String]) throws -> [String] {
        try changeLockCount(keys: keys, by: 1)
    }

    /// Unlocks the records under `keys`, decrementing each one's lock count (never below 0).
    /// - Returns: The keys whose lock count went down.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidKey``, ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    @discardableResult
    public func unlock(forKeys keys: [String]) throws -> [String] {
        try changeLockCount(keys: keys, by: -1)
    }

    /// The keys of every record whose key starts with `prefix` (every key for ""), sorted. For
    /// records that do not store their key (SPT records under another encoding), the file name.
    /// Waits for the index.
    /// - Complexity: O(*n*) in the number of records.
    public func keys(withPrefix prefix: String) throws -> [String] {
        try checkOpen(key: nil)
        waitForIndex()
        return state.withLock { s in
            var result: [String] = []
            s.index.forEachLeastRecentFirst { entry in
                let key = entry.key ?? entry.name
                if key.hasPrefix(prefix) { result.append(key) }
                return true
            }
            return result.sorted()
        }
    }

    // MARK: - Helpers

    /// Bytes a file of `length` bytes occupies: its length rounded up to the block size.
    func diskSize(_ length: Int) -> Int {
        (length + blockSize - 1) / blockSize * blockSize
    }

    static func seconds(_ time: Double) -> UInt64 { UInt64(max(0, time.rounded(.down))) }
    static func milliseconds(_ time: Double) -> UInt64 { UInt64(max(0, (time * 1000).rounded(.down))) }

    /// Runs `body` holding the stripe lock of `name`. With `changing`, `body` changes records on
    /// disk and in the index, so the index snapshot is withdrawn first (see ``changingRecords(_:)``).
    func withStripe<T, E: Error>(_ name: String, changing: Bool = false, _ body: () throws(E) -> T) throws(E) -> T {
        if changing { return try changingRecords { () throws(E) -> T in try withStripe(name, body) } }
        var hasher = Hasher()
        hasher.combine(name)
        let stripe = stripes[Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes.count))]
        return try stripe.mutex.withLock { (_: inout Void) throws(E) -> T in try body() }
    }

    func nextTemporaryPath() -> String {
        let n = temporaryCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        return layout.temporaryFolder + "/\(processID)-\(n)"
    }

    func emit(_ events: [CacheEvent]) {
        guard let handler = options.eventHandler else { return }
        for event in events { handler(event) }
    }

    func checkOpen(key: String?) throws(CacheError) {
        if isClosed.load(ordering: .acquiring) {
            throw CacheError(.closed, "the cache was closed", key: key, path: layout.root)
        }
    }

    func checkWritable(key: String?) throws(CacheError) {
        try checkOpen(key: key)
        if options.isReadOnly {
            throw CacheError(.readOnly, "the cache was opened read-only", key: key, path: layout.root)
        }
    }

    /// The update time that anchors a record's expiry: the header's, or the index's when a read
    /// has slid a `ttl` 0 record's time further than its header shows.
    func effectiveUpdateTime(name: String, header: RecordHeader) -> UInt64 {
        guard header.ttl == 0 else { return header.updateTimeSec }
        let indexed = state.withLock { $0.index[name]?.updateTime } ?? 0
        return max(header.updateTimeSec, indexed)
    }

    func isExpired(_ entry: IndexEntry, now: Double) -> Bool {
        guard entry.lockCount == 0 else { return false }
        let threshold = entry.ttl > 0 ? Double(entry.ttl) : options.defaultExpiration.rounded(.down)
        return now.rounded(.down) - Double(entry.updateTime) > threshold
    }

    /// Reads a header (and stored key) under the caller's stripe, mapping failures to ``CacheError``.
    func readHeader(path: String, key: String?) throws(CacheError) -> RecordReadResult {
        do {
            return try records.read(path, readPayload: false, expectedKey: key)
        } catch {
            throw CacheError(.ioFailure, "cannot read the record's header", key: key, path: path, errno: error.rawValue)
        }
    }

    /// Reads a record's header under the caller's stripe; a missing record is forgotten and a
    /// corrupt one removed (its event appended), and both return `nil`. Expects the key's stripe held.
    func _readValidHeader(name: String, key: String, path: String, events: inout [CacheEvent]) throws(CacheError) -> RecordContents? {
        switch try readHeader(path: path, key: key) {
        case .missing:
            state.withLock { _forget(name, in: &$0) }
            return nil
        case .corrupt(let reason):
            events.append(_removeCorrupt(name: name, key: key, path: path, reason: reason))
            return nil
        case .record(let contents):
            return contents
        }
    }

    /// Drops a name from the index. Expects the state lock held.
    func _forget(_ name: String, in s: inout State) {
        s.index.remove(name)
        if !s.suspects.isEmpty { s.suspects.remove(name) }
        if !s.isIndexReady { s.touchedDuringBuild.insert(name) }
    }

    /// Removes a corrupt record's file (unless read-only) and counts it. Expects the key's stripe held.
    func _removeCorrupt(name: String, key: String?, path: String, reason: CorruptionReason) -> CacheEvent {
        changingRecords {
            if !options.isReadOnly {
                if reason == .notARegularFile {
                    // A folder, a link or a FIFO where a record should be: remove the link or the
                    // FIFO (never a link's target), leave folders alone.
                    if let info = try? io.info(atPath: path), info.kind != .directory { _ = try? io.unlink(path) }
                } else {
                    _ = try? io.unlink(path)
                }
            }
            state.withLock { s in
                s.statistics.misses += 1
                s.statistics.corruptRecordsRemoved += 1
                _forget(name, in: &s)
            }
        }
        return .corruptRecordRemoved(key: key, file: path, reason: reason)
    }

    /// Records a use of a valid record read under its stripe; returns the record, or `nil` when
    /// it has expired (removing it unless read-only). Expects the key's stripe held.
    func _registerHit(name: String, key: String, path: String, contents: RecordContents, now: Double, countsAsLoad: Bool) -> CacheRecord? {
        let header = contents.header
        let nowSeconds = Self.seconds(now)
        let nowMs = Self.milliseconds(now)
        let outcome: (expired: Bool, updateTime: UInt64, lastAccessMs: UInt64) = state.withLock { s in
            // One lookup of the name serves the expiry check and the update.
            let slot = s.index.slot(of: name)
            var updateTime = header.updateTimeSec
            if header.ttl == 0, let slot { updateTime = max(updateTime, s.index[slot: slot].updateTime) }
            if header.isExpired(now: now, defaultExpiration: options.defaultExpiration, anchor: updateTime) {
                if countsAsLoad {
                    s.statistics.misses += 1
                    s.statistics.expirations += 1
                }
                return (true, updateTime, 0)
            }
            let newUpdateTime = header.ttl == 0 ? max(updateTime, nowSeconds) : header.updateTimeSec
            if countsAsLoad {
                s.statistics.hits += 1
                s.statistics.bytesRead += Int(header.payloadSizeBytes)
            }
            let tracksAccess = !options.isReadOnly
            var becameDirty = tracksAccess
            if let slot {
                s.index.modify(slot: slot, moveToMostRecent: true) { entry in
                    if entry.key == nil { entry.key = contents.storedKey ?? key }
                    entry.diskSize = diskSize(contents.fileSize)
                    entry.fileSize = contents.vouchedFileSize(previous: entry.fileSize)
                    entry.updateTime = newUpdateTime
                    entry.lastAccessMs = nowMs
                    entry.ttl = header.ttl
                    entry.lockCount = header.refCount
                    becameDirty = tracksAccess && !entry.isAccessDirty
                    if tracksAccess { entry.isAccessDirty = true }
                }
            } else {
                s.index.upsert(IndexEntry(
                    name: name, key: contents.storedKey ?? key, diskSize: diskSize(contents.fileSize), fileSize: contents.vouchedFileSize(previous: 0),
                    updateTime: newUpdateTime, lastAccessMs: nowMs, ttl: header.ttl, lockCount: header.refCount,
                    isAccessDirty: tracksAccess))
            }
            // Queued once per collection interval, not once per read.
            if becameDirty { s.dirtyQueue.append(name) }
            if !s.isIndexReady { s.touchedDuringBuild.insert(name) }
            return (false, newUpdateTime, nowMs)
        }
        if outcome.expired {
            changingRecords {
                if !options.isReadOnly { _ = try? io.unlink(path) }
                state.withLock { _forget(name, in: &$0) }
            }
            return nil
        }
        let threshold = header.ttl > 0 ? Double(header.ttl) : options.defaultExpiration.rounded(.down)
        return CacheRecord(
            key: key, data: contents.payload ?? Data(), ttl: TimeInterval(header.ttl),
            lockCount: Int(header.refCount), updateTime: Double(outcome.updateTime),
            lastAccessTime: Double(outcome.lastAccessMs) / 1000,
            expirationTime: header.refCount > 0 ? nil : Double(outcome.updateTime) + threshold)
    }

    private func changeLockCount(keys: [String], by delta: Int) throws(CacheError) -> [String] {
        var changed: [String] = []
        var events: [CacheEvent] = []
        defer { emit(events) }
        let now = options.clock.now
        for key in keys {
            try checkWritable(key: key)
            let name = try options.keyEncoding.fileName(for: key)
            let path = layout.path(for: name)
            let didChange = try withStripe(name, changing: true) { () throws(CacheError) -> Bool in
                guard let contents = try _readValidHeader(name: name, key: key, path: path, events: &events) else { return false }
                var header = contents.header
                let anchor = effectiveUpdateTime(name: name, header: header)
                if delta > 0 {
                    // Locking an expired, unlocked record fails for that key (SPT).
                    if header.isExpired(now: now, defaultExpiration: options.defaultExpiration, anchor: anchor) { return false }
                    guard header.refCount < UInt32.max else { return false }
                    header.refCount += 1
                } else {
                    guard header.refCount > 0 else { return false }
                    header.refCount -= 1
                }
                let indexed = state.withLock { $0.index[name] }
                _mergeAccessTimes(into: &header, from: indexed)
                do throws(Errno) {
                    guard try records.rewriteHeader(header, at: path, sync: options.durability == .fsync) else { return false }
                } catch {
                    // The new header may be written even though the call failed (a failed
                    // fsync); put the old one back, so that a failed call changes no lock count.
                    _ = try? records.rewriteHeader(contents.header, at: path, sync: false)
                    throw CacheError(.ioFailure, "cannot update the record's lock count", key: key, path: path, errno: error.rawValue)
                }
                state.withLock { s in
                    let entry = IndexEntry(
                        name: name, key: contents.storedKey ?? key, diskSize: diskSize(contents.fileSize),
                        fileSize: contents.vouchedFileSize(previous: indexed?.fileSize ?? 0), updateTime: header.updateTimeSec, lastAccessMs: header.lastAccessMilliseconds ?? header.updateTimeSec * 1000,
                        ttl: header.ttl, lockCount: header.refCount)
                    // A lock is not a use: the record keeps its place in the LRU order.
                    s.index.replaceKeepingPosition(entry)
                                if !s.isIndexReady { s.touchedDuringBuild.insert(name) }
                }
                return true
            }
            if didChange { changed.append(key) }
        }
        return changed
    }

    /// Folds the index's newer access times into a header about to be written.
    func _mergeAccessTimes(into header: inout RecordHeader, from entry: IndexEntry?) {
        guard let entry, entry.isAccessDirty else { return }
        if header.ttl == 0 { header.updateTimeSec = max(header.updateTimeSec, entry.updateTime) }
        header.reserved2 = max(header.lastAccessMilliseconds ?? 0, entry.lastAccessMs)
        header.flags.insert(.accessTime)
    }
}
