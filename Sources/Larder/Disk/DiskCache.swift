import Dispatch
import Foundation
import Synchronization

/// A persistent cache with one file per record, each starting with SPTPersistentCache's 64-byte
/// header, written crash-safely (a temporary file, then a rename).
///
/// ```swift
/// let cache = try DiskCache(options: DiskCacheOptions(directory: url))
/// try cache.store(data, forKey: "https://example.com/a.png", expiry: .seconds(3600))
/// let png = try cache.value(forKey: "https://example.com/a.png")      // the payload
/// let record = try cache.record(forKey: "https://example.com/a.png")  // payload and header facts
/// ```
///
/// Its operations share their names and meaning with ``MemoryCache`` and ``HybridCache``:
/// `value(forKey:)`, `store(_:forKey:...)`, `remove(forKey:)`, `remove(forKeys:)`, `contains(_:)`,
/// `removeAll()`, `keys(withPrefix:)`, `statistics`; each has an `async` twin and an SPT-style
/// callback twin of the same name.
///
/// Operations on one key are serialised; different keys run in parallel. An in-memory index of
/// every record is built in the background at open (from a snapshot when there is one), so the
/// cache answers loads and stores at once; calls that need every record (totals, listings,
/// limits) wait for it. Only one writable instance, in any process, may open a directory at a
/// time; a second waits ``DiskCacheOptions/writerWaitTimeout`` for it before it is refused.
public final class DiskCache: Sendable {
    /// The options the cache was opened with.
    public let options: DiskCacheOptions

    let layout: DiskLayout
    let io: FileIO
    let records: RecordFile
    let blockSize: Int
    /// SPT's expiry rule with this cache's default expiration.
    let expiryRule: ExpiryRule
    let state: SharedMutex<State>
    /// Entered at open, left when the background index build ends.
    let indexBuild: DispatchGroup
    /// The cache's own threads for blocking work: the index build, collections, async calls.
    package let ioQueue: WorkQueue
    /// Held for the duration of a collection or a limit-enforcing trim.
    let collectionGate: SharedMutex<Void>
    /// Whether the index snapshot on disk is exact, and how many changes to records are under way.
    let snapshotGate: SharedMutex<SnapshotState>
    /// One lock per record file name (striped), held across each change to a record.
    private let keyLocks: StripedLock
    /// The directory's write lock (`nil` when read-only or closed); replaced when the cache makes
    /// its deleted folder again, and held across that (`DiskCache+Recovery.swift`).
    let directoryLock: SharedMutex<DirectoryLock?>
    /// Flushes the cache when the app moves to the background or exits (Apple platforms).
    let lifecycle: LifecycleFlusher
    /// The change log and collection lock of a writer sharing its folder with other writers
    /// (``DiskCacheOptions/sharesFolderWithWriters``); `nil` for one that holds it alone.
    let sharedFolder: SharedFolder?
    private let temporaryCounter: SharedCounter
    /// This process's id, part of every temporary file's name.
    private let processID: Int32
    /// Whether ``close()`` has run; read without a lock on every call.
    let isClosed: SharedFlag
    /// Whether this is the handle the cache's owner holds, whose last release closes the cache,
    /// rather than the cache's own background work's (``backgroundHandle``).
    private let isOwner: Bool

    /// The folder's layout: the one its metadata records, or the one its files show, else
    /// ``DiskCacheOptions/layout``.
    public var folderLayout: FolderLayout { layout.folderLayout }

    /// Opens (creating when needed) the cache in `options.directory`.
    /// - Throws: ``CacheError``: ``CacheError/Code/invalidOptions`` for values out of range,
    ///   ``CacheError/Code/directoryInUse`` when another writer holds the directory (and, with
    ///   ``DiskCacheOptions/writerWaitTimeout``, kept it for that long),
    ///   ``CacheError/Code/keyEncodingMismatch`` when the directory records another key encoding,
    ///   ``CacheError/Code/ioFailure`` or ``CacheError/Code/notFound`` when it cannot be made or read.
    public convenience init(options: DiskCacheOptions) throws(CacheError) {
        try self.init(options: options, systemCalls: .live)
    }

    /// Opens the cache with a table of system calls of the caller's choosing (fault injection in tests).
    package convenience init(options: DiskCacheOptions, systemCalls: SystemCalls) throws(CacheError) {
        try options.validate()
        // Every path below resolves beneath a descriptor of the root (see `FileIO`).
        var (layout, io) = try Self.openFolder(options: options, systemCalls: systemCalls)
        let sharesFolder = options.sharesFolderWithWriters && !options.isReadOnly
        let lock =
            options.isReadOnly
            ? nil
            : try DirectoryLock(
                path: layout.lockPath, io: io, sharedWithGroup: options.sharing == .group, waitingUpTo: options.writerWaitTimeout,
                shared: sharesFolder, sharingWriter: { SharedWriterTable.runningWriter(root: layout.root, io: io) })
        let folder: FolderFacts
        let sharedFolder: SharedFolder?
        do {
            folder = try Self.checkMetadata(layout: layout, options: options, io: io)
            if !options.isReadOnly { try Self.prepareTemporaryFolder(layout: layout, io: io, sharedWithWriters: sharesFolder) }
            if !options.isReadOnly, !sharesFolder {
                try Self.withdrawSharedImage(layout: layout, io: io, sync: options.durability == .fsync)
            }
            // The place in the change log is taken before the index is built, so that a change
            // another writer makes meanwhile is replayed on top of the build, not missed.
            sharedFolder = sharesFolder ? try SharedFolder(root: layout.root, io: io, sharedWithGroup: options.sharing == .group) : nil
            // Registered in the table of writers: from here on it holds no lock between calls.
            if sharesFolder { lock?.letGoOfSharedHold() }
        } catch {
            lock?.release()
            throw error
        }
        let rootInfo = try? io.info(atPath: layout.root)
        // Only a writer keeps record files open: it owns the folder, so it knows when one changes.
        let descriptors =
            options.isReadOnly || options.maximumOpenFiles == 0
            ? nil
            : DescriptorCache(
                limit: options.maximumOpenFiles, payloadCapacity: options.maximumPayloadMemory,
                recheckInterval: options.keptFileRecheckInterval, calls: systemCalls)
        if let descriptors { io.relievesDescriptorExhaustion = { descriptors.relieve() } }
        self.init(
            options: options, layout: layout.with(folder.layout), io: io,
            records: RecordFile(io: io, maximumPayloadSize: options.maximumRecordSize, descriptors: descriptors),
            blockSize: max(512, rootInfo?.blockSize ?? 4096), directoryLock: lock, sharedFolder: sharedFolder)
        emit([.opened(name: options.name, layout: folder.layout, layoutWasDetected: folder.wasDetected)])
        indexBuild.enter()
        let background = backgroundHandle
        ioQueue.async(.read) {
            defer { background.indexBuild.leave() }
            // A cache its owner let go of before its build began (the queue was busy) builds
            // nothing: its close did not wait, and may have let another cache open the folder.
            let begins = background.state.withLock { s in
                defer { s.indexBuildIsSettled = true }
                return !s.indexBuildIsSettled
            }
            if begins { background.buildIndex() }
        }
        // A writer sharing its folder answers from an index that is the folder's from the start.
        if sharedFolder != nil { waitForIndex() }
        if options.flushesOnBackground, !options.isReadOnly { lifecycle.start(flushing: self) }
    }

    /// The owner's handle on a cache just opened.
    private init(
        options: DiskCacheOptions, layout: DiskLayout, io: FileIO, records: RecordFile, blockSize: Int, directoryLock: DirectoryLock?,
        sharedFolder: SharedFolder?
    ) {
        self.options = options
        self.layout = layout
        self.io = io
        self.records = records
        self.blockSize = blockSize
        self.expiryRule = ExpiryRule(
            defaultExpiration: options.effectiveDefaultExpiration, roundsToNearestSecond: options.roundsTimeToNearestSecond)
        var initialState = State()
        initialState.staleRetention = options.staleRetention
        initialState.policyCapacity = options.policy == .adaptive && !options.isReadOnly ? options.sizeLimit : 0
        self.state = SharedMutex(initialState)
        self.indexBuild = DispatchGroup()
        self.ioQueue = WorkQueue(
            label: "\(options.name).disk", qualities: options.workQualityOfService,
            maximumConcurrent: options.maximumConcurrentOperations, measuresWaits: options.timingHandler != nil)
        self.collectionGate = SharedMutex(())
        self.snapshotGate = SharedMutex(SnapshotState(isOnDisk: !options.isReadOnly))
        self.keyLocks = StripedLock()
        self.directoryLock = SharedMutex(directoryLock)
        self.lifecycle = LifecycleFlusher()
        self.sharedFolder = sharedFolder
        self.temporaryCounter = SharedCounter()
        self.processID = ProcessIdentity.processID
        self.isClosed = SharedFlag()
        self.isOwner = true
    }

    /// A handle on `owner`'s cache that does not own it: every lock, queue and piece of state is
    /// the owner's own (shared, not copied), but its release closes nothing.
    private init(sharingWith owner: DiskCache) {
        options = owner.options
        layout = owner.layout
        io = owner.io
        records = owner.records
        blockSize = owner.blockSize
        expiryRule = owner.expiryRule
        state = owner.state
        indexBuild = owner.indexBuild
        ioQueue = owner.ioQueue
        collectionGate = owner.collectionGate
        snapshotGate = owner.snapshotGate
        keyLocks = owner.keyLocks
        directoryLock = owner.directoryLock
        lifecycle = owner.lifecycle
        sharedFolder = owner.sharedFolder
        temporaryCounter = owner.temporaryCounter
        processID = owner.processID
        isClosed = owner.isClosed
        isOwner = false
    }

    /// The handle the cache's own background work (the index build, scheduled collections,
    /// compactions) and a ``HybridCache``'s queued disk writes hold: it shares the cache with
    /// the owner's handle but does not keep it open. The owner's last release closes the cache
    /// at once, whatever work is under way; that work then finds it closed and stops.
    var backgroundHandle: DiskCache {
        isOwner ? DiskCache(sharingWith: self) : self
    }

    deinit {
        if isOwner { closeNow(waitingForIndexBuild: false) }
    }

    // MARK: - Records

    /// Returns the payload stored under `key`: `record(forKey:)`'s data.
    /// - Returns: The payload, or `nil` when the record is absent, expired (and unlocked) or corrupt.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``.
    public func value(forKey key: String) throws(CacheError) -> Data? {
        try record(forKey: key)?.data
    }

    /// Returns the record stored under `key`: its payload and what its header says.
    ///
    /// A hit counts as a use: it moves the record to the most recently used end and, for records
    /// stored with ``Expiry/default``, slides its expiry. The new times are kept in the index and
    /// written to the header in batches, so a read performs no write. Once the index is
    /// complete, a writable cache answers a miss from it without touching the disk (it owns the
    /// directory; a record copied in behind its back appears at the next open, unless it was
    /// copied while the cache was open into a folder the cache changed meanwhile: see
    /// <doc:OnDiskFormat>, "Index snapshot").
    /// - Returns: The record, or `nil` when it is absent, expired (and unlocked) or corrupt. An
    ///   expired record's file is removed, unless it expired less than ``staleRetention`` ago
    ///   (then it stays for stale reads until a collection past the retention, a removal or a
    ///   store ends it). A corrupt record's file is removed and reported as
    ///   ``CacheEvent/corruptRecordRemoved(key:file:reason:)``.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``.
    public func record(forKey key: String) throws(CacheError) -> CacheRecord? {
        try timed(.read, key) { () throws(CacheError) in try readRecord(forKey: key) }
    }

    /// `record(forKey:)`, untimed.
    ///
    /// A read takes the index lock twice and one key lock, each for a reason: the index lock,
    /// briefly, to turn the key into its file (or answer a miss without a system call); the
    /// record's key lock across the file's read and the index update that follows, so that no
    /// store, removal or eviction of the record lands between them (the read would otherwise
    /// register a use of a file that was replaced or removed meanwhile); and the index lock
    /// again, inside it, for that update (`_registerUse`). The index lock is never held across
    /// the file's read: other keys' reads and stores go on meanwhile.
    private func readRecord(forKey key: String) throws(CacheError) -> CacheRecord? {
        try checkOpen(key: key)
        // Hashed names are only computed when the index cannot answer: verbatim and custom names
        // are computed first, since computing them is also what rejects an invalid key.
        var computedName: String?
        if case .sha256 = options.keyEncoding {} else { computedName = try options.keyEncoding.fileName(for: key) }
        let ownsDirectory = !options.isReadOnly
        followFolder()
        let lookup: IndexLookup = state.withLock { s in
            if let slot = s.index.slot(forKey: key) {
                // The name and length alone: building the whole entry would copy its key out too.
                // A hashed name stays 32 bytes (see `RecordName`).
                let mark = s.index.mark(ofSlot: slot)
                return .indexed(name: s.index.name(of: mark), fileSize: s.index.fileSize(atSlot: slot), slot: mark)
            }
            // A writer owns its directory, so once its index knows every key, a key it lacks has
            // no file: the miss costs no system call.
            if ownsDirectory, s.knowsEveryKey {
                s.counters.misses += 1
                return .absent
            }
            return .unknown
        }
        let name: RecordName
        var expectedFileSize: Int?
        var indexedSlot: DiskIndex.SlotMark?
        switch lookup {
        case .absent:
            return nil
        case .indexed(let indexedName, let fileSize, let slot):
            name = indexedName
            indexedSlot = slot
            expectedFileSize = fileSize > 0 ? fileSize : nil
        case .unknown:
            let text: String
            if let computedName { text = computedName } else { text = try options.keyEncoding.fileName(for: key) }
            name = RecordName(text)
            // The same answer by name, for indexes with unkeyed entries or unreadable files.
            if ownsDirectory,
                state.withLock({ s in
                    guard s.isKnownAbsent(text) else { return false }
                    s.counters.misses += 1
                    return true
                })
            {
                return nil
            }
        }
        // The path is built only when the record's file is opened or changed: a hit through a
        // kept descriptor needs none.
        let now = options.clock.now
        var events: [CacheEvent] = []
        // Hashed once: for the key lock's stripe and the kept descriptor's tag.
        let nameHash = name.hash
        let record: CacheRecord? = try keyLocks.withLock(forNameHash: nameHash) { () throws(CacheError) -> CacheRecord? in
            let result: RecordReadResult
            do throws(Errno) {
                result = try records.read(
                    layout.path(for: name.string), verifyPayload: options.verifiesPayloadChecksum, expectedKey: key,
                    expectedFileSize: expectedFileSize, beneath: layout.folderLayout, keptAs: name, nameHash: nameHash)
            } catch {
                throw CacheError(.ioFailure, "cannot read the record", key: key, path: layout.path(for: name.string), errno: error.rawValue)
            }
            switch consume result {
            case .missing, .foreign:
                // A file that is no record (one Larder did not write) is a miss too, left in place.
                let text = name.string
                state.withLock { s in
                    s.counters.misses += 1
                    s.forget(text)
                }
                return nil
            case .corrupt(let reason):
                let text = name.string
                events.append(_removeCorrupt(name: text, key: key, path: layout.path(for: text), reason: reason))
                return nil
            case .record(let contents):
                // `read` checked any stored key against `key`.
                return _registerUse(
                    name: name, key: key, path: layout.path(for: name.string), contents: contents, now: now, countsAsRead: true,
                    slot: indexedSlot)
            }
        }
        emit(events)
        return record
    }

    /// Whether a live (unexpired or locked) record is stored under `key`. Not a use: the record
    /// keeps its place and its expiry, and no statistic changes. An invalid key, or a failure
    /// to read the record, answers `false`.
    ///
    /// It answers what `record(forKey:)` would: `false` for an expired record, also one kept for
    /// stale reads (``staleRetention``), which a plain read misses though a hybrid's
    /// load-through read may serve it as a stale value.
    public func contains(_ key: String) -> Bool {
        guard let name = try? options.keyEncoding.fileName(for: key) else { return false }
        return containsLiveRecord(named: name)
    }

    /// Records a use of `key` without reading its payload: it becomes the most recently used
    /// and, for `ttl` 0 records, its expiry slides (SPT's `touchDataForKey`).
    /// - Returns: `false` when no live record is stored under `key`.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``.
    @discardableResult
    public func touch(forKey key: String) throws(CacheError) -> Bool {
        try timed(.touch, key) { () throws(CacheError) in try touchRecord(forKey: key) }
    }

    /// `touch(forKey:)`, untimed.
    private func touchRecord(forKey key: String) throws(CacheError) -> Bool {
        try checkOpen(key: key)
        let name = try options.keyEncoding.fileName(for: key)
        let path = layout.path(for: name)
        let now = options.clock.now
        var events: [CacheEvent] = []
        let touched = try withKeyLock(name) { () throws(CacheError) -> Bool in
            guard let contents = try _readValidHeader(name: name, key: key, path: path, events: &events) else { return false }
            return _registerUse(name: RecordName(name), key: key, path: path, contents: contents, now: now, countsAsRead: false) != nil
        }
        emit(events)
        return touched
    }

    /// Removes the record stored under `key`. With ``Durability/fsync``, the removal survives a
    /// power loss once this returns (the record's folder is synced).
    /// - Returns: Whether a live record was removed: `false` when there was none, or when the
    ///   index knew the record had expired (its file is removed all the same). A file in the
    ///   record's place that is not a record (no record magic, not a regular file) stays, and
    ///   the answer is `false`.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/readOnly``,
    ///   ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``. With ``Durability/fsync``,
    ///   when only the sync of the folder fails, the record is already gone (and unindexed) but
    ///   may come back after a power loss; the error says so.
    @discardableResult
    public func remove(forKey key: String) throws(CacheError) -> Bool {
        try timed(.remove, key) { () throws(CacheError) in try removeRecord(forKey: key) }
    }

    /// `remove(forKey:)`, untimed.
    private func removeRecord(forKey key: String) throws(CacheError) -> Bool {
        try checkWritable(key: key)
        return try removeRecord(named: options.keyEncoding.fileName(for: key), key: key)
    }

    /// `remove(forKey:)` once the record's file name is known: removes the file `name` under
    /// its key lock and drops it from the index. `key`, when known, names the record in errors.
    /// - Returns: Whether a live record was removed.
    func removeRecord(named name: String, key: String?) throws(CacheError) -> Bool {
        let path = layout.path(for: name)
        let removedLive = try changingRecord(name) { () throws(CacheError) -> Bool in
            // A file whose header this process has not read or written is looked at first (an
            // index snapshot vouches for names, not for what a file holds now): one that is no
            // record (a file Larder did not write) is left, and there was no record to remove.
            if !holdsVerifiedHeader(name), case .foreign? = try? records.read(path, readPayload: false) {
                state.withLock { $0.forget(name) }
                return false
            }
            let unlinked: Bool
            do throws(Errno) { unlinked = try io.unlink(path) } catch {
                throw CacheError(.ioFailure, "cannot remove the record", key: key, path: path, errno: error.rawValue)
            }
            let now = options.clock.now
            let wasExpired = state.withLock { s in
                defer { s.forget(name) }
                return s.index[name].map { isExpired($0, now: now) } ?? false
            }
            return unlinked && !wasExpired
        }
        guard let removedLive else { throw closedError(key: key) }
        // Without this sync a power loss could bring back a record removed under `.fsync`; it
        // runs even when the file was already gone, since what removed it (an eviction, whose
        // unlink is not synced) may not have reached the disk either (the power-loss tests
        // check both, docs/RELIABILITY.md).
        try syncFoldersAfterRemoval([layout.folder(for: name)], key: key)
        return removedLive
    }

    /// Under ``Durability/fsync``, syncs the folders records were removed from, so that the
    /// removals survive a power loss; does nothing under ``Durability/atomicRename``.
    /// - Throws: ``CacheError/Code/ioFailure``: the records are gone (and unindexed), but may
    ///   come back after a power loss.
    func syncFoldersAfterRemoval(_ folders: some Sequence<String>, key: String? = nil) throws(CacheError) {
        guard options.durability == .fsync else { return }
        for folder in folders {
            do throws(Errno) {
                try records.syncFolder(folder)
            } catch let error where error == .noSuchFileOrDirectory || error == .notADirectory {
                // No folder, so no record in it.
            } catch {
                throw CacheError(
                    .ioFailure, "the record was removed, but its folder could not be synced, so it may come back after a power loss",
                    key: key, path: folder, errno: error.rawValue)
            }
        }
    }

    /// Removes the records stored under `keys`, as `remove(forKey:)` does for each.
    /// - Returns: The keys whose files were removed, in the order given.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/readOnly``,
    ///   ``CacheError/Code/ioFailure`` (the records before the failing one are removed).
    /// - Complexity: O(*k*) file removals for *k* keys.
    @discardableResult
    public func remove(forKeys keys: [String]) throws(CacheError) -> [String] {
        try KeyBatch.removing(keys) { (key: String) throws(CacheError) in try remove(forKey: key) }
    }

    /// Locks the records under `keys` against expiry and collection (up to the size limit),
    /// incrementing each one's lock count.
    /// - Returns: The keys that were locked. Absent, corrupt, and expired unlocked records are not.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    @discardableResult
    public func lock(forKeys keys: [String]) throws(CacheError) -> [String] {
        try changeLockCount(keys: keys, by: 1)
    }

    /// Unlocks the records under `keys`, decrementing each one's lock count (never below 0).
    /// - Returns: The keys whose lock count went down.
    /// - Throws: ``CacheError/Code/invalidKey``, ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    @discardableResult
    public func unlock(forKeys keys: [String]) throws(CacheError) -> [String] {
        try changeLockCount(keys: keys, by: -1)
    }

    /// The keys of every record whose key starts with `prefix` (every key for "", the default),
    /// least recently used first. For records that do not store their key (SPT records under
    /// another encoding), the file name. Waits for the index.
    ///
    /// Expired records are left out, as SPTPersistentCache leaves them out of what its
    /// `loadDataForKeysWithPrefix:chooseKeyCallback:` offers (locked records never expire).
    /// - Parameters:
    ///   - prefix: The prefix the keys share; "" for every key.
    ///   - includingExpired: Whether to list expired records too, which a collection has not
    ///     removed yet (`false`).
    /// - Throws: ``CacheError/Code/closed``.
    /// - Complexity: O(*n*) in the number of records.
    public func keys(withPrefix prefix: String = "", includingExpired: Bool = false) throws(CacheError) -> [String] {
        try checkOpen(key: nil)
        waitForIndex()
        followFolder()
        let now = options.clock.now
        return state.withLock { s in
            var result: [String] = []
            s.index.forEachLeastRecentFirst { entry in
                let key = entry.key ?? entry.name
                if key.hasPrefix(prefix), includingExpired || !isExpired(entry, now: now) { result.append(key) }
                return true
            }
            return result
        }
    }

    // MARK: - Helpers

    /// Bytes a file of `length` bytes occupies: its length rounded up to the block size.
    func diskSize(_ length: Int) -> Int {
        (length + blockSize - 1) / blockSize * blockSize
    }

    /// `time` (seconds since the epoch, from a ``CacheClock``) in whole seconds for a header,
    /// clamped to `0 ... RecordHeader.maximumTimestamp` (the end of year 9999), the range a
    /// header is read back in: never a trap, whatever the clock says (a NaN is 0, infinities
    /// and times beyond the range are its ends).
    static func seconds(_ time: Double) -> UInt64 {
        guard time > 0 else { return 0 }
        return time >= Double(RecordHeader.maximumTimestamp) ? RecordHeader.maximumTimestamp : UInt64(time.rounded(.down))
    }

    /// `time` in whole milliseconds, clamped as ``seconds(_:)`` is (to the end of year 9999).
    static func milliseconds(_ time: Double) -> UInt64 {
        guard time > 0 else { return 0 }
        let most = RecordHeader.maximumTimestamp * 1000
        let scaled = time * 1000
        return scaled >= Double(most) ? most : UInt64(scaled.rounded(.down))
    }

    /// Runs `body` holding the key lock of the record file `name`: reads and uses of one record.
    func withKeyLock<T, E: Error>(_ name: String, _ body: () throws(E) -> T) throws(E) -> T {
        try keyLocks.withLock(forName: name, body)
    }

    /// ``withKeyLock(_:_:)`` without waiting: runs `body` holding the key lock of `name` when no
    /// thread holds it, or returns `nil` at once. For a caller holding a lock that a key lock's
    /// holder may wait for (the change lock of a writer sharing its folder), where waiting for
    /// the key lock could deadlock.
    func withKeyLockIfAvailable<T>(_ name: String, _ body: () -> T) -> T? {
        keyLocks.withLockIfAvailable(forName: name, body)
    }

    /// Runs `body` holding every key lock, so that no read or change of any record is under way.
    func withEveryKeyLock(_ body: () -> Void) {
        keyLocks.withEveryLock(body)
    }

    /// Runs `body`, which changes the record file `name` on disk and in the index, holding its
    /// key lock, with the index snapshot withdrawn first (see ``changingRecords(name:_:)``). The file's
    /// kept descriptor, if any, is retired before the lock is released, whether `body` succeeded
    /// or not, so that no later read uses a descriptor of a file `body` replaced or removed.
    ///
    /// A writer sharing its folder with writers that changed records since its own last change
    /// holds the record's current file open across the change, and closes it after the change
    /// lock is let go of: the kernel frees a replaced or removed file's blocks at its last close,
    /// which then costs the other writers no wait for the change lock. A writer that finds no
    /// change of another since its own (alone on the folder, or the others idle) frees them
    /// inside, saving the open and the close.
    /// - Returns: What `body` returned, or `nil` when the cache is closing (`body` did not run).
    @discardableResult
    func changingRecord<T, E: Error>(_ name: String, _ body: () throws(E) -> T) throws(E) -> T? {
        try changingRecords(name: name) { () throws(E) -> T in
            try keyLocks.withLock(forName: name) { () throws(E) -> T in
                defer { records.descriptors?.retire(name) }
                let others = sharedFolder.map { !$0.log.isUnchangedSinceLastHold } ?? false
                let previous: Int32? = if others { try? io.open(layout.path(for: name), O_RDONLY) } else { nil }
                defer { if let previous { io.close(previous) } }
                return try _sharingChange(body)
            }
        }
    }

    /// The error of a change refused because ``close()`` has begun.
    func closedError(key: String?) -> CacheError {
        CacheError(.closed, "the cache was closed", key: key, path: layout.root)
    }

    func nextTemporaryPath() -> String {
        let n = temporaryCounter.next()
        return layout.temporaryFolder + "/\(processID)-\(n)"
    }

    func emit(_ events: [CacheEvent]) {
        guard let handler = options.eventHandler else { return }
        for event in events { handler(event) }
    }

    func checkOpen(key: String?) throws(CacheError) {
        if isClosed.isSet { throw closedError(key: key) }
    }

    func checkWritable(key: String?) throws(CacheError) {
        try checkOpen(key: key)
        if options.isReadOnly {
            throw CacheError(.readOnly, "the cache was opened read-only", key: key, path: layout.root)
        }
    }

    /// Whether an indexed record has expired at `now`.
    func isExpired(_ entry: IndexEntry, now: Double) -> Bool {
        expiryRule.isExpired(lockCount: entry.lockCount, ttl: entry.ttl, anchor: entry.updateTime, now: now)
    }

    /// Whether a record whose header was just read has expired at `now`, measured from the later
    /// of its header's update time and the index's (a use the header does not show yet).
    func isExpired(_ header: RecordHeader, name: String, now: Double) -> Bool {
        expiryRule.isExpired(lockCount: header.refCount, ttl: header.ttl, anchor: anchor(of: header, name: name), now: now)
    }

    /// The update time that anchors a record's expiry (see ``ExpiryRule/anchor(ttl:headerUpdateTime:indexedUpdateTime:)``).
    func anchor(of header: RecordHeader, name: String) -> UInt64 {
        let indexed = header.ttl == 0 ? state.withLock { $0.index[name]?.updateTime } : nil
        return expiryRule.anchor(ttl: header.ttl, headerUpdateTime: header.updateTimeSec, indexedUpdateTime: indexed)
    }

    /// Reads a header (and stored key) under the caller's key lock, mapping failures to ``CacheError``.
    func readHeader(path: String, key: String?) throws(CacheError) -> RecordReadResult {
        do {
            return try records.read(path, readPayload: false, expectedKey: key)
        } catch {
            throw CacheError(.ioFailure, "cannot read the record's header", key: key, path: path, errno: error.rawValue)
        }
    }

    /// Reads a record's header under the caller's key lock; a missing record, or a file that is
    /// not one (left in place), is forgotten and a corrupt one removed (its event appended), and
    /// all return `nil`. Expects the key lock of `name` held.
    func _readValidHeader(name: String, key: String, path: String, events: inout [CacheEvent]) throws(CacheError) -> RecordContents? {
        switch try readHeader(path: path, key: key) {
        case .missing, .foreign:
            state.withLock { $0.forget(name) }
            return nil
        case .corrupt(let reason):
            events.append(_removeCorrupt(name: name, key: key, path: path, reason: reason))
            return nil
        case .record(let contents):
            return contents
        }
    }

    /// Whether the index holds `name` with a header this process read or wrote
    /// (``DiskIndex/isHeaderVerified(slot:)``): a record file Larder may remove unread.
    func holdsVerifiedHeader(_ name: String) -> Bool {
        state.withLock { s in s.index.slot(of: name).map { s.index.isHeaderVerified(slot: $0) } ?? false }
    }

    /// Removes a corrupt record's file (unless read-only) and counts it, as a miss too unless
    /// a collection found it (`countsAsMiss`). Expects the key lock of `name` held.
    func _removeCorrupt(name: String, key: String?, path: String, reason: CorruptionReason, countsAsMiss: Bool = true) -> CacheEvent {
        changingRecords(name: name) {
            _sharingChange {
                // Only files that start as a record does reach here (``RecordReadResult/foreign``
                // covers the rest), so what goes is a damaged record, never a file Larder did not write.
                if !options.isReadOnly { _ = try? io.unlink(path) }
                records.descriptors?.retire(name)
                state.withLock { $0.recordCorruptRemoval(name, countsAsMiss: countsAsMiss) }
            }
        }
        return .corruptRecordRemoved(key: key, file: path, reason: reason)
    }

    /// Records a use of a valid record read under its key lock; returns the record, or `nil`
    /// when it has expired (removing it, unless read-only or expired less than the stale
    /// retention ago: ``staleRetention``). Expects the key lock of `name` held.
    /// `path` is computed only when the record has expired. `slot`, where the caller's lookup
    /// found the name's entry, spares a second lookup while it still holds that entry. The
    /// payload moves from `contents` into the record returned, and the state lock's closure
    /// takes only the fields it needs: each copy of `contents` retained and released its payload.
    func _registerUse(
        name: RecordName, key: String, path: @autoclosure () -> String, contents: consuming RecordContents, now: Double,
        countsAsRead: Bool, slot known: DiskIndex.SlotMark? = nil
    ) -> CacheRecord? {
        let header = contents.header
        let storedKey = contents.storedKey
        let vouch = contents.vouch
        let charged = diskSize(contents.fileSize)
        let nowSeconds = expiryRule.headerSeconds(now)
        let nowMs = Self.milliseconds(now)
        let tracksAccess = !options.isReadOnly
        let outcome: (expired: Bool, retained: Bool, anchor: UInt64) = state.withLock { s in
            // One lookup of the name for the anchor and the use (each costs a hash of the name),
            // none when the caller's slot still holds it (a comparison of the 32 bytes of a hashed
            // name as the slot held them at the caller's lookup, or of the name), and the update
            // time alone: `s.index[name]` would build the whole entry, its strings too.
            let slot = known.flatMap { s.index.slot($0, holds: name.string) ? $0.slot : nil } ?? s.index.slot(of: name.string)
            let anchor = expiryRule.anchor(
                ttl: header.ttl, headerUpdateTime: header.updateTimeSec, indexedUpdateTime: slot.map { s.index.updateTime(atSlot: $0) })
            if expiryRule.isExpired(lockCount: header.refCount, ttl: header.ttl, anchor: anchor, now: now) {
                // Within the stale retention the record stays for stale reads: a miss, and no
                // expiration, since nothing is dropped.
                let retained = isRetained(ttl: header.ttl, anchor: anchor, now: now, retention: s.staleRetention)
                if countsAsRead {
                    s.counters.misses += 1
                    if !retained { s.counters.expirations += 1 }
                }
                return (true, retained, anchor)
            }
            // A use slides a default-expiry record's anchor to now.
            let newAnchor = header.ttl == 0 ? max(anchor, nowSeconds) : header.updateTimeSec
            if countsAsRead {
                s.counters.hits += 1
                s.counters.bytesRead += Int(header.payloadSizeBytes)
            }
            s.recordUse(
                of: name,
                DiskIndex.Use(
                    key: storedKey ?? key, diskSize: charged, updateTime: newAnchor, lastAccessMs: nowMs, ttl: header.ttl,
                    lockCount: header.refCount),
                vouching: vouch, tracksAccess: tracksAccess, slot: .some(slot))
            return (false, false, newAnchor)
        }
        if outcome.retained { return nil }
        if outcome.expired {
            let name = name.string
            changingRecords(name: name) {
                _sharingChange {
                    if !options.isReadOnly { _ = try? io.unlink(path()) }
                    records.descriptors?.retire(name)
                    state.withLock { $0.forget(name) }
                }
            }
            return nil
        }
        return CacheRecord(
            key: key, data: contents.payload.take() ?? Data(), expiry: header.ttl == 0 ? .default : .seconds(TimeInterval(header.ttl)),
            lockCount: Int(header.refCount), updateTime: Double(outcome.anchor),
            lastAccessTime: Double(nowMs) / 1000,
            expirationTime: expiryRule.expirationTime(lockCount: header.refCount, ttl: header.ttl, anchor: outcome.anchor))
    }

    private func changeLockCount(keys: [String], by delta: Int) throws(CacheError) -> [String] {
        var changed: [String] = []
        var events: [CacheEvent] = []
        defer { emit(events) }
        let now = options.clock.now
        for key in keys {
            let didChange = try timed(delta > 0 ? .lock : .unlock, key) { () throws(CacheError) -> Bool in
                try changeLockCount(key: key, by: delta, now: now, events: &events)
            }
            if didChange { changed.append(key) }
        }
        return changed
    }

    /// Changes one record's lock count by `delta`.
    private func changeLockCount(key: String, by delta: Int, now: Double, events: inout [CacheEvent]) throws(CacheError) -> Bool {
        try checkWritable(key: key)
        let name = try options.keyEncoding.fileName(for: key)
        let path = layout.path(for: name)
        let changed = try changingRecord(name) { () throws(CacheError) -> Bool in
            guard let contents = try _readValidHeader(name: name, key: key, path: path, events: &events) else { return false }
            var header = contents.header
            if delta > 0 {
                // Locking an expired, unlocked record fails for that key; under
                // `refusesLockingElapsedRecords` so does locking a locked one whose time has run
                // out (SPT asks `isDataExpiredWithHeader:`, which ignores the lock count).
                if isExpired(header, name: name, now: now) { return false }
                if options.refusesLockingElapsedRecords,
                    expiryRule.hasElapsed(ttl: header.ttl, anchor: anchor(of: header, name: name), now: now)
                {
                    return false
                }
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
            let entry = IndexEntry(
                name: name, key: contents.storedKey ?? key, diskSize: diskSize(contents.fileSize),
                fileSize: contents.vouchedFileSize(previous: indexed?.fileSize ?? 0), updateTime: header.updateTimeSec,
                lastAccessMs: header.lastAccessMilliseconds ?? header.updateTimeSec &* 1000, ttl: header.ttl, lockCount: header.refCount
            )
            // A lock is not a use: the record keeps its place in the LRU order.
            state.withLock { $0.replaceKeepingPosition(entry) }
            return true
        }
        guard let changed else { throw closedError(key: key) }
        return changed
    }

    /// Folds the index's newer access times into a header about to be written.
    func _mergeAccessTimes(into header: inout RecordHeader, from entry: IndexEntry?) {
        guard let entry, entry.isAccessDirty else { return }
        if header.ttl == 0 { header.updateTimeSec = max(header.updateTimeSec, entry.updateTime) }
        header.lastAccessMilliseconds = max(header.lastAccessMilliseconds ?? 0, entry.lastAccessMs)
    }
}
