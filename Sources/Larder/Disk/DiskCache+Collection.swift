import Dispatch
import Foundation

/// One collection pass's outcome as it accumulates: what it removed, and the events to emit
/// once the pass has released its locks.
struct CollectionPass {
    /// What the pass removed, and why.
    var report = CollectionReport()
    /// Events for the cache's handler.
    var events: [CacheEvent] = []
    /// The shard folders the pass removes files from, one set a lane (see
    /// ``DiskCache/lane(of:)``), each opened on its lane's first removal from it.
    var folders: [CollectionFolders?] = [nil, nil]

    /// The folders of `lane`, made on first use, each lane with half the bound of open folders.
    mutating func folders(lane: Int, io: FileIO, layout: DiskLayout) -> CollectionFolders {
        if let folders = folders[lane] { return folders }
        let made = CollectionFolders(io: io, layout: layout, limit: max(1, CollectionFolders.defaultLimit / 2))
        folders[lane] = made
        return made
    }

    /// Takes what `other` (one victim's removal) removed and reported.
    mutating func absorb(_ other: CollectionPass) {
        report.removed += other.report.removed
        events += other.events
    }
}

extension DiskCache {
    /// How many records a collection examines or removes per acquisition of the cache's lock.
    static let collectionBatch = 256

    /// Runs one collection now: removes the corrupt records found when the index was built or
    /// met on the way (counted in ``CacheStatistics/corruptRecordsRemoved`` and reported as
    /// ``CacheEvent/corruptRecordRemoved(key:file:reason:)``, not in the report), expired
    /// unlocked records, then, while the cache is over its effective limits, the least recently
    /// used unlocked records; if locked records alone still exceed the size limit, the least
    /// recently used locked records too.
    ///
    /// The pass takes the cache's lock a batch at a time, so loads and stores of other keys go on
    /// meanwhile. A batch of 16 removals or more is split in two by shard folder and removed on
    /// this thread and one of Dispatch's at once, so that a volume that makes each removal wait
    /// (one that discards freed blocks as they are freed) waits for two at a time; the report
    /// and the events list the removals in the order the pass chose them either way.
    ///
    /// Access times held by the index are written back, and the index's changes since the last
    /// collection are appended to its journal beside the snapshot (once the journal
    /// outgrows a quarter of the snapshot, a new snapshot is written in the background, on the
    /// cache's utility queue); the next change withdraws them again, so a crash never leaves a
    /// stale index on disk.
    /// A folder deleted behind the cache's back, before or during the pass, is made again and
    /// the index restarted (``CacheEvent/folderRecreated(path:)``); a failure to make it is
    /// reported as an event, not thrown.
    /// - Returns: What was removed, and why.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/closed``.
    /// - Complexity: Proportional to what is removed (plus the records read since the last
    ///   collection, whose access times are written back): expired records come from the
    ///   index's expiry order and the others from the least recently used end, and the index's
    ///   journal gets only the changes.
    @discardableResult
    public func collectGarbage() throws(CacheError) -> CollectionReport {
        try checkWritable(key: nil)
        waitForIndex()
        var pass = CollectionPass()
        // A folder deleted behind the cache's back is made again, before the pass and after it
        // (it may go while the pass runs): the index converges, and the snapshot lands there.
        pass.events += recoverRemovedFolderReportingEvents()
        collectionGate.withLock { _ in
            pass.events += writeBackAccessTimes()
            removeCorruptSuspects(in: &pass)
            removeExpired(in: &pass)
            let limit = effectiveSizeLimit(forceRefresh: true)
            prune(sizeLimit: limit, countLimit: options.countLimit, excluding: nil, reason: nil, in: &pass)
            pass.folders = [nil, nil]  // closes them
            pass.events += recoverRemovedFolderReportingEvents()
            state.withLock { s in
                s.counters.collections += 1
                pass.report.remainingCount = s.index.count
                pass.report.remainingSize = s.index.totalSize
            }
            pass.report.effectiveSizeLimit = limit == Int.max ? 0 : limit
            pass.events += writeSnapshot()
        }
        pass.events.append(.collectionFinished(pass.report))
        emit(pass.events)
        return pass.report
    }

    /// Starts collecting every ``DiskCacheOptions/effectiveGarbageCollectionInterval`` seconds on a
    /// background timer (not the main run loop). Scheduling twice is harmless; the timer stops
    /// when the cache closes or goes away. A read-only or closed cache does not collect.
    public func scheduleGarbageCollection() {
        guard !options.isReadOnly else { return }
        state.withLock { s in
            guard s.timer == nil, !isClosed.load(ordering: .acquiring) else { return }
            let timer = DispatchSource.makeTimerSource(queue: ioQueue.queue)
            let interval = options.effectiveGarbageCollectionInterval
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
            // Each tick queues a collection as `.collection` work: its quality of service, and a
            // place in line when the cache bounds its concurrent operations.
            timer.setEventHandler { [weak self] in
                self?.ioQueue.async(.collection) { [weak self] in _ = try? self?.collectGarbage() }
            }
            timer.resume()
            s.timer = timer
        }
    }

    /// Stops scheduled collection. Harmless when none is scheduled.
    public func unscheduleGarbageCollection() {
        let timer = state.withLock { s in
            defer { s.timer = nil }
            return s.timer
        }
        timer?.cancel()
    }

    /// Whether scheduled collection is on.
    public var isGarbageCollectionScheduled: Bool { state.withLock { $0.timer != nil } }

    // MARK: - Management

    /// Removes every record, corrupt ones too (SPT's `prune`). Files that are not records Larder
    /// or SPTPersistentCache could have written (no record magic, not a regular file, or not
    /// where the layout puts a record) stay: the cache never removes a file it did not write.
    /// With ``Durability/fsync``, the removals survive a power loss once this returns.
    /// A folder that is gone holds nothing to remove; one that cannot be listed is an error
    /// (after the records the index knows of are removed), since its records remain.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAll() throws(CacheError) {
        try checkWritable(key: nil)
        waitForIndex()
        var events: [CacheEvent] = []
        var failure: CacheError?
        var names: [String]
        do throws(Errno) {
            let listing = try layout.recordNames(io: io)
            names = listing.names
            if !listing.isComplete {
                failure = CacheError(.ioFailure, "cannot list a shard folder: the records in it remain", path: layout.root)
            }
        } catch {
            events.append(.ioError(operation: "list", path: layout.root, errno: error.rawValue))
            names = []
            if error != .noSuchFileOrDirectory {
                failure = CacheError(
                    .ioFailure, "cannot list the cache folder: records the index does not know remain", path: layout.root,
                    errno: error.rawValue)
            }
        }
        // Records the index knows of but the listing missed (an unlistable folder) go too.
        let listed = Set(names)
        names += state.withLock { s in s.index.entriesLeastRecentFirst.map(\.name) }.filter { !listed.contains($0) }
        for name in names {
            let path = layout.path(for: name)
            let ran: Void? = changingRecord(name) {
                // A file whose header this process read or wrote is a record; any other goes only
                // if it starts as a record does (a damaged one), never if it is foreign.
                if !holdsVerifiedHeader(name) {
                    switch try? records.read(path, readPayload: false) {
                    case .foreign?, .missing?:
                        state.withLock { $0.forget(name) }
                        return
                    case nil:
                        // Unreadable, so it cannot be told from a file Larder did not write: left.
                        return
                    case .record?, .corrupt?: break
                    }
                }
                do throws(Errno) {
                    try io.unlink(path)
                    state.withLock { $0.forget(name) }
                } catch {
                    failure = failure ?? CacheError(.ioFailure, "cannot remove a record", path: path, errno: error.rawValue)
                }
            }
            if ran == nil { failure = failure ?? closedError(key: nil) }
        }
        emit(events)
        if let failure { throw failure }
        if options.durability == .fsync { try syncFoldersAfterRemoval(recordFolders()) }
    }

    /// Removes every unlocked record (SPT's `wipeNonLockedFiles`); durably under ``Durability/fsync``.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAllUnlocked() throws(CacheError) {
        try removeAll(where: { $0 == 0 })
    }

    /// Removes every locked record (SPT's `wipeLockedFiles`); durably under ``Durability/fsync``.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAllLocked() throws(CacheError) {
        try removeAll(where: { $0 > 0 })
    }

    /// The bytes every record occupies on disk (lengths rounded up to the block size). Waits for the index.
    public var totalSize: Int {
        waitForIndex()
        return state.withLock { $0.index.totalSize }
    }

    /// The bytes locked records occupy on disk. Waits for the index.
    public var lockedSize: Int {
        waitForIndex()
        return state.withLock { $0.index.lockedSize }
    }

    /// The number of records. Waits for the index.
    public var count: Int {
        waitForIndex()
        return state.withLock { $0.index.count }
    }

    /// Counters since the cache opened: hits, misses, insertions (stores), expirations found by
    /// reads, evictions by reason, bytes read and written, corrupt records removed, collections.
    public var statistics: CacheStatistics { state.withLock { $0.counters.statistics } }

    // MARK: - Internals

    /// Every folder that may hold records: the root and, sharded, each shard folder in it.
    /// Removals sync them all under ``Durability/fsync``: a record evicted earlier (an unsynced
    /// unlink) could otherwise come back after a power loss that follows a `removeAll`.
    func recordFolders() -> [String] {
        var folders = [layout.root]
        guard layout.folderLayout == .sharded, let entries = try? io.listDirectory(layout.root) else { return folders }
        for entry in entries where entry.isDirectory != false {
            guard let name = entry.name, !DiskLayout.isReserved(name), DiskLayout.shard(for: name) == name else { continue }
            folders.append(layout.root + "/" + name)
        }
        return folders
    }

    private func removeAll(where lockCountMatches: @escaping (UInt32) -> Bool) throws(CacheError) {
        try checkWritable(key: nil)
        waitForIndex()
        let names = state.withLock { s in
            s.index.entriesLeastRecentFirst.filter { lockCountMatches($0.lockCount) }.map(\.name)
        }
        var failure: CacheError?
        var events: [CacheEvent] = []
        for name in names {
            let path = layout.path(for: name)
            let ran: Void? = changingRecord(name) {
                // The header is the truth for the lock count; the index may lag a snapshot.
                switch try? records.read(path, readPayload: false) {
                case .record(let contents)?:
                    guard lockCountMatches(contents.header.refCount) else { return }
                case .corrupt(let reason)?:
                    events.append(_removeCorrupt(name: name, key: nil, path: path, reason: reason))
                    return
                case .foreign?:
                    // Not a record: no longer indexed, and left where it is.
                    state.withLock { $0.forget(name) }
                    return
                default:
                    break
                }
                do throws(Errno) {
                    try io.unlink(path)
                    state.withLock { $0.forget(name) }
                } catch {
                    failure = failure ?? CacheError(.ioFailure, "cannot remove a record", path: path, errno: error.rawValue)
                }
            }
            if ran == nil { failure = failure ?? closedError(key: nil) }
        }
        emit(events)
        if let failure { throw failure }
        if options.durability == .fsync { try syncFoldersAfterRemoval(recordFolders()) }
    }

    /// Removes the files the index build found corrupt (which it keeps out of the index, and
    /// which a load would remove on meeting them), counting each: a collection leaves no record
    /// behind that no load could return. Files unreadable for another reason stay as they are.
    /// Expects the collection gate held.
    func removeCorruptSuspects(in pass: inout CollectionPass) {
        let names = state.withLock { $0.suspects }
        for name in names {
            let path = layout.path(for: name)
            changingRecord(name) {
                switch try? records.read(path, readPayload: false) {
                case .corrupt(let reason)?:
                    let key = options.keyEncoding.storesKey ? nil : name
                    pass.events.append(_removeCorrupt(name: name, key: key, path: path, reason: reason, countsAsMiss: false))
                case .missing?, .foreign?:
                    // Gone, or not a record at all (left where it is).
                    state.withLock { $0.forget(name) }
                case .record?, nil:
                    // Readable again, or still unreadable: left for a load to settle.
                    break
                }
            }
        }
    }

    /// Removes expired, unlocked records, a batch at a time, taking them from the index's
    /// expiry order (so the pass costs what it removes, not what the index holds); those a use
    /// renewed since they were taken, or whose headers say otherwise, are kept and queued again.
    /// Expects the collection gate held.
    func removeExpired(in pass: inout CollectionPass) {
        let now = options.clock.now
        var kept: [String] = []
        while true {
            let candidates = state.withLock { s in s.takeExpired(by: expiryRule, now: now, limit: Self.collectionBatch) }
            if candidates.isEmpty { break }
            let removed = removeVictims(candidates.map { ($0.name, .expired) }, in: &pass) { lockCount, ttl, anchor in
                expiryRule.isExpired(lockCount: lockCount, ttl: ttl, anchor: anchor, now: now)
            }
            for (candidate, wasRemoved) in zip(candidates, removed) where !wasRemoved { kept.append(candidate.name) }
        }
        if !kept.isEmpty { state.withLock { s in s.queueForExpiry(kept) } }
    }

    /// Removes least recently used records until the cache is within `sizeLimit` and
    /// `countLimit` (`Int.max` and 0 for none): unlocked ones first, then, while locked records
    /// alone exceed the size limit, locked ones. Expects the collection gate held.
    func prune(sizeLimit: Int, countLimit: Int, excluding: String?, reason: EvictionReason?, in pass: inout CollectionPass) {
        var skipped: Set<ExactName> = []
        for allowLocked in [false, true] {
            while true {
                var victims: [(name: String, reason: EvictionReason)] = []
                state.withLock { s in
                    // Unlocked records go while the cache is over a limit; locked ones only while
                    // locked records alone exceed the size limit (SPT's promise). Judging the
                    // locked pass by the total would let a store racing with the pass cost a
                    // locked record while unlocked ones remain.
                    var size = allowLocked ? s.index.lockedSize : s.index.totalSize
                    var count = s.index.count
                    func over() -> EvictionReason? {
                        if size > sizeLimit { return .sizeLimit }
                        if !allowLocked, countLimit > 0, count > countLimit { return .countLimit }
                        return nil
                    }
                    guard over() != nil else { return }
                    s.index.forEachSlotLeastRecentFirst { slot in
                        guard let limit = over(), victims.count < Self.collectionBatch else { return false }
                        let fields = s.index.slots[Int(slot)]
                        if (fields.lockCount > 0) != allowLocked { return true }
                        let name = s.index.name(atSlot: slot)
                        if ExactName(name) == excluding.map(ExactName.init) || skipped.contains(ExactName(name)) { return true }
                        victims.append((name, reason ?? limit))
                        size -= fields.diskSize
                        count -= 1
                        return true
                    }
                }
                if victims.isEmpty { break }
                let removed = removeVictims(victims, in: &pass) { lockCount, _, _ in (lockCount > 0) == allowLocked }
                for (victim, wasRemoved) in zip(victims, removed) where !wasRemoved { skipped.insert(ExactName(victim.name)) }
            }
        }
    }

    /// A batch of at least this many victims is removed in two lanes at once.
    ///
    /// On a volume mounted with `discard` (ext4's online discard), an `unlinkat` that frees a
    /// record's blocks sleeps until the device has discarded them, and that wait was a third of a
    /// prune's time on the disk (`larder-bench gc`, issue 18). Two lanes overlap those waits; a
    /// smaller batch (a store's trim of a record or two) is not worth waking a second thread for.
    static let twoLaneBatch = 16

    /// The lane of the record file `name` in a collection: its shard's, so that each shard folder
    /// is opened by one lane (the second byte's low bit: of two hex digits, even or odd).
    static func lane(of name: String) -> Int {
        var bytes = name.utf8.makeIterator()
        _ = bytes.next()
        return Int((bytes.next() ?? 0) & 1)
    }

    /// Removes `victims` as ``removeVictim(_:reason:folders:in:qualifies:)`` does one, each
    /// checked with `qualifies`: a batch of ``twoLaneBatch`` or more in two lanes at once (one on
    /// this thread), each lane removing the victims of its shard folders in the batch's order.
    /// What they remove and report joins `pass` in the batch's order either way.
    /// - Returns: Whether each victim was removed (or was already gone).
    func removeVictims(
        _ victims: [(name: String, reason: EvictionReason)], in pass: inout CollectionPass,
        qualifies: @Sendable (_ lockCount: UInt32, _ ttl: UInt64, _ anchor: UInt64) -> Bool
    ) -> [Bool] {
        let folders = (0 ..< 2).map { pass.folders(lane: $0, io: io, layout: layout) }
        guard victims.count >= Self.twoLaneBatch else {
            return victims.map { victim in
                let lane = Self.lane(of: victim.name)
                return removeVictim(victim.name, reason: victim.reason, folders: folders[lane], in: &pass, qualifies: qualifies)
            }
        }
        var lanes: [[Int]] = [[], []]
        for index in victims.indices { lanes[Self.lane(of: victims[index].name)].append(index) }
        let share = LaneShare(folders: folders, count: victims.count)
        defer { share.outcomes.deallocate() }
        DispatchQueue.concurrentPerform(iterations: 2) { [lanes] lane in
            for index in lanes[lane] {
                var own = CollectionPass()
                let removed = removeVictim(
                    victims[index].name, reason: victims[index].reason, folders: share.folders[lane], in: &own, qualifies: qualifies)
                (share.outcomes.baseAddress! + index).initialize(to: (removed, own))
            }
        }
        // Every index is in one lane, so every outcome is initialized.
        let outcomes = Array(share.outcomes)
        share.outcomes.deinitialize()
        for outcome in outcomes { pass.absorb(outcome.pass) }
        return outcomes.map(\.removed)
    }

    /// Removes one record chosen by a collection, after checking under its key lock that it
    /// still qualifies (a lock or a use since it was chosen keeps it).
    ///
    /// Whose word decides, the index's or the header's: a writable cache owns its folder (its
    /// ``DirectoryLock`` keeps other writers out), so the index holds what the headers say where
    /// the cache can vouch for an entry, and reading the header again would cost an `open`, a
    /// `read` and a `close`, more than the removal itself (`larder-bench gc`, issue 18):
    /// - an entry whose header this process wrote or read (``DiskIndex/Flags/headerVerified``):
    ///   the index's word, no look at the file;
    /// - an entry the index image loaded at open describes, whose file's status last changed
    ///   before that image was written (`lstat`'s change time against the image's reference, as
    ///   git trusts its index): the index's word, after one `lstat`;
    /// - any other (no image, a record another program changed, locked or damaged in place):
    ///   the header's, as SPTPersistentCache's collector reads every header, so a lock written
    ///   there keeps its record, and a damaged record goes as corrupt.
    /// A file that cannot be looked at or read keeps its record, reported as an
    /// ``CacheEvent/ioError(operation:path:errno:)``.
    /// - Returns: Whether it was removed (or was already gone).
    @discardableResult
    func removeVictim(
        _ name: String, reason: EvictionReason, folders: CollectionFolders, in pass: inout CollectionPass,
        qualifies: (_ lockCount: UInt32, _ ttl: UInt64, _ anchor: UInt64) -> Bool
    ) -> Bool {
        changingRecord(name) { () -> Bool in
            let found = state.withLock { s in
                s.index.slot(of: name).map { (s.index[slot: $0], $0, s.index.isHeaderVerified(slot: $0), s.imageReference) }
            }
            guard let (entry, slot, isVerified, imageReference) = found else { return true }
            var vouched = isVerified
            if !vouched, imageReference > FileTime(seconds: 0, nanoseconds: 0) {
                let info: FileInfo?
                do throws(Errno) {
                    info = try folders.status(name)
                } catch {
                    // Kept, as SPT keeps a file it cannot stat; and reported, as SPT's debugOutput does.
                    pass.events.append(.ioError(operation: "evict", path: layout.path(for: name), errno: error.rawValue))
                    return false
                }
                guard let info else {
                    state.withLock { $0.forget(name, slot: slot) }
                    return true
                }
                vouched = info.kind == .regular && info.linkCount == 1 && info.change < imageReference
            }
            if vouched {
                guard qualifies(entry.lockCount, entry.ttl, entry.updateTime) else { return false }
            } else {
                let path = layout.path(for: name)
                let result: RecordReadResult
                do throws(Errno) {
                    result = try records.read(path, readPayload: false)
                } catch {
                    pass.events.append(.ioError(operation: "evict", path: path, errno: error.rawValue))
                    return false
                }
                switch result {
                case .record(let contents):
                    let header = contents.header
                    let anchor = expiryRule.anchor(
                        ttl: header.ttl, headerUpdateTime: header.updateTimeSec, indexedUpdateTime: entry.updateTime)
                    guard qualifies(header.refCount, header.ttl, anchor) else {
                        // The header says otherwise (another program changed it): the index learns it, the record stays.
                        state.withLock { $0.correctLockCount(of: name, to: header.refCount) }
                        return false
                    }
                case .corrupt(let reason):
                    pass.events.append(_removeCorrupt(name: name, key: entry.key, path: path, reason: reason, countsAsMiss: false))
                    return true
                case .missing, .foreign:
                    // Gone, or replaced by a file that is no record: forgotten, and such a file left.
                    state.withLock { $0.forget(name, slot: slot) }
                    return true
                }
            }
            do throws(Errno) {
                // A file gone meanwhile (its folder deleted behind the cache's back) is gone as asked.
                _ = try folders.unlink(name)
            } catch {
                pass.events.append(.ioError(operation: "evict", path: layout.path(for: name), errno: error.rawValue))
                return false
            }
            state.withLock { $0.recordEviction(name, slot: slot, reason: reason) }
            pass.report.removed.append(
                .init(key: entry.key, file: name, size: entry.diskSize, reason: reason, wasLocked: entry.lockCount > 0))
            if options.eventHandler != nil {
                pass.events.append(.recordEvicted(key: entry.key, file: layout.path(for: name), reason: reason))
            }
            return true
        } ?? false  // the cache is closing
    }

    /// Trims the cache to its limits after a store, when it is over them; the record just stored
    /// stays. Does nothing before the index is complete (the build enforces them when it ends).
    func enforceLimits(excluding name: String?) -> [CacheEvent] {
        guard options.sizeLimit > 0 || options.countLimit > 0 || keepsFreeSpace else { return [] }
        let limit = effectiveSizeLimit(forceRefresh: false)
        guard isOverLimits(limit) else { return [] }
        var pass = CollectionPass()
        collectionGate.withLock { _ in
            prune(sizeLimit: limit, countLimit: options.countLimit, excluding: name, reason: nil, in: &pass)
        }
        return pass.events
    }

    /// Whether the index is complete and over `sizeLimit` or the count limit.
    func isOverLimits(_ sizeLimit: Int) -> Bool {
        state.withLock { s in
            s.isIndexReady && (s.index.totalSize > sizeLimit || (options.countLimit > 0 && s.index.count > options.countLimit))
        }
    }

    /// Frees at least `bytes` by removing least recently used records, unlocked first, after a
    /// store failed with a full volume.
    func makeRoom(bytes: Int, excluding name: String) -> [CacheEvent] {
        var pass = CollectionPass()
        collectionGate.withLock { _ in
            let target = max(0, state.withLock { $0.index.totalSize } - bytes)
            prune(sizeLimit: target, countLimit: 0, excluding: name, reason: .diskFull, in: &pass)
        }
        return pass.events
    }

    /// Whether the cache keeps ``DiskCacheOptions/minimumFreeDiskSpace`` free: it asks for some
    /// and, under ``DiskCacheOptions/minimumFreeSpaceNeedsSizeLimit``, has a size limit.
    var keepsFreeSpace: Bool {
        options.minimumFreeDiskSpace != .zero && (!options.minimumFreeSpaceNeedsSizeLimit || options.sizeLimit > 0)
    }

    /// The size limit in force: ``DiskCacheOptions/sizeLimit`` (`Int.max` for none), lowered so
    /// that the volume keeps ``DiskCacheOptions/minimumFreeDiskSpace`` free. The volume is asked
    /// at most once a second unless `forceRefresh`.
    func effectiveSizeLimit(forceRefresh: Bool) -> Int {
        var limit = options.sizeLimit > 0 ? options.sizeLimit : Int.max
        guard keepsFreeSpace else { return limit }
        let required: (Int) -> Int
        switch options.minimumFreeDiskSpace {
        case .zero: return limit
        case .fraction(let x): required = { Int(Double($0) * x) }
        case .bytes(let n): required = { _ in n }
        }
        let now = options.clock.now
        let cached = state.withLock { $0.freeSpace }
        var volume: (checkedAt: Double, volumeSize: Int, available: Int)
        if let cached, !forceRefresh, abs(now - cached.checkedAt) < 1 {
            volume = cached
        } else {
            guard let info = try? io.volumeInfo(layout.root) else { return limit }
            volume = (now, info.size, info.available)
            state.withLock { $0.freeSpace = volume }
        }
        let deficit = required(volume.volumeSize) - volume.available
        if deficit > 0 {
            let total = state.withLock { $0.index.totalSize }
            limit = min(limit, max(0, total - deficit))
        }
        return limit
    }
}

/// What the two lanes of ``DiskCache/removeVictims(_:in:qualifies:)`` share: each lane's folders,
/// and the outcome of each victim, uninitialized until its lane removes it. Unchecked, since no
/// part is touched by both lanes: a lane uses its own folders and writes its own victims' outcomes.
private struct LaneShare: @unchecked Sendable {
    let folders: [CollectionFolders]
    let outcomes: UnsafeMutableBufferPointer<(removed: Bool, pass: CollectionPass)>

    init(folders: [CollectionFolders], count: Int) {
        self.folders = folders
        outcomes = .allocate(capacity: count)
    }
}
