import Foundation
import Synchronization

/// The change log that writer processes sharing one folder append to and replay
/// (`.larder-changes`), and the short change lock around each append: how several writers on one
/// folder, each with its own in-memory index, keep in step. A cache that shares its folder
/// (`DiskCache+Sharing.swift`) takes ``DirectoryLock`` shared as "a writer is present" and
/// records every change to records here, under ``withChangeLock(sync:committed:_:)``.
///
/// The file begins with a header of ``headerSize`` bytes (little-endian): the magic
/// `LRDCHG01`, a generation u64, a sequence u64 (the records appended in this generation), the
/// length u64 of the records that follow the header, and a CRC-32 of the 32 bytes before it.
/// Each record is: length u32 (of what follows, up to the CRC), kind u8, sequence u64, payload,
/// then a CRC-32 of the record's bytes before it.
///
/// The protocol, after SQLite's WAL index and MMKV's multi-process mode:
/// - An append takes the change lock (`flock` on this file, which dies with its holder), reads
///   the header, writes the record past the length the header gives, and then rewrites the
///   header. A holder killed before the header is rewritten leaves bytes past that length,
///   which nobody reads and the next append overwrites: a change is in the log once its header
///   is, never half.
/// - Within a generation, the records below the header's length never change. A reader without
///   the lock reads the header (one `pread`: the cost on each operation), the records it has not
///   seen, and the header again: when the generation is unchanged, what it read holds, as a
///   seqlock's reader validates its copy.
/// - ``Appender/reset()`` (a compaction, a removal of everything, a damaged header) starts a
///   new generation with no records: a reader that sees another generation than its own has
///   missed changes it cannot replay, and must build its index from the folder again.
///
/// Every change to the header adds one to the log's change counter (``FolderChangeCounter``,
/// `.larder-changes-shm` beside it, mapped in shared memory) after the header is written, so
/// that a reader that took the counter before it read the header can tell that nothing changed
/// since with one atomic load (``changeCount``); the counter is mapped at the first change lock.
///
/// The file keeps its inode for good (a reset truncates it in place), so that every process's
/// `flock` is on the same file; a lock taken on a file that was unlinked or replaced meanwhile
/// is let go of, and the path opened again. That check (an `fstat` of the file and one of the
/// path) is skipped while the change counter holds the value it had when this writer last let
/// go of the lock on the file the path named: no writer changed the header since, and a writer
/// that made the log again at the path would have (it writes a header before anything else).
package final class FolderChangeLog: Sendable {
    /// The log's file name, beside `.larder.lock`.
    package static let fileName = ".larder-changes"
    /// The header's size in bytes.
    package static let headerSize = 36
    /// The magic that begins the header.
    static let magic: [UInt8] = Array("LRDCHG01".utf8)
    /// Bytes around a record's payload: length, kind, sequence, CRC.
    package static let recordOverhead = 4 + 1 + 8 + 4
    /// The largest payload a record holds: far above any index change, and small enough that a
    /// damaged length cannot make a reader allocate much.
    package static let maximumPayload = 16 << 20
    /// The most bytes of records a generation holds: the holder of the change lock that finds
    /// the log past it starts a new generation first (the other writers rebuild from the folder).
    /// A cache compacts its log long before; this bounds what a reader ever reads at once.
    package static let maximumLength = 256 << 20

    /// Where a reader is in the log: the generation it replayed, how many records of it, and
    /// where they end.
    package struct Cursor: Equatable, Sendable {
        /// The generation replayed.
        package var generation: UInt64
        /// The records of that generation replayed.
        package var sequence: UInt64
        /// The offset past the last record replayed.
        package var offset: Int

        /// A cursor before everything, in no generation.
        package static let start = Cursor(generation: 0, sequence: 0, offset: FolderChangeLog.headerSize)
    }

    /// A record of the log.
    package struct Record: Equatable, Sendable {
        /// What the payload means, for the caller.
        package var kind: UInt8
        /// Its sequence number in its generation, from 1.
        package var sequence: UInt64
        /// Its bytes.
        package var payload: [UInt8]
    }

    /// What a reader finds past its cursor.
    package enum Tail: Equatable, Sendable {
        /// Nothing new.
        case current
        /// Records appended since, in order, and the cursor past them.
        case records([Record], Cursor)
        /// Another generation (or a damaged log): the changes since the cursor cannot be
        /// replayed; the reader rebuilds its state from the folder, then reads from this cursor.
        case reset(Cursor)
    }

    /// The header's fields.
    struct Header: Equatable {
        var generation: UInt64
        var sequence: UInt64
        var length: Int
    }

    /// The open file: replaced when the path names another file than the one locked (see
    /// ``withChangeLock(sync:_:)``); a cache uses the log from one thread at a time.
    private let descriptor: Atomic<Int32>
    private var fd: Int32 { descriptor.load(ordering: .relaxed) }
    private let io: FileIO
    /// The log file's path.
    let path: String
    private let sharedWithGroup: Bool
    /// The change counter beside the log, added to after every change to the header.
    let changeCounter = FolderChangeCounter()
    /// The change counter's value as this writer let go of the lock on the file that the path
    /// named (``FolderChangeCounter/retired`` for none known): while the counter keeps it, the
    /// next lock is taken on that file without checking the path again (see ``lockCurrentFile()``).
    private let verifiedCount = Atomic<UInt64>(FolderChangeCounter.retired)
    /// The counter file's path: the log's, with `-shm` after it.
    var changeCounterPath: String { path + "-shm" }

    /// Opens (creating it) the change log at `path`.
    /// - Parameters:
    ///   - path: The log file, beneath `io`'s root.
    ///   - io: A rooted ``FileIO``.
    ///   - sharedWithGroup: Whether a log owned by another user is accepted (``CacheSharing/group``).
    /// - Throws: ``CacheError/Code/unsafeDirectory`` for a log that is not a regular file with one
    ///   link owned by the user, ``CacheError/Code/ioFailure``.
    package init(path: String, io: FileIO, sharedWithGroup: Bool = false) throws(CacheError) {
        self.io = io
        self.path = path
        self.sharedWithGroup = sharedWithGroup
        self.descriptor = Atomic(try Self.open(path, io: io, sharedWithGroup: sharedWithGroup))
    }

    deinit { io.close(fd) }

    private static func open(_ path: String, io: FileIO, sharedWithGroup: Bool) throws(CacheError) -> Int32 {
        let fd: Int32
        do {
            fd = try io.openForUpdate(path, creating: true)
        } catch let error where error == .tooManySymbolicLinks || error == .isADirectory || error == .noSuchDeviceOrAddress {
            throw CacheError(
                .unsafeDirectory, "the change log is a link, a folder or a socket, not a regular file", path: path, errno: error.rawValue)
        } catch {
            throw CacheError(.ioFailure, "cannot open the change log", path: path, errno: error.rawValue)
        }
        let info: FileInfo
        do {
            info = try io.info(fd)
        } catch {
            io.close(fd)
            throw CacheError(.ioFailure, "cannot inspect the change log", path: path, errno: error.rawValue)
        }
        if let problem = info.problemAsFolderFile(sharedWithGroup: sharedWithGroup) {
            io.close(fd)
            throw CacheError(.unsafeDirectory, "the change log \(problem); remove it if this is your cache", path: path)
        }
        return fd
    }

    // MARK: - Reading

    /// The header as it is now, without the lock: one `pread`. `nil` when the file is empty,
    /// damaged or caught mid-rewrite (the CRC does not match).
    func readHeader() -> Header? {
        var bytes = [UInt8](repeating: 0, count: Self.headerSize)
        let n = (try? bytes.withUnsafeMutableBytes { b in Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) } }.get()) ?? 0
        guard n == Self.headerSize else { return nil }
        return Self.decodeHeader(bytes)
    }

    static func decodeHeader(_ bytes: [UInt8]) -> Header? {
        guard bytes.count >= headerSize, bytes[0 ..< 8].elementsEqual(magic) else { return nil }
        return bytes.withUnsafeBytes { b -> Header? in
            func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T { T(littleEndian: b.loadUnaligned(fromByteOffset: at, as: T.self)) }
            guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: b[0 ..< 32])) == load(32, UInt32.self) else { return nil }
            // A header past the bounds was not written by Larder: it reads as damaged.
            let length = load(24, UInt64.self)
            let sequence = load(16, UInt64.self)
            guard length <= UInt64(maximumLength), sequence <= length / UInt64(recordOverhead) else { return nil }
            return Header(generation: load(8, UInt64.self), sequence: sequence, length: Int(length))
        }
    }

    static func encodeHeader(_ header: Header) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: headerSize) { buffer, count in
            var writer = LittleEndianWriter(UnsafeMutableRawBufferPointer(buffer))
            writer.put(bytes: magic)
            writer.put(header.generation)
            writer.put(header.sequence)
            writer.put(UInt64(header.length))
            writer.put(CRC32.checksum(writer.written))
            count = writer.offset
        }
    }

    /// The change counter's value, to take before reading the header: while it keeps that
    /// value, the header has not changed since. `nil` when the counter is not mapped (the header
    /// must be read).
    var changeCount: UInt64? { changeCounter.value }

    /// Whether anything was appended, or the generation moved, since `cursor`: the check a
    /// writer makes before each operation, one `pread`. A header that cannot be read counts as
    /// moved, so that ``changes(after:)`` sorts it out.
    package func hasMoved(since cursor: Cursor) -> Bool {
        guard let header = readHeader() else { return true }
        return header.generation != cursor.generation || header.sequence != cursor.sequence
    }

    /// The records appended past `cursor`, without the lock (see the type's protocol): read,
    /// then validated by reading the header again; when a writer changed the generation
    /// meanwhile, or the log is damaged, ``Tail/reset(_:)``.
    /// - Complexity: O(*b*) for the *b* bytes appended since `cursor`.
    package func changes(after cursor: Cursor) -> Tail {
        // A header caught mid-rewrite reads again; one that stays damaged is a reset, which the
        // next append repairs.
        var header: Header?
        for _ in 0 ..< 3 {
            header = readHeader()
            if header != nil { break }
        }
        guard let header else { return .reset(.start) }
        let current = Cursor(generation: header.generation, sequence: header.sequence, offset: Self.headerSize + header.length)
        if header.generation != cursor.generation || header.sequence < cursor.sequence || current.offset < cursor.offset {
            return .reset(current)
        }
        if header.sequence == cursor.sequence { return current.offset == cursor.offset ? .current : .reset(current) }
        // Both below the header's bounds (``maximumLength``), so neither overflows nor allocates much.
        let count = current.offset - cursor.offset
        let expected = Int(header.sequence - cursor.sequence)
        guard count >= expected * Self.recordOverhead else { return .reset(current) }
        var bytes = [UInt8](repeating: 0, count: count)
        let n =
            (try? bytes.withUnsafeMutableBytes { b in
                Result { () throws(Errno) in try io.pread(fd, into: b, at: cursor.offset) }
            }.get()) ?? 0
        guard n == count, let records = Self.decodeRecords(bytes, from: cursor.sequence),
            records.count == expected
        else { return .reset(current) }
        // Records of a generation never change below its length: the same generation after the
        // read means they were read as written.
        guard readHeader()?.generation == header.generation else { return .reset(.start) }
        return .records(records, current)
    }

    /// The place just past the last record of the current generation with `kind` and
    /// `payload`, or `nil` when the generation holds none (or the log cannot be read whole).
    /// - Complexity: O(*b*) for the *b* bytes of records in the generation.
    func placeAfter(kind: UInt8, payload: [UInt8]) -> Cursor? {
        guard let header = readHeader(),
            case .records(let records, let end) = changes(
                after: Cursor(generation: header.generation, sequence: 0, offset: Self.headerSize))
        else { return nil }
        var offset = Self.headerSize
        var place: Cursor?
        for record in records {
            offset += Self.recordOverhead + record.payload.count
            if record.kind == kind, record.payload == payload {
                place = Cursor(generation: end.generation, sequence: record.sequence, offset: offset)
            }
        }
        return place
    }

    /// The records in `bytes`, numbered on from `sequence`; `nil` when one is torn, damaged or
    /// out of sequence.
    static func decodeRecords(_ bytes: [UInt8], from sequence: UInt64) -> [Record]? {
        bytes.withUnsafeBytes { b -> [Record]? in
            func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T { T(littleEndian: b.loadUnaligned(fromByteOffset: at, as: T.self)) }
            var records: [Record] = []
            var offset = 0
            var expected = sequence
            while offset < b.count {
                guard b.count - offset >= recordOverhead else { return nil }
                let length = Int(load(offset, UInt32.self))
                guard length >= recordOverhead - 8, length - (recordOverhead - 8) <= maximumPayload, length <= b.count - offset - 8 else {
                    return nil
                }
                let end = offset + 4 + length
                guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: b[offset ..< end])) == load(end, UInt32.self) else { return nil }
                expected += 1
                guard load(offset + 5, UInt64.self) == expected else { return nil }
                records.append(Record(kind: load(offset + 4, UInt8.self), sequence: expected, payload: Array(b[offset + 13 ..< end])))
                offset = end + 4
            }
            return records
        }
    }

    // MARK: - Changing

    /// What a holder of the change lock may do to the log.
    package struct Appender: ~Copyable {
        fileprivate let fd: Int32
        fileprivate let io: FileIO
        fileprivate var header: Header
        fileprivate var isDirty = false
        fileprivate var pending: [UInt8] = []
        fileprivate var wasReset = false

        /// Where the log ends, with what this holder appended so far.
        package var cursor: Cursor {
            Cursor(generation: header.generation, sequence: header.sequence, offset: FolderChangeLog.headerSize + header.length)
        }

        /// Appends a record; it is in the log once the lock is let go of.
        /// - Precondition: `payload` holds at most ``FolderChangeLog/maximumPayload`` bytes.
        package mutating func append(kind: UInt8, payload: [UInt8]) {
            precondition(payload.count <= FolderChangeLog.maximumPayload, "a change log record's size")
            // A holder appending past the bound starts a new generation rather than write a log
            // that readers would refuse.
            if header.length + FolderChangeLog.recordOverhead + payload.count > FolderChangeLog.maximumLength { reset() }
            header.sequence += 1
            let total = FolderChangeLog.recordOverhead + payload.count
            let record = [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
                var writer = LittleEndianWriter(UnsafeMutableRawBufferPointer(buffer))
                writer.put(UInt32(total - 8))
                writer.put(kind)
                writer.put(header.sequence)
                writer.put(bytes: payload)
                writer.put(CRC32.checksum(writer.written))
                count = writer.offset
            }
            pending += record
            header.length += total
            isDirty = true
        }

        /// Starts a new generation with no records (a compaction, a removal of everything): every
        /// other reader rebuilds its state from the folder.
        package mutating func reset() {
            header = Header(generation: FolderChangeLog.nextGeneration(after: header.generation), sequence: 0, length: 0)
            pending = []
            wasReset = true
            isDirty = true
        }

        /// Writes what was appended, then the header that makes it visible.
        fileprivate mutating func commit(sync: Bool) throws(Errno) {
            guard isDirty else { return }
            let start = FolderChangeLog.headerSize + header.length - pending.count
            // A reset gives back the old generation's space; a reader of it meanwhile reads short
            // and starts again from the folder, as it must for a new generation anyway.
            if wasReset { try io.ftruncate(fd, FolderChangeLog.headerSize) }
            if !pending.isEmpty {
                try pending.withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: start) } }.get()
            }
            if sync { try io.fsync(fd) }
            try FolderChangeLog.encodeHeader(header).withUnsafeBytes { b in
                Result { () throws(Errno) in try io.pwrite(fd, b, at: 0) }
            }.get()
            if sync { try io.fsync(fd) }
            pending = []
            wasReset = false
            isDirty = false
        }
    }

    /// A generation other than `previous` and zero (``Cursor/start``'s): random, so that a log
    /// made again after a loss does not repeat one a reader still holds.
    static func nextGeneration(after previous: UInt64) -> UInt64 {
        var next = UInt64.random(in: 1 ... .max)
        while next == previous { next = UInt64.random(in: 1 ... .max) }
        return next
    }

    /// Runs `body` holding the change lock (`flock`, waiting for the holder: each holds it for
    /// one change), then writes what it appended and lets go, on every path. A damaged or new
    /// header starts a new generation first.
    /// - Parameters:
    ///   - sync: Whether to `fsync` the records and the header (``Durability/fsync``).
    ///   - committed: Runs after what `body` appended is written, still holding the lock, with
    ///     a value of the change counter (``changeCount``) that counts what `body` appended and
    ///     no change after the header this holder read: while the counter keeps it, the log is
    ///     where `body` left it. `nil` when the counter is not mapped.
    /// - Returns: What `body` returned.
    /// - Throws: ``CacheError/Code/ioFailure`` when the lock cannot be taken or the log written.
    package func withChangeLock<T>(
        sync: Bool = false, committed: (_ changeCount: UInt64?) -> Void = { _ in }, _ body: (inout Appender) -> T
    ) throws(CacheError) -> T {
        try lockCurrentFile()
        defer { io.unlock(fd) }
        if !changeCounter.isAttached {
            changeCounter.attach(path: changeCounterPath, io: io, sharedWithGroup: sharedWithGroup, growing: true)
        }
        // Taken before the header is read: a change after the read moves the counter past it.
        let before = changeCounter.value
        var appender = Appender(fd: fd, io: io, header: readHeader() ?? Header(generation: 0, sequence: 0, length: 0))
        if appender.header.generation == 0 || appender.header.length > Self.maximumLength - Self.maximumPayload - Self.recordOverhead {
            appender.reset()
        }
        let result = body(&appender)
        let changes = appender.isDirty
        do {
            try appender.commit(sync: sync)
        } catch {
            // What `body` recorded is not in the log: a new generation, or failing that an empty
            // log, sends every reader back to the folder, rather than on without the change.
            verifiedCount.store(FolderChangeCounter.retired, ordering: .relaxed)
            var fresh = Appender(fd: fd, io: io, header: appender.header)
            fresh.reset()
            if (try? fresh.commit(sync: sync)) == nil { _ = try? io.ftruncate(fd, 0) }
            changeCounter.bump()
            throw CacheError(.ioFailure, "cannot write the change log", path: path, errno: error.rawValue)
        }
        var counted = before
        // The value the counter has now, when known, for the next lock's check of the path.
        var verified = before
        if changes {
            verified = nil
            if let previous = changeCounter.bump(), let before {
                // Nobody counted a change between the read of the header and this one (only a
                // change made without the lock could be): the counter is the log as written now.
                // Otherwise `before`, which the counter has passed: the next look reads the header.
                if previous == before {
                    counted = previous &+ 1
                    verified = counted
                }
            }
        }
        verifiedCount.store(verified ?? FolderChangeCounter.retired, ordering: .relaxed)
        committed(counted)
        return result
    }

    /// Empties the log without the change lock, for a change made without it (the lock could
    /// not be taken): writes the header of a new generation with no records, then cuts the old
    /// records off, so that every reader finds a generation it has not replayed and builds its
    /// state from the folder once. A log left with no header at all (when the header cannot be
    /// written) sends a reader that reads the header (no counter mapped) to the folder at every
    /// look, since it cannot say whether it was emptied again since. A holder's append under way
    /// at the same moment may write its records and header back; the caller also marks the
    /// change begun (``SharedFolder``), which the next holder turns into a new generation.
    func invalidateWithoutLock() {
        // Mapped without growing it, which only a holder of the lock does.
        if !changeCounter.isAttached {
            changeCounter.attach(path: changeCounterPath, io: io, sharedWithGroup: sharedWithGroup, growing: false)
        }
        let header = Self.encodeHeader(Header(generation: Self.nextGeneration(after: 0), sequence: 0, length: 0))
        let written: Void? = try? header.withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: 0) } }.get()
        _ = try? io.ftruncate(fd, written == nil ? 0 : Self.headerSize)
        changeCounter.bump()
    }

    /// Whether no writer changed the log's header since this one last let go of the change
    /// lock (the change counter still has the value it had then): no other writer has changed
    /// records since, so none is likely to wait for the lock now. `false` when not known (the
    /// counter is not mapped).
    var isUnchangedSinceLastHold: Bool {
        let verified = verifiedCount.load(ordering: .relaxed)
        return verified != FolderChangeCounter.retired && changeCounter.value == verified
    }

    /// Whether another holds the change lock now (a probe for tests and diagnostics).
    package func isChangeLockHeldElsewhere() -> Bool {
        do {
            try io.flock(fd, LOCK_EX | LOCK_NB)
        } catch {
            return error == .wouldBlock || error == .tryAgain
        }
        io.unlock(fd)
        return false
    }

    /// Opens the path again, for a folder made again at the root's path: the file open is the
    /// deleted folder's. Keeps it when the path cannot be opened (the next change lock tries again).
    /// The change counter is mapped again at the next change lock; looks read the header from
    /// now on.
    func reopen() {
        guard let reopened = try? Self.open(path, io: io, sharedWithGroup: sharedWithGroup) else { return }
        verifiedCount.store(FolderChangeCounter.retired, ordering: .relaxed)
        changeCounter.detach()
        io.close(descriptor.exchange(reopened, ordering: .relaxed))
    }

    /// Takes the `flock` on the file that `path` names now: when it was replaced or removed
    /// while this waited, the lock is let go of and the path opened again. The path is not
    /// looked at while the change counter has the value it had as this writer last let go of
    /// the lock on the file the path named (``verifiedCount``): a log made again at the path
    /// moves the counter as its first header is written, and whoever replaced the counter file
    /// too cut this writer off from the others anyway (see ``FolderChangeCounter``).
    private func lockCurrentFile() throws(CacheError) {
        while true {
            do {
                try io.flock(fd, LOCK_EX)
            } catch {
                throw CacheError(.ioFailure, "cannot take the change lock", path: path, errno: error.rawValue)
            }
            if isUnchangedSinceLastHold { return }
            let held = try? io.info(fd)
            let named = try? io.info(atPath: path)
            // One root, so one device: the inode names the file.
            if let held, let named, held.inode == named.inode { return }
            io.unlock(fd)
            verifiedCount.store(FolderChangeCounter.retired, ordering: .relaxed)
            let reopened = try Self.open(path, io: io, sharedWithGroup: sharedWithGroup)
            io.close(fd)
            descriptor.store(reopened, ordering: .relaxed)
            // The counter file may have been replaced too: mapped again once the lock is held.
            changeCounter.detach()
        }
    }
}
