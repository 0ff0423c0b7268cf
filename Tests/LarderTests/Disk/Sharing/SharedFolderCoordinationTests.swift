import Foundation
import Synchronization
import Testing
@testable import Larder

/// Writers sharing a folder coordinate the changes that touch many records or none in
/// particular: a removal of everything, a withdrawal of an image a writer alone left, and a
/// change made when the change lock cannot be taken.
@Suite struct SharedFolderCoordinationTests {
    @Test func aRemovalOfEverythingIsSeenByTheOthersAtTheirNextOperation() throws {
        try SharedFolderCacheTests.withTwoWriters("larder-shared-coord") { dir, _, a, b throws in
            for i in 0 ..< 12 { try (i.isMultiple(of: 2) ? a : b).store(SharedFolderCacheTests.payload("k\(i)", 1), forKey: "k\(i)") }
            #expect(try b.lock(forKeys: ["k3"]) == ["k3"])
            #expect(b.count == 12)
            try a.removeAll()
            #expect(b.count == 0 && b.totalSize == 0 && b.lockedSize == 0)
            #expect(try b.keys().isEmpty)
            #expect(try b.value(forKey: "k3") == nil)
            #expect(recordFiles(in: dir.url).isEmpty)
        }
    }

    /// The image a writer alone left is withdrawn by a sharing writer by unlinking its base, not
    /// by appending to its journal (two writers' appends at one length would race).
    @Test func aSharingWriterWithdrawsAnImageItLoadedByUnlinkingItsBase() throws {
        let dir = TemporaryDirectory("larder-shared-coord")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = testOptions(dir.url, clock: clock, encoding: .verbatim)
        options.sharesFolderWithWriters = false
        let alone = try DiskCache(options: options)
        for i in 0 ..< 8 { try alone.store(SharedFolderCacheTests.payload("k\(i)", 1), forKey: "k\(i)") }
        alone.close()
        let root = dir.url.path + "/"
        #expect(FileManager.default.fileExists(atPath: root + DiskLayout.snapshotName))
        #expect(!FileManager.default.fileExists(atPath: root + DiskLayout.journalName))
        let a = try SharedFolderCacheTests.open(dir, clock: clock)
        defer { a.close() }
        #expect(a.count == 8)
        #expect(!FileManager.default.fileExists(atPath: root + DiskLayout.snapshotName))
        #expect(!FileManager.default.fileExists(atPath: root + DiskLayout.journalName))
        let b = try SharedFolderCacheTests.open(dir, clock: clock)
        defer { b.close() }
        #expect(b.count == 8)
    }

    /// A change made when the change lock cannot be taken is in no log record: the others
    /// build their indexes from the folder at their next operation, so they see it.
    @Test func aChangeMadeWithoutTheChangeLockIsSeenByTheOthers() throws {
        let failing = Atomic<Bool>(false)
        var calls = SystemCalls.live
        let flock = calls.flock
        calls.flock = { fd, operation in
            // Blocking exclusive takes: the change lock's (the folder's lock is taken shared).
            if failing.load(ordering: .relaxed), operation == LOCK_EX {
                errno = ENOLCK
                return -1
            }
            return flock(fd, operation)
        }
        try SharedFolderCacheTests.withTwoWriters("larder-shared-coord", systemCallsOfA: calls) { _, _, a, b throws in
            try b.store(SharedFolderCacheTests.payload("y", 1), forKey: "y")
            #expect(try a.value(forKey: "y") == SharedFolderCacheTests.payload("y", 1))
            // B's index knows every key: a miss of "x" comes from it unless B reads the folder again.
            #expect(try b.value(forKey: "x") == nil)
            failing.store(true, ordering: .relaxed)
            try a.store(SharedFolderCacheTests.payload("x", 1), forKey: "x")
            #expect(try a.remove(forKey: "y"))
            failing.store(false, ordering: .relaxed)
            #expect(try b.value(forKey: "x") == SharedFolderCacheTests.payload("x", 1))
            #expect(!b.contains("y"))
            #expect(b.count == 1)
            // The log is whole again after the next change, which A and B both follow.
            try b.store(SharedFolderCacheTests.payload("z", 1), forKey: "z")
            #expect(a.count == 2 && b.count == 2)
            #expect(try Set(a.keys()) == ["x", "z"])
        }
    }

    /// The folder deleted under writers sharing it: the first to notice makes it again, and the
    /// others move to it too (none is refused for the first's sake); each sees the others'
    /// changes made there.
    @Test func writersSharingADeletedFolderMoveToTheOneMadeAgain() throws {
        try SharedFolderCacheTests.withTwoWriters("larder-shared-coord") { dir, _, a, b throws in
            try a.store(SharedFolderCacheTests.payload("old", 1), forKey: "old")
            #expect(b.count == 1)
            try FileManager.default.removeItem(at: dir.url)
            try a.store(SharedFolderCacheTests.payload("x", 1), forKey: "x")
            try b.store(SharedFolderCacheTests.payload("y", 1), forKey: "y")
            #expect(try a.value(forKey: "y") == SharedFolderCacheTests.payload("y", 1))
            #expect(try b.value(forKey: "x") == SharedFolderCacheTests.payload("x", 1))
            #expect(try a.value(forKey: "old") == nil)
            #expect(a.count == 2 && b.count == 2)
            #expect(try Set(a.keys()) == ["x", "y"])
            #expect(try Set(b.keys()) == ["x", "y"])
            #expect(recordFiles(in: dir.url).count == 2)
            // Changes after the move travel through the new folder's log.
            #expect(try b.remove(forKey: "x"))
            #expect(!a.contains("x") && a.count == 1)
        }
    }

    /// A record stored by an import (no key, under its file name) is recorded like a store:
    /// another writer whose index knows every key finds it at its next read.
    @Test func anImportedRecordIsSeenByTheOthers() throws {
        try SharedFolderCacheTests.withTwoWriters("larder-shared-coord") { _, _, a, b throws in
            #expect(try b.value(forKey: "u") == nil)
            let payload = SharedFolderCacheTests.payload("u", 1)
            #expect(try a.storeUnkeyedRecord(payload, name: a.options.keyEncoding.fileName(for: "u"), updateTime: 1_700_000_000, ttl: 0))
            #expect(b.containsLiveRecord(named: try b.options.keyEncoding.fileName(for: "u")))
            #expect(b.count == 1 && b.totalSize == a.totalSize)
        }
    }

    /// One collection runs at a time across the writers: a pass that finds another under way
    /// (here the collection lock held on another open of the sharing file, as another process
    /// holds it) is skipped, removes nothing and says so; the next pass runs.
    @Test func aCollectionThatMeetsAnotherIsReportedSkipped() throws {
        try SharedFolderCacheTests.withTwoWriters("larder-shared-coord") { dir, clock, a, b throws in
            try a.store(SharedFolderCacheTests.payload("old", 1), forKey: "old", expiry: .seconds(60))
            try b.store(SharedFolderCacheTests.payload("new", 1), forKey: "new")
            clock.advance(by: 120)
            let fd = open(dir.url.path + "/" + SharedFolder.sharingFileName, O_RDWR)
            try #require(fd >= 0)
            defer { close(fd) }
            try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
            let skipped = try b.collectGarbage()
            #expect(skipped.wasSkipped)
            #expect(skipped.removed.isEmpty)
            #expect(skipped.remainingCount == 2)
            #expect(recordFiles(in: dir.url).count == 2)
            #expect(flock(fd, LOCK_UN) == 0)
            let collected = try b.collectGarbage()
            #expect(!collected.wasSkipped)
            #expect(collected.count(for: .expired) == 1)
            #expect(collected.remainingCount == 1)
            #expect(a.count == 1)
        }
    }
}
