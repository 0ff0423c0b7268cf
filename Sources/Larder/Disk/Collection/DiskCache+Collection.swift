import Dispatch
import Foundation

extension DiskCache {
    /// How many records a collection examines or removes per acquisition of the cache's lock.
    static let collectionBatch = 256

    /// Runs one collection now: removes the corrupt records found when the index was built or
    /// met on the way (counted in ``CacheStatistics/corruptRecordsRemoved`` and reported as
    /// ``CacheEvent/corruptRecordRemoved(key:file:reason:)``, not in the report), expired
    /// unlocked records (with a ``staleRetention``, those expired longer ago than it), then,
    /// while the cache is over its effective limits, the least recently used unlocked records; if
    /// locked records alone still exceed the size limit, the least recently used locked records too.
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
    /// A writer sharing its folder (``DiskCacheOptions/sharesFolderWithWriters``) that finds
    /// another collection of the folder under way skips its pass without waiting, and says so
    /// (``CollectionReport/wasSkipped``).
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
        followFolder()
        collectionGate.withLock { _ in
            // A writer sharing its folder skips its pass while another process's runs, and says so.
            if withCollectionTurn({ () -> Void in collect(in: &pass) }) == nil {
                pass.report.wasSkipped = true
                state.withLock { s in
                    pass.report.remainingCount = s.index.count
                    pass.report.remainingSize = s.index.totalSize
                }
            }
        }
        pass.events.append(.collectionFinished(pass.report))
        emit(pass.events)
        return pass.report
    }

    /// The pass of ``collectGarbage()``. Expects the collection gate held.
    private func collect(in pass: inout CollectionPass) {
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

    /// Starts collecting every ``DiskCacheOptions/effectiveGarbageCollectionInterval`` seconds on a
    /// background timer (not the main run loop). Scheduling twice is harmless; the timer stops
    /// when the cache closes or goes away. A read-only or closed cache does not collect.
    public func scheduleGarbageCollection() {
        guard !options.isReadOnly else { return }
        state.withLock { s in
            guard s.timer == nil, !isClosed.isSet else { return }
            let timer = DispatchSource.makeTimerSource(queue: ioQueue.queue)
            let interval = options.effectiveGarbageCollectionInterval
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
            // Each tick queues a collection as `.collection` work: its quality of service, and a
            // place in line when the cache bounds its concurrent operations. The timer holds the
            // background handle, never the owner's: the owner's release closes the cache (and
            // cancels the timer), and a tick that comes after finds it closed.
            let background = backgroundHandle
            timer.setEventHandler {
                background.ioQueue.async(.collection) { _ = try? background.collectGarbage() }
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
    /// With a ``staleRetention``, only records that expired longer ago than it go: the pass asks
    /// the expiry rule at `now - retention`, so it never removes a record a stale read within the
    /// retention may still return. Expects the collection gate held.
    func removeExpired(in pass: inout CollectionPass) {
        let now = options.clock.now - state.withLock { $0.staleRetention }
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
}
