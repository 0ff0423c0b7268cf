import Foundation
import Synchronization
import Testing
@testable import Larder

/// A writer sharing its folder writes the access times its index holds back into the headers in
/// batches, one hold of the change lock for each, and never over a record another writer replaced.
@Suite struct SharedWriteBackTests {
    /// A close after more reads than a batch holds takes the change lock once per batch of
    /// headers (and once for the shared index image it writes), not once per record read; a
    /// flush under `.fsync` syncs each header it writes, so its batches are smaller
    /// (``DiskCache/syncedWriteBackBatch``), and holds the lock once per one of those.
    @Test(arguments: [false, true]) func aWriteBackTakesTheChangeLockOncePerBatch(synced: Bool) throws {
        let counting = Atomic<Bool>(false)
        let changeLocks = Atomic<Int>(0)
        var calls = SystemCalls.live
        let flock = calls.flock
        // The change lock is the one `flock` a writer takes waiting (`LOCK_EX` alone): the
        // folder's lock and the collection lock are taken without waiting.
        calls.flock = { fd, operation in
            if operation == LOCK_EX, counting.load(ordering: .relaxed) { changeLocks.add(1, ordering: .relaxed) }
            return flock(fd, operation)
        }
        let batch = synced ? DiskCache.syncedWriteBackBatch : DiskCache.writeBackBatch
        let count = 2 * batch + 3
        let keys = (0 ..< count).map { "k\($0)" }
        let durability: (inout DiskCacheOptions) -> Void = { if synced { $0.durability = .fsync } }
        try SharedFolderCacheTests.withTwoWriters("larder-shared-write-back", systemCallsOfA: calls, configureA: durability) {
            _, clock, a, b throws in
            for key in keys { try b.store(SharedFolderCacheTests.payload(key, 1), forKey: key) }
            clock.advance(by: 5)
            for key in keys { #expect(try a.value(forKey: key) == SharedFolderCacheTests.payload(key, 1)) }
            counting.store(true, ordering: .relaxed)
            if synced { _ = try a.flush() } else { a.close() }
            counting.store(false, ordering: .relaxed)
            let batches = (count + batch - 1) / batch
            let taken = changeLocks.load(ordering: .relaxed)
            #expect(taken >= batches && taken <= batches + 1, "\(taken) change locks for \(batches) batches")
            // Every header holds A's read.
            for key in keys { #expect(try FlushTests.headerAccess(b, key) == 1_700_000_005_000) }
        }
    }

    /// A record another writer replaces after this writer took its write-back queue, and before
    /// the change lock of the batch that holds it, keeps the other writer's header: the batch
    /// replays the other's change under the lock, and its entry then has no access time to write.
    @Test func aRecordAnotherWriterReplacesDuringTheWriteBackKeepsItsHeader() throws {
        // B's replacement, run by A's first `flock` of the change lock once armed.
        let replacement = ChangeLockHook()
        let calls = replacement.wrapping(.live)
        try SharedFolderCacheTests.withTwoWriters("larder-shared-write-back", systemCallsOfA: calls) { _, clock, a, b throws in
            for key in ["x", "y", "z"] { try b.store(SharedFolderCacheTests.payload(key, 1), forKey: key) }
            clock.advance(by: 5)
            for key in ["x", "y", "z"] { #expect(try a.value(forKey: key) == SharedFolderCacheTests.payload(key, 1)) }
            // B's replacement is stamped before A's reads: A's times written over it would show.
            clock.now = 1_700_000_002
            let replaced = Atomic<Bool>(false)
            replacement.arm {
                let stored: Void? = try? b.store(SharedFolderCacheTests.payload("y", 2), forKey: "y")
                replaced.store(stored != nil, ordering: .relaxed)
            }
            _ = try a.flush()
            let didReplace = replaced.load(ordering: .relaxed)
            #expect(didReplace)
            #expect(try FlushTests.headerAccess(b, "y") == 1_700_000_002_000)
            #expect(try FlushTests.headerAccess(b, "x") == 1_700_000_005_000)
            #expect(try FlushTests.headerAccess(b, "z") == 1_700_000_005_000)
            #expect(try a.value(forKey: "y") == SharedFolderCacheTests.payload("y", 2))
        }
    }

    /// A record whose key lock is held, by a thread that waits for the change lock the batch
    /// holds, is written after the batch: the batch does not wait for the key lock (which would
    /// deadlock), and the record's access time still reaches its header.
    @Test func aRecordWhoseKeyLockIsHeldIsWrittenAfterTheBatch() throws {
        // Run by A's first `flock` of the change lock once armed, with the batch's hold begun.
        let holdKeyLock = ChangeLockHook()
        let calls = holdKeyLock.wrapping(.live)
        try SharedFolderCacheTests.withTwoWriters("larder-shared-write-back", systemCallsOfA: calls) { _, clock, a, b throws in
            for key in ["x", "y", "z"] { try b.store(SharedFolderCacheTests.payload(key, 1), forKey: key) }
            clock.advance(by: 5)
            for key in ["y", "z", "x"] { #expect(try a.value(forKey: key) == SharedFolderCacheTests.payload(key, 1)) }
            let name = try a.options.keyEncoding.fileName(for: "x")
            let held = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
            let changed = Atomic<Bool>(false)
            holdKeyLock.arm {
                // Another thread takes the key lock of "x", then waits for the change lock
                // (its `following` part, which the batch holds) to make a change.
                Thread {
                    a.withKeyLock(name) {
                        held.signal()
                        a._sharingChange { changed.store(true, ordering: .relaxed) }
                    }
                    finished.signal()
                }.start()
                held.wait()
            }
            _ = try a.flush()
            finished.wait()
            let didChange = changed.load(ordering: .relaxed)
            #expect(didChange)
            for key in ["x", "y", "z"] { #expect(try FlushTests.headerAccess(b, key) == 1_700_000_005_000) }
        }
    }
}
