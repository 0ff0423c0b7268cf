import Foundation
import Synchronization
import Testing
@testable import Larder

/// The change counter of a folder's change log (`.larder-changes-shm`, ``FolderChangeCounter``):
/// a writer sharing its folder reads the log's header only when the counter moved, every change
/// to the header moves it, and a counter file that cannot be trusted leaves the writer reading
/// the header before every look, as correct as before.
@Suite struct SharedFolderChangeCounterTests {
    /// System calls that count the reads of the change log's header (36 bytes at offset 0 of
    /// the log's inode) while ``count(_:)`` runs, and can report the counter file as another
    /// user's.
    final class Probe: Sendable {
        private let counting = Atomic<Bool>(false)
        private let reads = Atomic<Int>(0)
        private let logInode = Atomic<UInt64>(0)
        /// The inode whose owner `fstat` reports as another user (0: none).
        let foreignInode = Atomic<UInt64>(0)

        var calls: SystemCalls {
            var calls = SystemCalls.live
            let livePread = calls.pread
            let liveFstat = calls.fstat
            calls.pread = { [self] fd, buffer, count, offset in
                if counting.load(ordering: .relaxed), count == FolderChangeLog.headerSize, offset == 0 {
                    var info = stat()
                    if liveFstat(fd, &info) == 0, UInt64(info.st_ino) == logInode.load(ordering: .relaxed) {
                        reads.add(1, ordering: .relaxed)
                    }
                }
                return livePread(fd, buffer, count, offset)
            }
            calls.fstat = { [self] fd, buffer in
                let result = liveFstat(fd, buffer)
                let foreign = foreignInode.load(ordering: .relaxed)
                if result == 0, foreign != 0, UInt64(buffer.pointee.st_ino) == foreign { buffer.pointee.st_uid &+= 1 }
                return result
            }
            return calls
        }

        /// Takes the log in `dir` as the file whose header reads are counted.
        func watchLog(in dir: TemporaryDirectory) throws {
            logInode.store(try Self.inode(dir.path + "/" + FolderChangeLog.fileName), ordering: .relaxed)
        }

        static func inode(_ path: String) throws -> UInt64 {
            var info = stat()
            try #require(lstat(path, &info) == 0)
            return UInt64(info.st_ino)
        }

        /// The header reads `body` made.
        func count(_ body: () throws -> Void) throws -> Int {
            reads.store(0, ordering: .relaxed)
            counting.store(true, ordering: .relaxed)
            defer { counting.store(false, ordering: .relaxed) }
            try body()
            return reads.load(ordering: .relaxed)
        }
    }

    static func openCounted(_ dir: TemporaryDirectory, _ probe: Probe, clock: ManualClock, encoding: KeyEncoding = .verbatim) throws
        -> DiskCache
    {
        var options = testOptions(dir.url, clock: clock, encoding: encoding)
        options.sharesFolderWithWriters = true
        return try DiskCache(options: options, systemCalls: probe.calls)
    }

    static let payload = SharedFolderCacheTests.payload

    /// Looks that find nothing changed (misses, totals, listings) read no header; a look after
    /// another writer's change reads it, replays the change, and the looks after read none again.
    @Test func aLookReadsTheLogsHeaderOnlyAfterAnotherWritersChange() throws {
        let dir = TemporaryDirectory("larder-shared-counter")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let probe = Probe()
        let a = try Self.openCounted(dir, probe, clock: clock)
        let b = try SharedFolderCacheTests.open(dir, clock: clock)
        defer {
            a.close()
            b.close()
        }
        try probe.watchLog(in: dir)
        #expect(a.sharedFolder?.log.changeCount != nil)
        try b.store(Self.payload("x", 1), forKey: "x")
        #expect(a.count == 1)
        let idle = try probe.count {
            let missing = try a.value(forKey: "missing")
            let keys = try a.keys()
            #expect(missing == nil && a.count == 1 && keys == ["x"])
        }
        #expect(idle == 0)
        try b.store(Self.payload("y", 1), forKey: "y")
        let moved = try probe.count {
            #expect(a.count == 2)
        }
        #expect(moved >= 1)
        #expect(try Set(a.keys()) == ["x", "y"])
        // This writer's own change is counted as its own: the look after it reads no header.
        try a.store(Self.payload("z", 1), forKey: "z")
        try b.remove(forKey: "x")
        #expect(a.count == 2)
        let after = try probe.count {
            let keys = try Set(a.keys())
            let removed = try a.value(forKey: "x")
            #expect(a.count == 2 && keys == ["y", "z"] && removed == nil)
        }
        #expect(after == 0)
        try a.store(Self.payload("w", 1), forKey: "w")
        let own = try probe.count { #expect(a.count == 3) }
        #expect(own == 0)
        #expect(b.count == 3)
    }

    /// A change another process makes (`larder-stress shared-change`) is seen at the next look,
    /// although the looks before it read no header.
    @Test func anotherProcesssChangeIsSeenAtTheNextLook() throws {
        let dir = TemporaryDirectory("larder-shared-counter-mp")
        defer { dir.remove() }
        let probe = Probe()
        let a = try Self.openCounted(dir, probe, clock: ManualClock(now: 1_700_000_000), encoding: .sha256)
        defer { a.close() }
        try probe.watchLog(in: dir)
        #expect(try a.keys().isEmpty)
        let idle = try probe.count {
            let missing = try a.value(forKey: "k")
            #expect(a.count == 0 && missing == nil)
        }
        #expect(idle == 0)
        for (change, text) in [("store", "hello"), ("lock", "")] {
            let helper = try HelperProcess(
                "larder-stress", ["shared-change", "--dir", dir.path, "--key", "k", "--change", change, "--text", text])
            defer { helper.kill() }
            #expect(helper.waitForExit() == 0)
        }
        let moved = try probe.count {
            #expect(a.count == 1)
            #expect(a.lockedSize > 0)
        }
        #expect(moved >= 1)
        #expect(try a.value(forKey: "k") == Data("hello".utf8))
        let again = try probe.count { #expect(a.count == 1) }
        #expect(again == 0)
    }

    /// A counter file that is a link, another user's, or not Larder's layout is never mapped
    /// (nor changed, unless it is Larder's and another writer maps it): the writers read the
    /// header before every look and still see each other's changes.
    @Test(arguments: ["link", "other user", "foreign bytes", "too long"])
    func aCounterFileNotToTrustLeavesTheWriterReadingTheHeader(kind: String) throws {
        let dir = TemporaryDirectory("larder-shared-counter-bad")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let path = dir.path + "/" + FolderChangeCounter.fileName
        let target = dir.path + "-target"
        defer { try? FileManager.default.removeItem(atPath: target) }
        let probe = Probe()
        var expected: Data?
        switch kind {
        case "link":
            try Data(FolderChangeCounter.magic).write(to: URL(fileURLWithPath: target))
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
            expected = Data(FolderChangeCounter.magic)
        case "other user":
            try Data().write(to: URL(fileURLWithPath: path))
            probe.foreignInode.store(try Probe.inode(path), ordering: .relaxed)
        case "foreign bytes":
            expected = Data("not larder's".utf8)
            try expected!.write(to: URL(fileURLWithPath: path))
        default:
            expected = Data(FolderChangeCounter.magic + [UInt8](repeating: 0, count: FolderChangeCounter.size))
            try expected!.write(to: URL(fileURLWithPath: path))
        }
        let a = try Self.openCounted(dir, probe, clock: clock)
        defer { a.close() }
        // The other writer, when it may, maps the file another user's for `a` alone.
        let b = try SharedFolderCacheTests.open(dir, clock: clock)
        defer { b.close() }
        try probe.watchLog(in: dir)
        #expect(a.sharedFolder?.log.changeCount == nil)
        #expect((b.sharedFolder?.log.changeCount != nil) == (kind == "other user"))
        try b.store(Self.payload("x", 1), forKey: "x")
        let reads = try probe.count { #expect(a.count == 1) }
        #expect(reads >= 1)
        let idle = try probe.count { #expect(a.count == 1) }
        #expect(idle >= 1)
        try b.remove(forKey: "x")
        #expect(a.count == 0)
        // A change by a writer that could not map the file retires the counter that the other
        // writer maps: from then on, both read the header before every look.
        try a.store(Self.payload("y", 1), forKey: "y")
        #expect(b.sharedFolder?.log.changeCount == (kind == "other user" ? FolderChangeCounter.retired : nil))
        #expect(b.count == 1)
        #expect(try b.value(forKey: "y") == Self.payload("y", 1))
        if let expected {
            #expect(FileManager.default.contents(atPath: kind == "link" ? target : path) == expected)
        }
    }

    /// A counter file cut short while it was made (the beginning of Larder's layout) is grown
    /// to its size and mapped.
    @Test func aShortCounterFileOfLardersLayoutIsGrownAndMapped() throws {
        let dir = TemporaryDirectory("larder-shared-counter-short")
        defer { dir.remove() }
        let path = dir.path + "/" + FolderChangeCounter.fileName
        try Data(FolderChangeCounter.magic[..<3]).write(to: URL(fileURLWithPath: path))
        let a = try SharedFolderCacheTests.open(dir, clock: ManualClock(now: 1_700_000_000))
        defer { a.close() }
        #expect(a.sharedFolder?.log.changeCount != nil)
        let contents = try #require(FileManager.default.contents(atPath: path))
        #expect(contents.count == FolderChangeCounter.size)
        #expect(contents.prefix(8) == Data(FolderChangeCounter.magic))
    }

    /// A model of the log's changes: appends, new generations, failed writes (the header's
    /// write refused), changes made without the lock, a log opened again. After each, when the
    /// header's bytes changed, the counter another open of the log reads has moved; and the
    /// count a holder is given (`committed`) is the counter's value while nothing changed since.
    @Test(arguments: [1, 2, 3])
    func everyChangeToTheLogsHeaderMovesTheCounter(seed: UInt64) throws {
        let dir = TemporaryDirectory("larder-shared-counter-model")
        defer { dir.remove() }
        let logPath = dir.path + "/" + FolderChangeLog.fileName
        let refuseHeader = Atomic<Bool>(false)
        var calls = SystemCalls.live
        let pwrite = calls.pwrite
        calls.pwrite = { fd, buffer, count, offset in
            if refuseHeader.load(ordering: .relaxed), offset == 0, count == FolderChangeLog.headerSize {
                errno = EIO
                return -1
            }
            return pwrite(fd, buffer, count, offset)
        }
        let log = try FolderChangeLog(path: logPath, io: try FileIO(calls: calls).rooted(at: dir.path))
        let observer = try FolderChangeLog(path: logPath, io: try FileIO().rooted(at: dir.path))
        // Both map the counter at their first change lock.
        _ = try observer.withChangeLock { _ in () }
        _ = try log.withChangeLock { _ in () }
        #expect(observer.changeCount != nil)
        func header() -> Data { (FileManager.default.contents(atPath: logPath) ?? Data()).prefix(FolderChangeLog.headerSize) }
        var random = SplitMix64(seed: seed)
        var counted = 0
        for step in 0 ..< 300 {
            let before = (header: header(), count: observer.changeCount)
            var given: UInt64??
            let operation = Int.random(in: 0 ..< 8, using: &random)
            switch operation {
            case 0, 1, 2:
                let records = Int.random(in: 0 ... 3, using: &random)
                let append = { (appender: inout FolderChangeLog.Appender) in
                    for r in 0 ..< records { appender.append(kind: 1, payload: Array("\(step).\(r)".utf8)) }
                }
                try log.withChangeLock(committed: { given = $0 }, append)
            case 3:
                let reset = { (appender: inout FolderChangeLog.Appender) in
                    appender.reset()
                    appender.append(kind: 1, payload: [UInt8(step & 0xff)])
                }
                try log.withChangeLock(committed: { given = $0 }, reset)
            case 4:
                refuseHeader.store(true, ordering: .relaxed)
                #expect(throws: CacheError.self) {
                    try log.withChangeLock { appender in appender.append(kind: 1, payload: [1]) }
                }
                refuseHeader.store(false, ordering: .relaxed)
            case 5:
                log.invalidateWithoutLock()
            case 6:
                // The header rewritten by the other open (a change of another writer).
                try observer.withChangeLock { appender in appender.append(kind: 1, payload: [2]) }
            default:
                log.reopen()
            }
            let after = (header: header(), count: observer.changeCount)
            if after.header != before.header {
                counted += 1
                #expect(after.count != before.count, "step \(step): operation \(operation) changed the header uncounted")
            }
            if let given, let value = given {
                // Only the counter's first mapping is read; a log opened again gives `nil`.
                #expect(value == after.count, "step \(step): operation \(operation)")
            }
            let size = (try? FileManager.default.attributesOfItem(atPath: logPath + "-shm")[.size] as? Int) ?? 0
            #expect(size == FolderChangeCounter.size)
        }
        #expect(counted > 100)
    }
}
