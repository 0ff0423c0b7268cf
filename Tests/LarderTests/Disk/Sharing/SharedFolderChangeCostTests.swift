import Foundation
import Synchronization
import Testing
@testable import Larder

/// What a writer sharing its folder does while it holds the change lock, which every other
/// writer's change waits for: as little file work as the protocol allows.
@Suite struct SharedFolderChangeCostTests {
    /// A probe of the change lock, opened apart from the cache's (so its `flock` meets the cache's).
    private static func probe(_ dir: TemporaryDirectory) throws -> FolderChangeLog {
        try FolderChangeLog(path: dir.url.path + "/" + FolderChangeLog.fileName, io: try FileIO().rooted(at: dir.url.path))
    }

    /// A store that replaces a record frees the replaced file's blocks (its last close) after the
    /// change lock is let go of, not inside it.
    @Test func theFileAStoreReplacesIsClosedLastAfterTheChangeLockIsLetGoOf() throws {
        // 1: watching; 2: the replaced file's inode, once the rename is under way.
        let watching = Atomic<Bool>(false)
        let replaced = Atomic<UInt64>(0)
        let closedReplaced = Atomic<Int>(0)
        let closedUnderTheLock = Atomic<Int>(0)
        let log = LarderMutex<FolderChangeLog?>(nil)
        var calls = SystemCalls.live
        let renameat = calls.renameat
        let close = calls.close
        calls.renameat = { fromDirectory, from, toDirectory, to in
            if watching.load(ordering: .relaxed), replaced.load(ordering: .relaxed) == 0 {
                var info = stat()
                if fstatat(toDirectory, to, &info, AT_SYMLINK_NOFOLLOW) == 0 { replaced.store(UInt64(info.st_ino), ordering: .relaxed) }
            }
            return renameat(fromDirectory, from, toDirectory, to)
        }
        calls.close = { fd in
            let inode = replaced.load(ordering: .relaxed)
            if watching.load(ordering: .relaxed), inode != 0 {
                var info = stat()
                if fstat(fd, &info) == 0, UInt64(info.st_ino) == inode {
                    closedReplaced.add(1, ordering: .relaxed)
                    if log.withLock({ $0?.isChangeLockHeldElsewhere() }) == true { closedUnderTheLock.add(1, ordering: .relaxed) }
                }
            }
            return close(fd)
        }
        // No kept descriptors: a kept one would hold the replaced file open anyway.
        let keepsNoDescriptors: (inout DiskCacheOptions) -> Void = { $0.maximumOpenFiles = 0 }
        try SharedFolderCacheTests.withTwoWriters("larder-shared-cost", systemCallsOfA: calls, configureA: keepsNoDescriptors) {
            dir, _, a, b throws in
            try b.store(SharedFolderCacheTests.payload("k", 1), forKey: "k")
            log.withLock { $0 = try? Self.probe(dir) }
            watching.store(true, ordering: .relaxed)
            try a.store(SharedFolderCacheTests.payload("k", 2), forKey: "k")
            watching.store(false, ordering: .relaxed)
            #expect(replaced.load(ordering: .relaxed) != 0)
            #expect(closedReplaced.load(ordering: .relaxed) == 1)
            #expect(closedUnderTheLock.load(ordering: .relaxed) == 0)
            #expect(try b.value(forKey: "k") == SharedFolderCacheTests.payload("k", 2))
            #expect(a.count == 1 && b.count == 1 && a.totalSize == b.totalSize)
        }
    }

    /// A change made when nothing was recorded since this writer last looked reads the log's
    /// header once under the change lock: the holder's own read says nothing moved.
    @Test func aChangeReadsTheLogsHeaderOnceUnderTheLockWhenNothingMoved() throws {
        let counting = Atomic<Bool>(false)
        let headerReads = Atomic<Int>(0)
        let log = LarderMutex<FolderChangeLog?>(nil)
        var calls = SystemCalls.live
        let pread = calls.pread
        calls.pread = { fd, buffer, count, offset in
            if counting.load(ordering: .relaxed), count == FolderChangeLog.headerSize, offset == 0,
                log.withLock({ $0?.isChangeLockHeldElsewhere() }) == true
            {
                headerReads.add(1, ordering: .relaxed)
            }
            return pread(fd, buffer, count, offset)
        }
        try SharedFolderCacheTests.withTwoWriters("larder-shared-cost", systemCallsOfA: calls) { dir, _, a, b throws in
            try b.store(SharedFolderCacheTests.payload("x", 1), forKey: "x")
            try a.store(SharedFolderCacheTests.payload("y", 1), forKey: "y")
            log.withLock { $0 = try? Self.probe(dir) }
            counting.store(true, ordering: .relaxed)
            try a.store(SharedFolderCacheTests.payload("z", 1), forKey: "z")
            counting.store(false, ordering: .relaxed)
            #expect(headerReads.load(ordering: .relaxed) == 1)
            // And a change after another writer's still replays it first.
            try b.store(SharedFolderCacheTests.payload("x", 2), forKey: "x")
            try a.store(SharedFolderCacheTests.payload("w", 1), forKey: "w")
            #expect(a.count == 4 && b.count == 4)
            #expect(try Set(a.keys()) == ["w", "x", "y", "z"])
            #expect(try a.value(forKey: "x") == SharedFolderCacheTests.payload("x", 2))
        }
    }

    /// A change made when no writer changed the log since this one last held the change lock
    /// takes the lock without looking at the log's path again (`fstatat`); one made after
    /// another writer's change looks, as does one after the log was made again at its path,
    /// which the change then goes to.
    @Test func aChangeLooksAtTheLogsPathOnlyAfterAnotherWritersChange() throws {
        let counting = Atomic<Bool>(false)
        let pathLooks = Atomic<Int>(0)
        var calls = SystemCalls.live
        let fstatat = calls.fstatat
        calls.fstatat = { directory, name, buffer, flags in
            if counting.load(ordering: .relaxed), String(cString: name) == FolderChangeLog.fileName {
                pathLooks.add(1, ordering: .relaxed)
            }
            return fstatat(directory, name, buffer, flags)
        }
        try SharedFolderCacheTests.withTwoWriters("larder-shared-cost", systemCallsOfA: calls) { dir, clock, a, b throws in
            try a.store(SharedFolderCacheTests.payload("x", 1), forKey: "x")
            counting.store(true, ordering: .relaxed)
            try a.store(SharedFolderCacheTests.payload("y", 1), forKey: "y")
            try a.remove(forKey: "y")
            #expect(pathLooks.load(ordering: .relaxed) == 0)
            try b.store(SharedFolderCacheTests.payload("z", 1), forKey: "z")
            try a.store(SharedFolderCacheTests.payload("w", 1), forKey: "w")
            #expect(pathLooks.load(ordering: .relaxed) == 1)
            counting.store(false, ordering: .relaxed)
            #expect(try b.value(forKey: "w") == SharedFolderCacheTests.payload("w", 1))

            // The log removed and made again by a writer that opens afterwards: A's next change
            // finds the counter moved, looks at the path, and records its change in the new log.
            #expect(unlink(dir.url.path + "/" + FolderChangeLog.fileName) == 0)
            let c = try SharedFolderCacheTests.open(dir, clock: clock)
            defer { c.close() }
            #expect(try c.value(forKey: "v") == nil)
            try a.store(SharedFolderCacheTests.payload("v", 1), forKey: "v")
            #expect(try c.value(forKey: "v") == SharedFolderCacheTests.payload("v", 1))
            #expect(try Set(c.keys()) == ["x", "z", "w", "v"])
        }
    }

    /// A store by a writer that finds no change of another writer since its own last one does
    /// not hold the replaced file open across the change: nobody waits for the change lock.
    @Test func aStoreWithNoOtherWritersChangeSinceOpensNoReplacedFile() throws {
        let readOpens = OpenCounter()
        let calls = readOpens.counting(.live) { $0 & O_ACCMODE == O_RDONLY && $0 & O_DIRECTORY == 0 }
        // No kept descriptors, and reads of none: the only open for reading is the held one.
        let keepsNoDescriptors: (inout DiskCacheOptions) -> Void = { $0.maximumOpenFiles = 0 }
        try SharedFolderCacheTests.withTwoWriters("larder-shared-cost", systemCallsOfA: calls, configureA: keepsNoDescriptors) {
            _, _, a, b throws in
            try a.store(SharedFolderCacheTests.payload("k", 1), forKey: "k")
            readOpens.isCounting.store(true, ordering: .relaxed)
            try a.store(SharedFolderCacheTests.payload("k", 2), forKey: "k")
            #expect(readOpens.count.load(ordering: .relaxed) == 0)
            // After another writer's change, the replaced file is held open again.
            try b.store(SharedFolderCacheTests.payload("j", 1), forKey: "j")
            try a.store(SharedFolderCacheTests.payload("k", 3), forKey: "k")
            #expect(readOpens.count.load(ordering: .relaxed) == 1)
            readOpens.isCounting.store(false, ordering: .relaxed)
            #expect(try b.value(forKey: "k") == SharedFolderCacheTests.payload("k", 3))
        }
    }
}
