#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
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
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/sh")
        gone.arguments = ["-c", "exit 0"]
        try gone.run()
        gone.waitUntilExit()
        let dead = gone.processIdentifier
        try Self.openShared(dir).close()
        let fd = open(dir.path + "/" + SharedFolder.sharingFileName, O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        var slot = UInt32(bitPattern: dead).littleEndian
        #expect(pwrite(fd, &slot, 4, off_t(SharedWriterTable.offset)) == 4)
        close(fd)
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
}
