#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation

extension DiskCache {
    /// How many records a collection examines or removes per acquisition of the cache's lock.
    static let collectionBatch = 256

    /// Runs one collection now: removes expired unlocked records, then, while the cache is over
    /// its effective limits, the least recently used unlocked records; if locked records alone
    /// still exceed the size limit, the least recently used locked records too.
    ///
    /// The pass takes the cache's lock a batch at a time, so loads and stores of other keys go on
    /// meanwhile. Access times held by the index are written back, and the index snapshot is
    /// rewritten (it is withdrawn again by the next change, so a crash never leaves a stale one).
    /// - Returns: What was removed, and why.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/closed``.
    /// - Complexity: Memory work linear in the records for the expiry check; file work
    ///   proportional to what is removed.
    @discardableResult
    public func collectGarbage() throws -> CollectionReport {
        try checkWritable(key: nil)
        waitForIndex()
        var events: [CacheEvent] = []
        let report: CollectionReport = collectionGate.withLock { _ in
            var report = CollectionReport()
            events += writeBackAccessTimes()
            removeExpired(report: &report, events: &events)
            let limit = effectiveSizeLimit(forceRefresh: true)
            prune(sizeLimit: limit, countLimit: options.countLimit, excluding: nil, cause: nil, report: &report, events: &events)
            state.withLock { s in
                s.statistics.collections += 1
                report.remainingCount = s.index.count
                report.remainingSize = s.index.totalSize
            }
            report.effectiveSizeLimit = limit == Int.max ? 0 : limit
            events += writeSnapshot()
            return report
        }
        events.append(.collectionFinished(report))
        emit(events)
        return report
    }

    /// Starts collecting every ``DiskCacheOptions/garbageCollectionInterval`` seconds on a
    /// background timer (not the main run loop). Scheduling twice is harmless; the timer stops
    /// when the cache closes or goes away. A read-only or closed cache does not collect.
    public func scheduleGarbageCollection() {
        guard !options.isReadOnly else { return }
        state.withLock { s in
            guard s.timer == nil, !isClosed.load(ordering: .acquiring) else { return }
            let timer = DispatchSource.makeTimerSource(queue: ioQueue)
            let interval = options.garbageCollectionInterval
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
            timer.setEventHandler { [weak self] in
                _ = try? self?.collectGarbage()
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

    /// Removes every record, corrupt ones too (SPT's `prune`), and any stray files in the shard folders.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAll() throws {
        try checkWritable(key: nil)
        waitForIndex()
        var events: [CacheEvent] = []
        let names = listRecordNames(events: &events).names
        var failure: CacheError?
        for name in names {
            let path = layout.path(for: name)
            withStripe(name, changing: true) {
                do throws(Errno) {
                    try io.unlink(path)
                    state.withLock { _forget(name, in: &$0) }
                } catch {
                    failure = failure ?? CacheError(.ioFailure, "cannot remove a record", path: path, errno: error.rawValue)
                }
            }
        }
        // Anything the index still holds (files that vanished behind the cache's back).
        let leftovers = state.withLock { s in s.index.entriesLeastRecentFirst.map(\.name) }
        for name in leftovers {
            withStripe(name) {
                if (try? io.lstat(layout.path(for: name))) ?? nil == nil { state.withLock { _forget(name, in: &$0) } }
            }
        }
        emit(events)
        if let failure { throw failure }
    }

    /// Removes every unlocked record (SPT's `wipeNonLockedFiles`).
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAllUnlocked() throws {
        try removeAll(where: { $0 == 0 })
    }

    /// Removes every locked record (SPT's `wipeLockedFiles`).
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAllLocked() throws {
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

    /// Counters since the cache opened.
    public var statistics: DiskCacheStatistics { state.withLock { $0.statistics } }

    // MARK: - Internals

    private func removeAll(where lockCountMatches: @escaping (UInt32) -> Bool) throws {
        try checkWritable(key: nil)
        waitForIndex()
        let names = state.withLock { s in
            s.index.entriesLeastRecentFirst.filter { lockCountMatches($0.lockCount) }.map(\.name)
        }
        var failure: CacheError?
        var events: [CacheEvent] = []
        for name in names {
            let path = layout.path(for: name)
            withStripe(name, changing: true) {
                // The header is the truth for the lock count; the index may lag a snapshot.
                switch try? records.read(path, readPayload: false) {
                case .record(let contents)?:
                    guard lockCountMatches(contents.header.refCount) else { return }
                case .corrupt(let reason)?:
                    events.append(_removeCorrupt(name: name, key: nil, path: path, reason: reason))
                    return
                default:
                    break
                }
                do throws(Errno) {
                    try io.unlink(path)
                    state.withLock { _forget(name, in: &$0) }
                } catch {
                    failure = failure ?? CacheError(.ioFailure, "cannot remove a record", path: path, errno: error.rawValue)
                }
            }
        }
        emit(events)
        if let failure { throw failure }
    }

    /// Removes expired, unlocked records, a batch at a time. Expects the collection gate held.
    func removeExpired(report: inout CollectionReport, events: inout [CacheEvent]) {
        let now = options.clock.now
        var next: Int? = 0
        while let start = next {
            var candidates: [IndexEntry] = []
            next = state.withLock { s in
                s.index.forEachInSlots(from: start, batch: Self.collectionBatch * 16) { entry in
                    if isExpired(entry, now: now) { candidates.append(entry) }
                }
            }
            for candidate in candidates {
                removeVictim(candidate.name, cause: .expired, allowLocked: false, report: &report, events: &events) { header, entry in
                    header.isExpired(now: now, defaultExpiration: options.defaultExpiration, anchor: max(header.ttl == 0 ? entry.updateTime : 0, header.updateTimeSec))
                }
            }
        }
    }

    /// Removes least recently used records until the cache is within `sizeLimit` and
    /// `countLimit` (`Int.max` and 0 for none): unlocked ones first, then, while locked records
    /// alone exceed the size limit, locked ones. Expects the collection gate held.
    func prune(sizeLimit: Int, countLimit: Int, excluding: String?, cause: EvictionCause?, report: inout CollectionReport, events: inout [CacheEvent]) {
        var skipped: Set<String> = []
        for allowLocked in [false, true] {
            while true {
                var victims: [(name: String, cause: EvictionCause)] = []
                state.withLock { s in
                    // Unlocked records go while the cache is over a limit; locked ones only while
                    // locked records alone exceed the size limit (SPT's promise). Judging the
                    // locked pass by the total would let a store racing with the pass cost a
                    // locked record while unlocked ones remain.
                    var size = allowLocked ? s.index.lockedSize : s.index.totalSize
                    var count = s.index.count
                    func over() -> EvictionCause? {
                        if size > sizeLimit { return .sizeLimit }
                        if !allowLocked, countLimit > 0, count > countLimit { return .countLimit }
                        return nil
                    }
                    guard over() != nil else { return }
                    s.index.forEachLeastRecentFirst { entry in
                        guard let reason = over(), victims.count < Self.collectionBatch else { return false }
                        if entry.name == excluding || skipped.contains(entry.name) { return true }
                        if (entry.lockCount > 0) != allowLocked { return true }
                        victims.append((entry.name, cause ?? reason))
                        size -= entry.diskSize
                        count -= 1
                        return true
                    }
                }
                if victims.isEmpty { break }
                for victim in victims {
                    let removed = removeVictim(victim.name, cause: victim.cause, allowLocked: allowLocked, report: &report, events: &events) { header, _ in
                        (header.refCount > 0) == allowLocked
                    }
                    if !removed { skipped.insert(victim.name) }
                }
            }
        }
    }

    /// Removes one record chosen by a collection, after checking its header still qualifies.
    /// - Returns: Whether it was removed (or was already gone).
    @discardableResult
    func removeVictim(
        _ name: String, cause: EvictionCause, allowLocked: Bool, report: inout CollectionReport,
        events: inout [CacheEvent], qualifies: (RecordHeader, IndexEntry) -> Bool
    ) -> Bool {
        let path = layout.path(for: name)
        return withStripe(name, changing: true) { () -> Bool in
            guard let entry = state.withLock({ $0.index[name] }) else { return true }
            switch try? records.read(path, readPayload: false) {
            case .record(let contents)?:
                guard qualifies(contents.header, entry) else {
                    // The index lagged the header (a snapshot from before a crash): correct it and keep the record.
                    state.withLock { s in s.index.modify(name) { $0.lockCount = contents.header.refCount } }
                    return false
                }
            case .corrupt(let reason)?:
                events.append(_removeCorrupt(name: name, key: entry.key, path: path, reason: reason))
                return true
            case .missing?:
                state.withLock { _forget(name, in: &$0) }
                return true
            case nil:
                return false
            }
            do throws(Errno) {
                try io.unlink(path)
            } catch {
                events.append(.ioError(operation: "evict", path: path, errno: error.rawValue))
                return false
            }
            state.withLock { s in
                _forget(name, in: &s)
                s.statistics.evictions[cause, default: 0] += 1
            }
            report.removed.append(.init(key: entry.key, file: name, size: entry.diskSize, reason: cause, wasLocked: entry.lockCount > 0))
            events.append(.recordEvicted(key: entry.key, file: path, reason: cause))
            return true
        }
    }

    /// Trims the cache to its limits after a store, when it is over them; the record just stored
    /// stays. Does nothing before the index is complete (the build enforces them when it ends).
    func enforceLimits(excluding name: String?) -> [CacheEvent] {
        guard options.sizeLimit > 0 || options.countLimit > 0 || options.minimumFreeDiskSpace != .none else { return [] }
        let limit = effectiveSizeLimit(forceRefresh: false)
        guard isOverLimits(limit) else { return [] }
        var events: [CacheEvent] = []
        collectionGate.withLock { _ in
            var report = CollectionReport()
            prune(sizeLimit: limit, countLimit: options.countLimit, excluding: name, cause: nil, report: &report, events: &events)
        }
        return events
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
        var events: [CacheEvent] = []
        collectionGate.withLock { _ in
            var report = CollectionReport()
            let target = max(0, state.withLock { $0.index.totalSize } - bytes)
            prune(sizeLimit: target, countLimit: 0, excluding: name, cause: .diskFull, report: &report, events: &events)
        }
        return events
    }

    /// The size limit in force: ``DiskCacheOptions/sizeLimit`` (`Int.max` for none), lowered so
    /// that the volume keeps ``DiskCacheOptions/minimumFreeDiskSpace`` free. The volume is asked
    /// at most once a second unless `forceRefresh`.
    func effectiveSizeLimit(forceRefresh: Bool) -> Int {
        var limit = options.sizeLimit > 0 ? options.sizeLimit : Int.max
        let required: (Int) -> Int
        switch options.minimumFreeDiskSpace {
        case .none: return limit
        case .fraction(let x): required = { Int(Double($0) * x) }
        case .bytes(let n): required = { _ in n }
        }
        let now = options.clock.now
        let cached = state.withLock { $0.freeSpace }
        var volume: (checkedAt: Double, volumeSize: Int, available: Int)
        if let cached, !forceRefresh, abs(now - cached.checkedAt) < 1 {
            volume = cached
        } else {
            guard let vfs = try? io.statvfs(layout.root) else { return limit }
            volume = (now, Int(vfs.f_blocks) * Int(vfs.f_frsize), Int(vfs.f_bavail) * Int(vfs.f_frsize))
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
