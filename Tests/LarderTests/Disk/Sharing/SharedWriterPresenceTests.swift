#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import Testing
@testable import Larder

/// A writer that shares its folder holds no lock between its calls; the sharing file's table of
/// writers is what keeps a writer that would hold the folder alone out while one is open.
@Suite struct SharedWriterPresenceTests {
    /// The files beside the records that a sharing writer opens and locks.
    static let lockedFiles = [".larder.lock", FolderChangeLog.fileName, SharedFolder.sharingFileName]

    /// Whether another open of `name` in `dir` can take it exclusively now, without waiting:
    /// `false` while anyone (this process's other opens included) holds a `flock` on it.
    static func isUnlocked(_ dir: TemporaryDirectory, _ name: String) throws -> Bool {
        let fd = open(dir.path + "/" + name, O_RDWR | O_CLOEXEC)
        try #require(fd >= 0, "cannot open \(name): errno \(errno)")
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        _ = flock(fd, LOCK_UN)
        return true
    }

    /// The process ids in the sharing file's table of writers, free slots left out.
    static func registered(_ dir: TemporaryDirectory) throws -> [Int32] {
        let fd = open(dir.path + "/" + SharedFolder.sharingFileName, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let io = FileIO()
        return SharedWriterTable.read(fd: fd, io: io).filter { $0 != 0 }
    }

    /// Every slot of the sharing file's table of writers, free ones (0) included.
    static func table(_ dir: TemporaryDirectory) throws -> [Int32] {
        let fd = open(dir.path + "/" + SharedFolder.sharingFileName, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        return SharedWriterTable.read(fd: fd, io: FileIO())
    }

    /// Writes `pids` into the sharing file's table, from `slot` on.
    static func writeSlots(_ dir: TemporaryDirectory, _ pids: [Int32], from slot: Int = 0) throws {
        let fd = open(dir.path + "/" + SharedFolder.sharingFileName, O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var bytes = pids.map { UInt32(bitPattern: $0).littleEndian }
        let count = bytes.count * 4
        #expect(pwrite(fd, &bytes, count, off_t(SharedWriterTable.offset + slot * 4)) == count)
    }

    /// The id of a process that ran and has exited (as a writer killed while open leaves it).
    static func exitedProcessID() throws -> Int32 {
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/sh")
        gone.arguments = ["-c", "exit 0"]
        try gone.run()
        gone.waitUntilExit()
        return gone.processIdentifier
    }

    static func openShared(_ dir: TemporaryDirectory) throws -> DiskCache {
        var options = DiskCacheOptions(directory: dir.url)
        options.sharesFolderWithWriters = true
        return try DiskCache(options: options)
    }

    static func openAlone(_ dir: TemporaryDirectory, wait: TimeInterval = 0) throws -> DiskCache {
        var options = DiskCacheOptions(directory: dir.url)
        options.sharesFolderWithWriters = false
        options.writerWaitTimeout = wait
        return try DiskCache(options: options)
    }

    @Test func aSharingWriterHoldsNoLockBetweenItsCalls() throws {
        let dir = TemporaryDirectory("larder-presence")
        defer { dir.remove() }
        let a = try Self.openShared(dir)
        let b = try Self.openShared(dir)
        defer {
            a.close()
            b.close()
        }
        try a.store(Data("one".utf8), forKey: "k")
        #expect(try b.record(forKey: "k")?.data == Data("one".utf8))
        try b.lock(forKeys: ["k"])
        try a.collectGarbage()
        _ = try a.flush()
        for name in Self.lockedFiles {
            #expect(try Self.isUnlocked(dir, name), "\(name) is locked between calls")
        }
        #expect(try Self.registered(dir) == [getpid(), getpid()])
    }

    @Test func aWriterAloneWaitsForTheSharingWritersInTheTableThenComesIn() throws {
        let dir = TemporaryDirectory("larder-presence")
        defer { dir.remove() }
        let a = try Self.openShared(dir)
        #expect { try Self.openAlone(dir) } throws: { error in
            guard let error = error as? CacheError else { return false }
            return error.code == .directoryInUse && error.holderPID == getpid()
        }
        a.close()
        // Its slot is freed as it closes.
        #expect(try Self.registered(dir).isEmpty)
        let alone = try Self.openAlone(dir)
        // While it holds the folder alone, a sharing writer is refused.
        #expect { try Self.openShared(dir) } throws: { ($0 as? CacheError)?.code == .directoryInUse }
        #expect(try Self.registered(dir).isEmpty)
        alone.close()
        let again = try Self.openShared(dir)
        again.close()
    }

    @Test func theSlotOfAWriterThatNoLongerRunsKeepsNoOneOutAndIsTakenAgain() throws {
        let dir = TemporaryDirectory("larder-presence")
        defer { dir.remove() }
        // A writer killed while open leaves its slot: the id of a process that has exited.
        let dead = try Self.exitedProcessID()
        try Self.openShared(dir).close()
        try Self.writeSlots(dir, [dead])
        #expect(try Self.registered(dir) == [dead])
        let alone = try Self.openAlone(dir)
        alone.close()
        // The next sharing writer takes the slot over.
        let shared = try Self.openShared(dir)
        #expect(try Self.registered(dir) == [getpid()])
        shared.close()
    }

    @Test func aSharingWriterInAnotherProcessKeepsAWriterAloneOutWithoutHoldingALock() throws {
        let dir = TemporaryDirectory("larder-presence")
        defer { dir.remove() }
        let holder = try HelperProcess("larder-stress", ["hold", "--dir", dir.path, "--shares", "1"])
        defer { holder.kill() }
        let pid = try #require(holder.waitUntilReady())
        for name in Self.lockedFiles {
            #expect(try Self.isUnlocked(dir, name), "\(name) is locked by an idle sharing writer")
        }
        #expect { try Self.openAlone(dir) } throws: { error in
            guard let error = error as? CacheError else { return false }
            return error.code == .directoryInUse && error.holderPID == pid
        }
        // Another sharing writer is welcome meanwhile.
        let shared = try Self.openShared(dir)
        try shared.store(Data("x".utf8), forKey: "k")
        shared.close()
        // A writer killed holds no one out: its slot names a process that no longer runs.
        holder.kill()
        #expect(holder.wasKilled)
        let alone = try Self.openAlone(dir)
        #expect(try alone.record(forKey: "k")?.data == Data("x".utf8))
        alone.close()
    }

    @Test func aSharingWriterFindingEverySlotTakenByARunningProcessIsRefusedUntilOneIsFree() throws {
        let dir = TemporaryDirectory("larder-presence")
        defer { dir.remove() }
        try Self.openShared(dir).close()
        let me = getpid()
        var expected = [Int32](repeating: me, count: SharedWriterTable.slotCount)
        try Self.writeSlots(dir, expected)
        #expect { try Self.openShared(dir) } throws: { error in
            guard let error = error as? CacheError else { return false }
            return error.code == .directoryInUse && error.message.contains("\(SharedWriterTable.slotCount) writers share")
        }
        // The refused writer changed no slot, and holds no lock.
        #expect(try Self.table(dir) == expected)
        for name in Self.lockedFiles {
            #expect(try Self.isUnlocked(dir, name), "\(name) is locked after a refused open")
        }
        // A slot that names a process that no longer runs is taken by the next writer...
        try Self.writeSlots(dir, [try Self.exitedProcessID()], from: 517)
        let a = try Self.openShared(dir)
        #expect(try Self.table(dir) == expected)
        // ...and freed as it closes; a free slot is taken too.
        a.close()
        expected[517] = 0
        #expect(try Self.table(dir) == expected)
        let b = try Self.openShared(dir)
        expected[517] = me
        #expect(try Self.table(dir) == expected)
        #expect { try Self.openShared(dir) } throws: { ($0 as? CacheError)?.code == .directoryInUse }
        b.close()
    }

    /// What an opener may find at `.larder-sharing` that no writer left there.
    enum HostileSharingFile: CaseIterable, CustomTestStringConvertible {
        /// Random bytes, the change mark included, over the whole table.
        case garbage
        /// Every slot names a process that does not run: one that exited, ids past any pid limit,
        /// negative ids.
        case processesThatDoNotRun
        /// Three bytes: the table's offset is past the end.
        case shorterThanTheTableOffset
        /// One slot, then half of one.
        case endsInsideASlot
        /// The table, of processes that do not run, then 64 KiB of slots naming this process:
        /// past the table they count for no one.
        case longerThanTheTable
        /// A FIFO, which no opener may block on.
        case fifo
        /// A link to a file outside the folder that names this process, which no opener follows.
        case linkOutOfTheFolder

        var testDescription: String { "\(self)" }

        /// The file's bytes (for a link, its target's).
        func contents(exited: Int32) -> [UInt8] {
            func bytes(_ pids: [Int32]) -> [UInt8] {
                pids.flatMap { pid in withUnsafeBytes(of: UInt32(bitPattern: pid).littleEndian) { Array($0) } }
            }
            let slots = SharedWriterTable.slotCount
            let dead: [Int32] = (0 ..< slots).map { i in [exited, Int32.max, Int32.min, -1][i % 4] }
            switch self {
            case .garbage:
                var random = SplitMix64(seed: 47)
                return (0 ..< SharedWriterTable.offset + slots * 4).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case .processesThatDoNotRun: return [0, 0, 0, 0, 0, 0, 0, 0] + bytes(dead)
            case .shorterThanTheTableOffset: return [1, 2, 3]
            case .endsInsideASlot: return [0, 0, 0, 0, 0, 0, 0, 0] + bytes([exited]) + [0xff, 0x7f]
            case .longerThanTheTable:
                return [0, 0, 0, 0, 0, 0, 0, 0] + bytes(dead) + bytes([Int32](repeating: getpid(), count: 16_384))
            case .fifo: return []
            case .linkOutOfTheFolder: return [0, 0, 0, 0, 0, 0, 0, 0] + bytes([getpid()])
            }
        }
    }

    /// A sharing file no writer left never crashes an opener nor blocks one: a writer alone opens
    /// unless a slot in the table names a running process, a sharing writer opens and takes a
    /// slot, and a FIFO or a link is refused by a sharing writer and read by no one.
    @Test(arguments: HostileSharingFile.allCases)
    func aHostileSharingFileNeitherCrashesNorBlocksAnOpener(_ kind: HostileSharingFile) throws {
        let dir = TemporaryDirectory("larder-presence")
        defer { dir.remove() }
        let outside = TemporaryDirectory("larder-presence-outside")
        defer { outside.remove() }
        try Self.openShared(dir).close()
        let path = dir.path + "/" + SharedFolder.sharingFileName
        try FileManager.default.removeItem(atPath: path)
        let contents = kind.contents(exited: try Self.exitedProcessID())
        switch kind {
        case .fifo:
            #expect(mkfifo(path, 0o600) == 0)
        case .linkOutOfTheFolder:
            let target = outside.path + "/named"
            try Data(contents).write(to: URL(fileURLWithPath: target))
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        default:
            try Data(contents).write(to: URL(fileURLWithPath: path))
        }
        let isFile = kind != .fifo && kind != .linkOutOfTheFolder
        // The running processes the table names, as the test reads it: what keeps a writer alone out.
        let table = isFile ? Array(contents.dropFirst(SharedWriterTable.offset).prefix(SharedWriterTable.slotCount * 4)) : []
        var running: [Int32] = []
        for slot in 0 ..< table.count / 4 {
            var value: UInt32 = 0
            for byte in 0 ..< 4 { value |= UInt32(table[slot * 4 + byte]) << (8 * byte) }
            let pid = Int32(bitPattern: value)
            if pid > 0, kill(pid, 0) == 0 || errno == EPERM { running.append(pid) }
        }
        #expect(SharedWriterTable.runningWriters(inFile: isFile ? contents : []) == running)
        if let holder = running.first {
            #expect { try Self.openAlone(dir) } throws: { error in
                guard let error = error as? CacheError else { return false }
                return error.code == .directoryInUse && error.holderPID == holder
            }
        } else {
            try Self.openAlone(dir).close()
        }
        if isFile {
            let shared = try Self.openShared(dir)
            #expect(try Self.registered(dir).filter { $0 == getpid() }.count == 1)
            shared.close()
        } else {
            #expect { try Self.openShared(dir) } throws: { ($0 as? CacheError)?.code == .unsafeDirectory }
        }
        if running.isEmpty { try Self.openAlone(dir).close() }
        if kind == .linkOutOfTheFolder {
            #expect(try Data(contentsOf: URL(fileURLWithPath: outside.path + "/named")) == Data(contents))
        }
    }

    /// A writer alone whose first try met a sharing writer, and whose later tries met the folder
    /// held by a writer alone, is refused naming the writer alone: what its last try met.
    @Test func aRefusalNamesWhatTheLastTryMet() throws {
        let dir = TemporaryDirectory("larder-presence")
        defer { dir.remove() }
        let lockPath = dir.path + "/.larder.lock"
        // The process id a writer holding the folder alone leaves in the lock file.
        try Data("4242\n".utf8).write(to: URL(fileURLWithPath: lockPath))
        let tries = Atomic<Int>(0)
        var calls = SystemCalls.live
        let flock = calls.flock
        calls.flock = { fd, operation in
            guard operation == LOCK_EX | LOCK_NB else { return flock(fd, operation) }
            // The first try takes the lock; every later one finds it held.
            if tries.add(1, ordering: .relaxed).newValue == 1 { return flock(fd, operation) }
            errno = EWOULDBLOCK
            return -1
        }
        let io = try FileIO(calls: calls).rooted(at: dir.path)
        let sharer = getpid()
        #expect {
            try DirectoryLock(path: lockPath, io: io, waitingUpTo: 2, sharingWriter: { sharer })
        } throws: { error in
            guard let error = error as? CacheError else { return false }
            return error.code == .directoryInUse && error.holderPID == 4242 && error.message.contains("process 4242")
        }
        #expect(tries.load(ordering: .relaxed) >= 2)
    }
}
