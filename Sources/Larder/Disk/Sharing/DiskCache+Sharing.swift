import Foundation
import Synchronization

// A writer that shares its folder with other writers open at once
// (``DiskCacheOptions/sharesFolderWithWriters``): each keeps its own index, in step with the
// others' through the folder's change log (``FolderChangeLog``).
// - Every change to a record file, and the index change that goes with it, is made under the
//   change lock, after replaying what the others recorded, and recorded there before the lock
//   is let go of (``DiskCache/_sharingChange(_:)``): the indexes apply the same changes in the
//   same order.
// - Before an operation whose answer comes from the index alone (a miss, a listing, totals,
//   limits), the log's change counter is loaded (``FolderChangeCounter``, in shared memory):
//   when it has the value taken before the last replay, nothing changed; otherwise the log's
//   header is read (one `pread`), and when it moved, the tail is replayed
//   (``DiskCache/followFolder()``). A hit opens the record's file, which holds the current bytes,
//   so the header check is not what makes a hit right; a kept descriptor or payload of a name the
//   tail touched is dropped as the tail is replayed.
// - The index image is the shared one (`DiskCache+SharedImage.swift`), written under the change
//   lock with its place in the log; the image a writer that held the folder alone left is
//   withdrawn at the first change.
// - One collection at a time across the processes: a pass takes the collection lock without
//   waiting, and a process that finds it taken skips its pass.

/// What a writer sharing its folder learned as it replayed the others' changes, for a memory
/// tier in front of it (``HybridCache``) that drops its copies of what they changed.
enum FolderChangeReport: Sendable, Equatable {
    /// The records of these keys were stored, removed, locked or unlocked by another writer.
    case keys([String])
    /// Any record may have changed: the index was built from the folder again (a new
    /// generation of the log, a log that could not be replayed, the folder made again).
    case everything
}

/// Where a writer sharing its folder is in the change log.
struct FolderFollowing {
    var follower: IndexFollower
    /// Whether a change could not be recorded (the change lock or the log failed): the next
    /// change starts a new generation, so that the other writers build their indexes again.
    var mustReset = false
}

/// The change log, and the sharing file, of a writer sharing its folder.
///
/// The sharing file (`.larder-sharing`) serves three ends: its `flock`, taken without waiting,
/// is the collection lock (one collection at a time across the processes); its first byte is 1
/// while a holder of the change lock is changing records and 0 once the change is recorded, so
/// that the next holder, finding 1, knows a writer died mid-change, its change on disk but not
/// in the log, and starts a new generation (every writer builds its index from the folder); from
/// byte 8 it holds the table of open writers (``SharedWriterTable``).
final class SharedFolder: Sendable {
    let log: FolderChangeLog
    /// Held across one change (the change lock is taken inside), and across a replay.
    let following: SharedMutex<FolderFollowing>
    /// The generation and sequence of the follower's cursor, set after it moves: what the
    /// header is compared with before an operation, without waiting for a change under way.
    private let seenGeneration = Atomic<UInt64>(0)
    private let seenSequence = Atomic<UInt64>(0)
    /// The log's change counter taken before the header was read for the follower's cursor
    /// (``FolderChangeLog/changeCount``), or ``unknownCount``: while the counter keeps this
    /// value, the log is where the follower is.
    private let seenCount = Atomic<UInt64>(SharedFolder.unknownCount)
    /// The ``seenCount`` of no value taken (the counter is not mapped), and the counter's value
    /// once retired (``FolderChangeCounter/retired``): never taken as one.
    private static let unknownCount = FolderChangeCounter.retired
    /// The sharing file's descriptor: replaced when the folder is made again.
    private let sharingDescriptor: Atomic<Int32>
    private var sharingFD: Int32 { sharingDescriptor.load(ordering: .relaxed) }
    /// This writer's slot in the sharing file's table of writers (``SharedWriterTable``); -1
    /// once withdrawn, or when the folder made again could not take it.
    private let writerSlot: Atomic<Int>
    private let io: FileIO
    /// Told what each replay of the others' changes touched (``observe(_:)``).
    private let observers = LarderMutex<[@Sendable (FolderChangeReport) -> Void]>([])

    /// The log's size past which a change starts a new generation: the other writers then
    /// build their indexes from the folder once, instead of replaying an ever longer log.
    static let logBound = 4 << 20
    /// The sharing file's name, beside `.larder.lock`.
    static let sharingFileName = ".larder-sharing"

    /// Opens the change log and the sharing file in `root`, registers this writer in the
    /// sharing file's table of writers, and takes the place in the log to replay from: where it
    /// ends now, before the index is built. A change marked begun and not recorded (its writer
    /// died mid-change) starts a new generation first, so that no writer, nor the shared image,
    /// goes on without it. Called holding `.larder.lock` shared (``SharedWriterTable``).
    init(root: String, io: FileIO, sharedWithGroup: Bool) throws(CacheError) {
        let log = try FolderChangeLog(path: root + "/" + FolderChangeLog.fileName, io: io, sharedWithGroup: sharedWithGroup)
        let fd = try Self.openSharingFile(root: root, io: io, sharedWithGroup: sharedWithGroup)
        let place: (cursor: FolderChangeLog.Cursor, slot: Int, changeCount: UInt64?)
        do {
            place = try Self.takePlace(in: log, sharingFD: fd, io: io, sharingPath: root + "/" + Self.sharingFileName)
        } catch {
            io.close(fd)
            throw error
        }
        let start = place.cursor
        self.log = log
        self.io = io
        sharingDescriptor = Atomic(fd)
        writerSlot = Atomic(place.slot)
        following = SharedMutex(FolderFollowing(follower: IndexFollower(at: start)))
        noteFollowed(start, changeCount: place.changeCount)
    }

    deinit { io.close(sharingFD) }

    /// Frees this writer's slot in the table of writers, as the cache closes: a writer that
    /// would hold the folder alone no longer waits for it.
    func withdraw() {
        let slot = writerSlot.exchange(-1, ordering: .relaxed)
        if slot >= 0 { SharedWriterTable.withdraw(slot: slot, fd: sharingFD, io: io) }
    }

    /// Opens the sharing file in `root`, checked as the log is.
    static func openSharingFile(root: String, io: FileIO, sharedWithGroup: Bool) throws(CacheError) -> Int32 {
        let path = root + "/" + Self.sharingFileName
        let fd: Int32
        do {
            fd = try io.openForUpdate(path, creating: true)
        } catch {
            throw CacheError(
                .unsafeDirectory, "cannot open the sharing file; remove it if it is not a regular file", path: path, errno: error.rawValue)
        }
        let info = try? io.info(fd)
        guard let info, info.kind == .regular, info.linkCount == 1, sharedWithGroup || info.ownerID == ProcessIdentity.effectiveUserID
        else {
            io.close(fd)
            throw CacheError(
                .unsafeDirectory, "the sharing file is not a regular file of this user with one link; remove it if this is your cache",
                path: path)
        }
        return fd
    }

    /// The place where `log` ends, this writer's slot in the table of writers, and the log's
    /// change counter for that place, all taken under the change lock; a change marked begun and
    /// not recorded starts a new generation first (the mark is cleared once it is written).
    private static func takePlace(
        in log: FolderChangeLog, sharingFD fd: Int32, io: FileIO, sharingPath: String
    ) throws(CacheError) -> (cursor: FolderChangeLog.Cursor, slot: Int, changeCount: UInt64?) {
        // A header written now, so that the first place read is one every writer shares.
        func takePlace(_ appender: inout FolderChangeLog.Appender) -> Result<(cursor: FolderChangeLog.Cursor, slot: Int), CacheError> {
            if readMark(fd: fd, io: io) { appender.reset() }
            let cursor = appender.cursor
            return Result { () throws(CacheError) in (cursor, try SharedWriterTable.register(fd: fd, io: io, path: sharingPath)) }
        }
        var changeCount: UInt64?
        let place = try log.withChangeLock(
            committed: { count in
                clearMark(fd: fd, io: io)
                changeCount = count
            }, takePlace
        ).get()
        return (place.cursor, place.slot, changeCount)
    }

    /// Moves to the log and the sharing file of the folder made again at the root's path
    /// (`DiskCache+Recovery.swift`), opened by the caller beneath it (`sharingFD`), and takes
    /// the place in the new log before the index is built from that folder. Called holding
    /// ``following``, with no change of this cache under way. When the place cannot be taken,
    /// the follower starts before everything, so that its next look builds the index again.
    func moveToRemadeFolder(sharingFD fd: Int32, sharingPath: String, _ following: inout FolderFollowing) {
        io.close(sharingDescriptor.exchange(fd, ordering: .relaxed))
        log.reopen()
        let place = try? Self.takePlace(in: log, sharingFD: fd, io: io, sharingPath: sharingPath)
        writerSlot.store(place?.slot ?? -1, ordering: .relaxed)
        let start = place?.cursor ?? .start
        following = FolderFollowing(follower: IndexFollower(at: start))
        // The index is built from the new folder, which other writers may already have changed;
        // told before the place is published, so that a look that finds the log unmoved since
        // finds the memory copies gone.
        report(.everything)
        noteFollowed(start, changeCount: place?.changeCount)
    }

    /// Calls `observer` with what each replay of the other writers' changes touched, after the
    /// index took it in and before the replay lets go of ``following``: a change this process
    /// makes after that replay is reported to no observer, and one it made before is never
    /// reported after it. `observer` must not take a lock held around an operation of this cache
    /// (a key lock of a ``HybridCache``); it may be called on any thread, inside any operation.
    func observe(_ observer: @escaping @Sendable (FolderChangeReport) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Tells the observers what a replay touched. Called holding ``following``.
    func report(_ change: FolderChangeReport) {
        let observers = observers.withLock { $0 }
        for observer in observers { observer(change) }
    }

    /// Whether the log may hold changes this writer has not replayed: one atomic load of the
    /// change counter, which moves with every change to the log's header (moved: the caller
    /// replays under ``following``); one `pread` of the header when the counter is not mapped.
    /// A cursor caught moving reads as moved, which the caller checks again under ``following``.
    var hasMoved: Bool {
        if let count = log.changeCount, count != Self.unknownCount { return count != seenCount.load(ordering: .acquiring) }
        let seen = FolderChangeLog.Cursor(
            generation: seenGeneration.load(ordering: .acquiring), sequence: seenSequence.load(ordering: .acquiring), offset: 0)
        return log.hasMoved(since: seen)
    }

    /// Publishes where the follower is, for ``hasMoved``, with the log's change counter taken
    /// before the header that says so was read (`nil`: none; looks read the header). Called
    /// holding ``following``, after the index took in what the follower replayed.
    func noteFollowed(_ cursor: FolderChangeLog.Cursor, changeCount: UInt64?) {
        seenGeneration.store(cursor.generation, ordering: .releasing)
        seenSequence.store(cursor.sequence, ordering: .releasing)
        seenCount.store(changeCount ?? Self.unknownCount, ordering: .releasing)
    }

    /// Runs `body` holding the collection lock, or returns `nil` at once when another process
    /// (or another cache of this one) holds it.
    func withCollectionLock<T>(_ body: () -> T) -> T? {
        do throws(Errno) {
            try io.flock(sharingFD, LOCK_EX | LOCK_NB)
        } catch {
            return nil
        }
        defer { io.unlock(sharingFD) }
        return body()
    }

    /// Whether a change is marked begun and not recorded, without changing the mark. Called
    /// holding the change lock.
    var isChangeMarkedBegun: Bool { Self.readMark(fd: sharingFD, io: io) }

    /// Marks a change as begun (`true`) or recorded; returns whether the previous change was
    /// left marked as begun (its writer died mid-change). Called holding the change lock.
    func markChange(begun: Bool) -> Bool {
        let wasBegun = Self.readMark(fd: sharingFD, io: io)
        if wasBegun != begun { Self.writeMark(begun, fd: sharingFD, io: io) }
        return wasBegun
    }

    /// Marks the change begun by ``markChange(begun:)`` as recorded: one write, since the mark
    /// is known to be set. Called holding the change lock.
    func clearChangeMark() {
        Self.writeMark(false, fd: sharingFD, io: io)
    }

    /// Clears the mark when it is set: one read, and a write only when a change was left begun.
    private static func clearMark(fd: Int32, io: FileIO) {
        if readMark(fd: fd, io: io) { writeMark(false, fd: fd, io: io) }
    }

    private static func readMark(fd: Int32, io: FileIO) -> Bool {
        var byte: [UInt8] = [0]
        let n = (try? byte.withUnsafeMutableBytes { b in Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) } }.get()) ?? 0
        return n == 1 && byte[0] != 0
    }

    /// Writes the mark's byte: 1 for a change begun, 0 for one recorded.
    private static func writeMark(_ begun: Bool, fd: Int32, io: FileIO) {
        let byte: [UInt8] = [begun ? 1 : 0]
        _ = try? byte.withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: 0) } }.get()
    }
}

/// Whether this thread is inside a change of a writer sharing its folder, so that a change it
/// makes on the way (a corrupt record removed) is recorded with the outer one.
enum SharedChange {
    @TaskLocal static var isHeld = false
}

extension DiskCache {
    /// Replays what the other writers sharing the folder recorded since this writer last looked:
    /// one atomic load of the log's change counter when nothing was (one `pread` of the log's
    /// header when the counter is not mapped). Does nothing for a cache that holds its
    /// folder alone.
    func followFolder() {
        // The counter first: a task-local lookup costs more than the load, and a look finds the
        // log unmoved far more often than it runs inside a change.
        guard let sharedFolder, sharedFolder.hasMoved, !SharedChange.isHeld else { return }
        let log = sharedFolder.log
        sharedFolder.following.withLock { following in
            // Taken before the header is read: a change after the read moves the counter past it.
            let count = log.changeCount
            // One read of the header when another thread replayed meanwhile (`.current`).
            _follow(log.changes(after: following.follower.cursor), &following)
            sharedFolder.noteFollowed(following.follower.cursor, changeCount: count)
        }
    }

    /// Applies `tail` to the index, drops the kept descriptors and payloads of the names it
    /// touched (every one after a rebuild), and tells the folder's observers which keys
    /// (``SharedFolder/observe(_:)``).
    func _follow(_ tail: FolderChangeLog.Tail, _ following: inout FolderFollowing) {
        if case .current = tail { return }
        let step = state.withLock { s in
            s.follow(tail, with: &following.follower, keyEncoding: options.keyEncoding) { scanFolderForSharing() }
        }
        switch step {
        case .current:
            break
        case .applied(let touched, let keys):
            for name in touched { records.descriptors?.retire(name) }
            if !keys.isEmpty { sharedFolder?.report(.keys(keys)) }
        case .rebuilt:
            records.descriptors?.retireAll()
            sharedFolder?.report(.everything)
        }
    }

    /// Every record's index entry, read from the folder: what a writer whose log fell behind a
    /// new generation starts again from.
    private func scanFolderForSharing() -> (entries: [IndexEntry], suspects: Set<String>, listedEverything: Bool) {
        var events: [CacheEvent] = []
        let listed = listRecordNames(events: &events)
        let scanned = scanHeaders(listed.names)
        return (scanned.entries, scanned.suspects, listed.isComplete)
    }

    /// Runs `body`, a change to record files and the index change that goes with it, as a writer
    /// sharing its folder must: under the change lock, after replaying what the others recorded,
    /// then records the index's changes in the log. Runs `body` alone for a cache that holds its
    /// folder alone, and inside another such change (whose record takes this one's changes too).
    ///
    /// When the log cannot be written, the change lock's holder empties it or starts a new
    /// generation (``FolderChangeLog/withChangeLock(sync:committed:_:)``); when the change lock
    /// cannot be taken, `body` runs marked begun (the next holder starts a new generation) and
    /// the log is cut back to the header of a new generation with no records after it
    /// (``FolderChangeLog/invalidateWithoutLock()``). Either way the others build their indexes from the folder
    /// at their next operation, rather than miss this change.
    func _sharingChange<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        guard let sharedFolder, !SharedChange.isHeld else { return try body() }
        let log = sharedFolder.log
        // Set under the mutex and read after it, on this thread: `body` and what it returns are
        // the caller's, never sent anywhere.
        nonisolated(unsafe) var outcome: Result<T, E>?
        sharedFolder.following.withLock { following in
            do {
                var changeCount: UInt64?
                try log.withChangeLock(
                    sync: options.durability == .fsync,
                    committed: { count in
                        sharedFolder.clearChangeMark()
                        changeCount = count
                    }
                ) { appender in
                    // The header the lock's holder just read says whether anything was recorded
                    // since this writer last looked: when nothing was, no second read.
                    if appender.cursor != following.follower.cursor {
                        _follow(log.changes(after: following.follower.cursor), &following)
                    }
                    if sharedFolder.markChange(begun: true) { following.mustReset = true }
                    state.withLock { $0.clearIndexChanges() }
                    outcome = SharedChange.$isHeld.withValue(true) { Result { () throws(E) -> T in try body() } }
                    let taken = state.withLock { $0.takeIndexChanges() }
                    if following.mustReset || taken == nil || appender.cursor.offset > SharedFolder.logBound {
                        // Changes that cannot be replayed, a writer that died mid-change, or a
                        // log grown long: a new generation, which the others meet by building
                        // their indexes from the folder.
                        appender.reset()
                        following.mustReset = false
                    } else if let taken, !taken.isEmpty {
                        appender.append(kind: IndexFollower.indexChangeKind, payload: IndexJournal.changesPayload(taken))
                    }
                    following.follower.move(to: appender.cursor)
                }
                // Published once the header is written, with the counter that counts it.
                sharedFolder.noteFollowed(following.follower.cursor, changeCount: changeCount)
            } catch {
                following.mustReset = true
            }
        }
        if let outcome { return try outcome.get() }
        // The change lock could not be taken: the change is made marked begun, then the log
        // cut back to a new generation's header, so that it is in every index the others build
        // next.
        _ = sharedFolder.markChange(begun: true)
        defer { log.invalidateWithoutLock() }
        return try SharedChange.$isHeld.withValue(true) { Result { () throws(E) -> T in try body() } }.get()
    }

    /// Runs a collection pass's `body` holding the collection lock of a writer sharing its
    /// folder; `nil`, without running it, when another process's pass holds it. Runs `body`
    /// for a cache that holds its folder alone.
    func withCollectionTurn<T>(_ body: () -> T) -> T? {
        guard let sharedFolder else { return body() }
        return sharedFolder.withCollectionLock(body)
    }
}
