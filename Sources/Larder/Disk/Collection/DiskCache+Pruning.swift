import Dispatch
import Foundation

extension DiskCache {
    /// Removes records in eviction order until the cache is within `sizeLimit` and `countLimit`
    /// (`Int.max` and 0 for none): unlocked ones first, then, while locked records alone exceed
    /// the size limit, locked ones. Under ``DiskEvictionPolicy/lru`` the order is least recently
    /// used first; under ``DiskEvictionPolicy/adaptive`` the records waiting for the policy are
    /// admitted and the victims it names removed first, then the policy's order goes on.
    /// Expects the collection gate held.
    func prune(sizeLimit: Int, countLimit: Int, excluding: String?, reason: EvictionReason?, in pass: inout CollectionPass) {
        var skipped: Set<ExactName> = []
        let policyVictims = state.withLock { $0.takePolicyVictims() }
        if !policyVictims.isEmpty {
            let removed = removeVictims(policyVictims.map { ($0, reason ?? .sizeLimit) }, in: &pass) { lockCount, _, _ in lockCount == 0 }
            let kept = zip(policyVictims, removed).filter { !$0.1 }.map(\.0)
            if !kept.isEmpty {
                state.withLock { $0.queueForAdmission(kept) }
                for name in kept { skipped.insert(ExactName(name)) }
            }
        }
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
                    s.index.forEachSlotInEvictionOrder { slot in
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
    /// record's blocks sleeps until the device has discarded them, and that wait is a third of a
    /// prune's time on the disk (`larder-bench gc`). Two lanes overlap those waits; a
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
    /// `read` and a `close`, more than the removal itself (`larder-bench gc`):
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
