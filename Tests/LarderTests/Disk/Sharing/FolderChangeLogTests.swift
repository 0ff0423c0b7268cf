import Foundation
import Testing
@testable import Larder

/// The change log that writers sharing a folder append to and replay: two logs opened on one
/// file stand for two processes (each open is its own `flock` holder).
@Suite struct FolderChangeLogTests {
    static func open(_ dir: TemporaryDirectory) throws -> FolderChangeLog {
        try FolderChangeLog(path: dir.path + "/" + FolderChangeLog.fileName, io: try FileIO().rooted(at: dir.path))
    }

    /// Two logs on one file in a new folder, as two processes open it; the folder goes after `body`.
    static func withTwoLogs(_ body: (TemporaryDirectory, FolderChangeLog, FolderChangeLog) throws -> Void) throws {
        let dir = TemporaryDirectory("larder-changes")
        defer { dir.remove() }
        try body(dir, try open(dir), try open(dir))
    }

    static func append(_ log: FolderChangeLog, _ texts: [String], kind: UInt8 = 1) throws {
        try log.withChangeLock { appender in
            for text in texts { appender.append(kind: kind, payload: Array(text.utf8)) }
        }
    }

    /// The cursor a reader starts from: it builds its state from the folder, then follows.
    static func follow(_ log: FolderChangeLog) throws -> FolderChangeLog.Cursor {
        guard case .reset(let cursor) = log.changes(after: .start) else {
            Issue.record("a new reader did not start from the folder")
            throw CancellationError()
        }
        return cursor
    }

    static func texts(_ tail: FolderChangeLog.Tail) -> [String]? {
        guard case .records(let records, _) = tail else { return nil }
        return records.map { String(decoding: $0.payload, as: UTF8.self) }
    }

    static func patch(_ dir: TemporaryDirectory, at offset: UInt64, _ bytes: [UInt8]) throws {
        let handle = try FileHandle(forUpdating: dir.url.appendingPathComponent(FolderChangeLog.fileName))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: Data(bytes))
    }

    /// Turns every bit of the log's byte at `offset`: unlike writing a fixed byte, always a
    /// change, whatever the byte held (a header's random generation, or a CRC over it, may hold
    /// any value).
    static func flip(_ dir: TemporaryDirectory, at offset: UInt64) throws {
        let handle = try FileHandle(forUpdating: dir.url.appendingPathComponent(FolderChangeLog.fileName))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        guard let byte = try handle.read(upToCount: 1)?.first else { throw CocoaError(.fileReadCorruptFile) }
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: Data([~byte]))
    }

    @Test func whatOneAppendsTheOtherReadsInOrderOnce() throws {
        try Self.withTwoLogs { dir, a, b throws in
            try Self.append(a, ["first"])
            var cursor = try Self.follow(b)
            #expect(!b.hasMoved(since: cursor))
            #expect(b.changes(after: cursor) == .current)
            try Self.append(a, ["store k1", "remove k2"])
            try Self.append(a, ["lock k3"])
            #expect(b.hasMoved(since: cursor))
            let tail = b.changes(after: cursor)
            #expect(Self.texts(tail) == ["store k1", "remove k2", "lock k3"])
            guard case .records(let records, let next) = tail else { return }
            #expect(records.map(\.sequence) == [2, 3, 4])
            cursor = next
            #expect(!b.hasMoved(since: cursor))
            #expect(b.changes(after: cursor) == .current)
        }
    }

    @Test func aResetSendsEveryReaderBackToTheFolder() throws {
        try Self.withTwoLogs { dir, a, b throws in
            try Self.append(a, ["one"])
            let cursor = try Self.follow(b)
            try a.withChangeLock { appender in
                appender.reset()
                appender.append(kind: 1, payload: Array("after".utf8))
            }
            guard case .reset(let fresh) = b.changes(after: cursor) else {
                Issue.record("a new generation was replayed as a tail")
                return
            }
            #expect(fresh.generation != cursor.generation)
            #expect(fresh.sequence == 1)
            #expect(b.changes(after: fresh) == .current)
            // The old generation's bytes are given back.
            let size = try FileManager.default.attributesOfItem(atPath: dir.path + "/" + FolderChangeLog.fileName)[.size] as? Int
            #expect(size == FolderChangeLog.headerSize + FolderChangeLog.recordOverhead + 5)
        }
    }

    /// A writer killed after writing its record and before the header that makes it visible.
    @Test func aRecordWithoutItsHeaderIsNeverReadAndIsOverwritten() throws {
        try Self.withTwoLogs { dir, a, b throws in
            try Self.append(a, ["one"])
            let cursor = try Self.follow(b)
            let end = UInt64(cursor.offset)
            try Self.patch(dir, at: end, [UInt8](repeating: 0x5A, count: 40))
            #expect(b.changes(after: cursor) == .current)
            try Self.append(a, ["two"])
            #expect(Self.texts(b.changes(after: cursor)) == ["two"])
        }
    }

    @Test(arguments: [0, 9, 20, 33])
    func aDamagedHeaderIsAResetThatTheNextAppendRepairs(offset: Int) throws {
        try Self.withTwoLogs { dir, a, b throws in
            try Self.append(a, ["one"])
            let cursor = try Self.follow(b)
            try Self.flip(dir, at: UInt64(offset))
            #expect(b.hasMoved(since: cursor))
            #expect(b.changes(after: cursor) == .reset(.start))
            try Self.append(a, ["two"])
            guard case .reset(let fresh) = b.changes(after: cursor) else {
                Issue.record("a repaired log was replayed as a tail")
                return
            }
            #expect(fresh.generation != cursor.generation && fresh.generation != 0)
            try Self.append(a, ["three"])
            #expect(Self.texts(b.changes(after: fresh)) == ["three"])
        }
    }

    @Test(arguments: [0, 4, 5, 13, 16])
    func aDamagedRecordIsAResetNotACrash(offset: Int) throws {
        try Self.withTwoLogs { dir, a, b throws in
            try Self.append(a, ["zero"])
            let cursor = try Self.follow(b)
            try Self.append(a, ["one", "two"])
            try Self.patch(dir, at: UInt64(cursor.offset + offset), [0xFF, 0xFF])
            guard case .reset = b.changes(after: cursor) else {
                Issue.record("a damaged record at \(offset) was replayed")
                return
            }
        }
    }

    @Test func aFileOfOtherBytesIsAResetThenALog() throws {
        let dir = TemporaryDirectory("larder-changes")
        defer { dir.remove() }
        try Data((0 ..< 500).map { UInt8(truncatingIfNeeded: $0 &* 37) })
            .write(to: dir.url.appendingPathComponent(FolderChangeLog.fileName))
        let a = try Self.open(dir)
        #expect(a.changes(after: .start) == .reset(.start))
        try Self.append(a, ["one"])
        let cursor = try Self.follow(a)
        #expect(cursor.sequence == 1)
    }

    /// A header whose CRC holds but whose counts Larder never writes: damaged, not trusted.
    @Test(arguments: [(UInt64.max, 1000), (1, Int.max - 100), (10, 100)] as [(UInt64, Int)])
    func aHeaderPastTheBoundsIsAResetNotACrash(sequence: UInt64, length: Int) throws {
        let dir = TemporaryDirectory("larder-changes")
        defer { dir.remove() }
        let header = FolderChangeLog.encodeHeader(.init(generation: 5, sequence: sequence, length: length))
        try Data(header).write(to: dir.url.appendingPathComponent(FolderChangeLog.fileName))
        let a = try Self.open(dir)
        #expect(a.changes(after: .start) == .reset(.start))
        #expect(a.changes(after: .init(generation: 5, sequence: 0, offset: FolderChangeLog.headerSize)) == .reset(.start))
        try Self.append(a, ["one"])
        let cursor = try Self.follow(a)
        #expect(cursor.generation != 5 && cursor.sequence == 1)
    }

    @Test func aLinkInItsPlaceIsRefused() throws {
        let dir = TemporaryDirectory("larder-changes")
        defer { dir.remove() }
        try FileManager.default.createSymbolicLink(
            atPath: dir.path + "/" + FolderChangeLog.fileName, withDestinationPath: dir.path + "/elsewhere")
        #expect { _ = try Self.open(dir) } throws: { ($0 as? CacheError)?.code == .unsafeDirectory }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/elsewhere"))
    }

    /// A store and a removal in one index, replayed from the log into another's.
    @Test func indexChangesReplayIntoAnotherIndex() throws {
        try Self.withTwoLogs { dir, a, b throws in
            var mine = DiskIndex()
            var theirs = DiskIndex()
            for key in ["k1", "k2"] {
                mine.upsert(IndexEntry(name: key, key: key, diskSize: 4096, updateTime: 7, lastAccessMs: 7000, ttl: 0, lockCount: 0))
            }
            mine.clearChanges()
            theirs = mine
            try Self.append(a, ["start"])
            var cursor = try Self.follow(b)
            mine.upsert(IndexEntry(name: "k3", key: "k3", diskSize: 8192, updateTime: 9, lastAccessMs: 9000, ttl: 60, lockCount: 1))
            mine.removeEntry(named: "k1")
            let taken = mine.takeChanges()
            let changes = try #require(taken)
            try a.withChangeLock { $0.append(kind: 2, payload: IndexJournal.changesPayload(changes)) }
            guard case .records(let records, let next) = b.changes(after: cursor) else {
                Issue.record("the change was not read")
                return
            }
            cursor = next
            #expect(records.map(\.kind) == [2])
            var touched: [String] = []
            for record in records {
                #expect(IndexJournal.applyChanges(record.payload, to: &theirs, keyEncoding: .verbatim, touched: &touched))
            }
            #expect(Set(touched) == ["k1", "k3"])
            #expect(!theirs.contains("k1"))
            #expect(theirs.contains("k2"))
            #expect(theirs.contains("k3"))
            #expect(theirs.totalSize == mine.totalSize)
            #expect(theirs.totalSize == 4096 + 8192)
        }
    }
}
