import Dispatch
import Foundation
import Testing
@testable import Larder

/// The disk copies of remote hits, written through the bounded promotion queue, and the expiry
/// the remote copy gets from stores of locked entries and from `touch`.
@Suite struct HybridRemotePromotionTests {
    typealias Pair = HybridRemoteTests.Pair

    /// Holds `cache`'s promotion worker in a job of its own until `release()`.
    final class WorkerBlock: Sendable {
        private let started = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)

        init(_ cache: HybridCache) throws {
            let remote = try #require(cache.remote)
            let (started, gate) = (self.started, self.gate)
            let queued = remote.promotions.submit("blocker") {
                started.signal()
                gate.wait()
            }
            #expect(queued)
            started.wait()
        }

        func release() { gate.signal() }
    }

    /// The key's disk copy on `cache`, or `nil`.
    func onDisk(_ cache: HybridCache, _ key: String) throws -> Data? {
        try cache.disk.record(forKey: key)?.data
    }

    @Test(arguments: ["remove", "store", "invalidation", "removeAll", "prefix"])
    func aChangeArrivingWhileAPromotionWaitsWins(change: String) throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.a.store(bytes("old"), forKey: "k/1")
        let block = try WorkerBlock(pair.b)
        #expect(try pair.b.value(forKey: "k/1") == bytes("old"))
        #expect(pair.b.remote?.promotions.backlog == 1)
        switch change {
        case "remove": try pair.b.remove(forKey: "k/1")
        case "store": try pair.b.store(bytes("mine"), forKey: "k/1")
        case "invalidation": try pair.a.store(bytes("new"), forKey: "k/1")
        case "removeAll": try pair.b.removeAll()
        default: try pair.b.remove(withPrefix: "k/")
        }
        block.release()
        pair.b.flushRemoteWrites()
        // The queued copy of "old" was never written: the change won.
        let expected: Data? =
            switch change {
            case "store": bytes("mine")
            default: nil
            }
        #expect(try onDisk(pair.b, "k/1") == expected)
        #expect(try pair.b.value(forKey: "k/1", from: [.memory, .disk]) == expected)
        if change == "invalidation" { #expect(try pair.b.value(forKey: "k/1") == bytes("new")) }
    }

    /// A batch read's memory copies are made in one critical section of the memory tier's lock,
    /// each only if its key did not change locally since the read began: a store made while the
    /// read is under way keeps its value in memory, and the other keys are copied.
    @Test func aStoreMadeDuringABatchReadKeepsItsValueInMemory() throws {
        let pair = try Pair()
        defer { pair.close() }
        for key in ["k/1", "k/2", "k/3"] { try pair.a.store(bytes("old"), forKey: key) }
        let b = pair.b
        pair.store.afterBatchRead.withLock { $0 = { try? b.store(bytes("mine"), forKey: "k/2", in: [.memory]) } }
        let values = try pair.b.values(forKeys: ["k/1", "k/2", "k/3"])
        pair.store.afterBatchRead.withLock { $0 = nil }
        #expect(values == [bytes("old"), bytes("old"), bytes("old")])
        #expect(pair.b.memory.value(forKey: "k/2") == bytes("mine"))
        #expect(pair.b.memory.value(forKey: "k/1") == bytes("old"))
        #expect(pair.b.memory.value(forKey: "k/3") == bytes("old"))
    }

    /// Each key of a batch read is read against the generation it had before the disk missed:
    /// a removal made while the remote read is under way wins in memory and on disk, and the
    /// other keys are copied to both.
    @Test func aRemovalMadeDuringABatchReadKeepsTheKeyOutOfMemoryAndDisk() throws {
        let pair = try Pair()
        defer { pair.close() }
        for key in ["k/1", "k/2", "k/3"] { try pair.a.store(bytes("old"), forKey: key) }
        let b = pair.b
        pair.store.afterBatchRead.withLock { $0 = { _ = try? b.remove(forKey: "k/2") } }
        let values = try pair.b.values(forKeys: ["k/1", "k/2", "k/3"])
        pair.store.afterBatchRead.withLock { $0 = nil }
        pair.b.flushRemoteWrites()
        #expect(values == [bytes("old"), bytes("old"), bytes("old")])
        #expect(pair.b.memory.value(forKey: "k/2") == nil)
        #expect(try onDisk(pair.b, "k/2") == nil)
        #expect(pair.b.memory.value(forKey: "k/1") == bytes("old"))
        #expect(try onDisk(pair.b, "k/1") == bytes("old"))
        #expect(try onDisk(pair.b, "k/3") == bytes("old"))
    }

    @Test func aFullBacklogMakesTheReaderWriteItsOwnCopy() throws {
        let pair = try Pair { $0.diskPromotionBacklog = 1 }
        defer { pair.close() }
        for key in ["k1", "k2"] { try pair.a.store(bytes(key), forKey: key) }
        let block = try WorkerBlock(pair.b)
        #expect(try pair.b.value(forKey: "k1") == bytes("k1"))
        #expect(try pair.b.value(forKey: "k2") == bytes("k2"))
        // k1 waits in the queue; the queue was full for k2, written by its reader.
        #expect(try onDisk(pair.b, "k1") == nil)
        #expect(try onDisk(pair.b, "k2") == bytes("k2"))
        block.release()
        pair.b.flushRemoteWrites()
        #expect(try onDisk(pair.b, "k1") == bytes("k1"))
    }

    /// A batch read's disk copies wait in the queue as data; each is still checked against its
    /// key's generation when the worker writes it: a key removed while its copy waits stays off
    /// the disk, and the others are written.
    @Test func aBatchsQueuedCopiesAreWrittenExceptForAKeyChangedWhileTheyWait() throws {
        let pair = try Pair()
        defer { pair.close() }
        for key in ["k/1", "k/2", "k/3"] { try pair.a.store(bytes("old"), forKey: key) }
        let block = try WorkerBlock(pair.b)
        #expect(try pair.b.values(forKeys: ["k/1", "k/2", "k/3"]) == [bytes("old"), bytes("old"), bytes("old")])
        #expect(pair.b.remote?.promotions.backlog == 3)
        #expect(try onDisk(pair.b, "k/1") == nil)
        try pair.b.remove(forKey: "k/2")
        block.release()
        pair.b.flushRemoteWrites()
        #expect(try onDisk(pair.b, "k/1") == bytes("old"))
        #expect(try onDisk(pair.b, "k/2") == nil)
        #expect(try onDisk(pair.b, "k/3") == bytes("old"))
    }

    /// The copies of a batch that the backlog cannot take are written by the reader before the
    /// read returns; the one queued waits for the worker.
    @Test func aBatchBeyondTheBacklogWritesTheRefusedCopiesItself() throws {
        let pair = try Pair { $0.diskPromotionBacklog = 2 }
        defer { pair.close() }
        for key in ["k/1", "k/2", "k/3"] { try pair.a.store(bytes(key), forKey: key) }
        let block = try WorkerBlock(pair.b)
        // The blocker is running, not waiting: the backlog has room for two of the three.
        #expect(try pair.b.values(forKeys: ["k/1", "k/2", "k/3"]) == [bytes("k/1"), bytes("k/2"), bytes("k/3")])
        #expect(pair.b.remote?.promotions.backlog == 2)
        #expect(try onDisk(pair.b, "k/1") == nil)
        #expect(try onDisk(pair.b, "k/2") == nil)
        #expect(try onDisk(pair.b, "k/3") == bytes("k/3"))
        block.release()
        pair.b.flushRemoteWrites()
        #expect(try onDisk(pair.b, "k/1") == bytes("k/1"))
        #expect(try onDisk(pair.b, "k/2") == bytes("k/2"))
    }

    @Test func aKeyReadAgainWhileItsCopyWaitsIsQueuedOnce() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.a.store(bytes("v"), forKey: "k")
        let block = try WorkerBlock(pair.b)
        // Not from memory: each read goes to the remote tier and promotes to disk.
        for _ in 0 ..< 3 { #expect(try pair.b.value(forKey: "k", from: [.disk, .remote]) == bytes("v")) }
        #expect(pair.b.remote?.promotions.backlog == 1)
        #expect(pair.b.statistics.remote?.hits == 3)
        block.release()
        pair.b.flushRemoteWrites()
        #expect(try onDisk(pair.b, "k") == bytes("v"))
    }

    @Test func withNoBacklogTheCopyIsWrittenBeforeTheReadReturns() throws {
        let pair = try Pair { $0.diskPromotionBacklog = 0 }
        defer { pair.close() }
        try pair.a.store(bytes("v"), forKey: "k")
        #expect(try pair.b.value(forKey: "k") == bytes("v"))
        #expect(try onDisk(pair.b, "k") == bytes("v"))
    }

    @Test func theBacklogDefaultsTo128AndMayNotBeNegative() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var remote = RemoteTierOptions(store: FakeRemoteStore(clock: ManualClock(now: 1_700_000_000)), namespace: "test")
        #expect(remote.diskPromotionBacklog == 128)
        remote.diskPromotionBacklog = -1
        var options = hybridOptions(directory.url)
        options.remote = remote
        #expect(throws: CacheError.self) { try HybridCache(options: options) }
    }

    @Test func aLockedEntryExpiresOnTheRemoteAsItWouldUnlocked() throws {
        let pair = try Pair(cap: 3600)
        defer { pair.close() }
        try pair.a.store(bytes("pinned"), forKey: "k", expiry: .seconds(100), locked: true)
        try pair.a.store(bytes("pinned"), forKey: "d", locked: true)
        // Locked on a's disk, but the shared copies expire: 100 s, and the disk default (600 s).
        #expect(pair.store.timeToLive("test:v:k").map { $0 > 99 && $0 <= 100 } == true)
        #expect(pair.store.timeToLive("test:v:d").map { $0 > 599 && $0 <= 600 } == true)
        let raw = try #require(pair.store.raw("test:v:k"))
        let frame = try #require(RemotePayload.decode(raw))
        #expect(frame.isLocked)
        #expect(frame.expiryMilliseconds == Int64((pair.clock.now + 100) * 1000))
        // b's copy ends with the header's expiry.
        #expect(try pair.b.value(forKey: "k") == bytes("pinned"))
        pair.b.flushRemoteWrites()
        let copy = try #require(try pair.b.disk.record(forKey: "k")?.expirationTime)
        #expect(copy <= pair.clock.now + 100)
        // a's own record stays locked; the remote copy is gone after 100 s.
        pair.clock.advance(by: 101)
        #expect(try pair.a.value(forKey: "k", from: .disk) == bytes("pinned"))
        #expect(try pair.b.value(forKey: "k") == nil)
    }

    @Test func touchGivesTheRemoteCopyTheEntrysOwnExpiry() throws {
        let pair = try Pair(cap: 3600)
        defer { pair.close() }
        try pair.a.store(bytes("fixed"), forKey: "fixed", expiry: .seconds(100))
        try pair.a.store(bytes("sliding"), forKey: "sliding")
        pair.clock.advance(by: 50)
        #expect(try pair.a.touch(forKey: "fixed"))
        #expect(try pair.a.touch(forKey: "sliding"))
        // A fixed expiry does not slide (not the disk default: 600 s); a default one slides by it.
        #expect(pair.store.timeToLive("test:v:fixed").map { $0 > 49 && $0 <= 50 } == true)
        #expect(pair.store.timeToLive("test:v:sliding").map { $0 > 599 && $0 <= 600 } == true)
    }

    @Test func touchNeverShortensTheRemoteCopy() throws {
        let pair = try Pair(cap: 30)
        defer { pair.close() }
        try pair.a.store(bytes("v"), forKey: "k", expiry: .seconds(3600))
        // b's copy ends at the cap (30 s); its touch must not cut the shared copy to that.
        #expect(try pair.b.value(forKey: "k") == bytes("v"))
        pair.b.flushRemoteWrites()
        #expect(try pair.b.touch(forKey: "k"))
        #expect(pair.store.timeToLive("test:v:k").map { $0 > 3599 } == true)
    }

    @Test func aStoreThatReportsTimeToLiveBoundsTheCopyToo() throws {
        let pair = try Pair(cap: 3600)
        defer { pair.close() }
        pair.store.reportsTimeToLive = true
        try pair.a.store(bytes("v"), forKey: "k", expiry: .seconds(1000))
        // Someone shortened the value's life on the store behind the header's back.
        let raw = try #require(pair.store.raw("test:v:k"))
        pair.store.put(raw, forKey: "test:v:k", milliseconds: 20_000)
        #expect(try pair.b.value(forKey: "k") == bytes("v"))
        pair.b.flushRemoteWrites()
        let copy = try #require(try pair.b.disk.record(forKey: "k")?.expirationTime)
        #expect(copy <= pair.clock.now + 20)
    }
}
