import Foundation
import Testing

@testable import Larder

/// The remote tier's outbox (`.larder-outbox`): what a store or removal the remote store did not
/// take leaves behind, how reads treat its keys, its replay (by the same instance or the next
/// one on the folder), and its file (bounded, owner-only, damaged files covering everything).
@Suite struct RemoteOutboxTests {
    /// A cache in `directory` on `store`, with a breaker that never opens and a cool-down that
    /// never passes during a test: replays happen only at an open, or when a test asks.
    func cache(_ directory: URL, store: FakeRemoteStore, events: RemoteEventLog? = nil, cooldown: Double = 3600) throws -> HybridCache {
        var options = hybridOptions(directory, clock: store.clock)
        var remote = RemoteTierOptions(store: store, namespace: "test")
        remote.failureThreshold = 1_000
        remote.breakerCooldown = cooldown
        remote.eventHandler = events?.handler
        options.remote = remote
        return try HybridCache(options: options)
    }

    func framed(_ text: String) -> Data { RemotePayload.encode(bytes(text), expiryMilliseconds: nil, isLocked: false) }

    @Test func aRemovalTheStoreDidNotTakeIsSkippedByReadsAndReplayedByTheNextInstance() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = FakeRemoteStore(clock: ManualClock(now: 1_700_000_000))
        store.put(framed("old"), forKey: "test:v:k")
        store.put(framed("other"), forKey: "test:v:other")
        store.put(framed("third"), forKey: "test:v:third")
        let a = try cache(directory.url, store: store)
        store.failing = true
        #expect(try a.remove(forKey: "k") == false)
        let outbox = directory.url.appendingPathComponent(".larder-outbox").path
        #expect(a.remote?.outbox.covers("k") == true)
        #expect(FileManager.default.fileExists(atPath: outbox))
        let mode = try FileManager.default.attributesOfItem(atPath: outbox)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // The store answers again, still holding the old value: the removed key is not read
        // from it (skipped), other keys are.
        store.failing = false
        let calls = store.calls
        #expect(try a.value(forKey: "k") == nil)
        #expect(store.calls == calls)
        #expect(try a.value(forKey: "other") == bytes("other"))
        #expect(try a.values(forKeys: ["k", "third"]) == [nil, bytes("third")])
        #expect(store.raw("test:v:k") != nil)
        // Dropped before its replay; the next instance on the folder replays at its open.
        a.close()
        let b = try cache(directory.url, store: store)
        defer { b.close() }
        #expect(try b.value(forKey: "k", from: [.remote]) == nil)
        poll("the next instance replayed the outbox") { b.statistics.remote?.invalidationsPublished == 1 }
        #expect(store.raw("test:v:k") == nil)
        poll("the outbox file went") { !FileManager.default.fileExists(atPath: outbox) }
        #expect(b.remote?.outbox.isEmpty == true)
    }

    @Test func aStoreWhosePublishFailedIsKeptAndASuccessfulStoreForgetsIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = FakeRemoteStore(clock: ManualClock(now: 1_700_000_000))
        let a = try cache(directory.url, store: store)
        defer { a.close() }
        store.failing = true
        try a.store(bytes("new"), forKey: "k")
        #expect(a.remote?.outbox.covers("k") == true)
        store.failing = false
        try a.store(bytes("newer"), forKey: "k")
        #expect(a.remote?.outbox.isEmpty == true)
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent(".larder-outbox").path))
    }

    @Test func prefixesAndEverythingAreKeptAndCoverTheirKeys() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = FakeRemoteStore(clock: ManualClock(now: 1_700_000_000))
        let a = try cache(directory.url, store: store)
        defer { a.close() }
        store.failing = true
        try a.remove(withPrefix: "user/")
        #expect(a.remote?.outbox.covers("user/1") == true)
        #expect(a.remote?.outbox.covers("item/1") == false)
        try a.removeAll()
        #expect(a.remote?.outbox.covers("item/1") == true)
        #expect(a.remote?.outbox.entries.everything != nil)
        #expect(a.remote?.outbox.entries.scopes.isEmpty == true)
    }

    @Test func aStoreAndItsPublishShareOneBudget() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = FakeRemoteStore(clock: ManualClock(now: 1_700_000_000))
        var options = hybridOptions(directory.url, clock: store.clock)
        var remote = RemoteTierOptions(store: store, namespace: "test")
        remote.commandTimeout = 0.05
        remote.failureThreshold = 1_000
        remote.breakerCooldown = 3600
        options.remote = remote
        let a = try HybridCache(options: options)
        defer { a.close() }
        // The SET takes the whole budget (the fake waits for the timeout it was given, then
        // fails): the PUBLISH is never sent, and the key waits in the outbox.
        store.latency = 10
        let calls = store.calls
        try a.store(bytes("v"), forKey: "k")
        #expect(store.calls == calls + 1)
        #expect(store.timeoutsGiven.last.map { $0.command <= 0.05 } == true)
        #expect(a.remote?.outbox.covers("k") == true)
        // A quick store: its PUBLISH gets what the SET left, never more than the budget.
        store.latency = 0
        try a.store(bytes("w"), forKey: "k2")
        let given = store.timeoutsGiven.suffix(2).map(\.command)
        #expect(given.count == 2)
        #expect(given.allSatisfy { $0 <= 0.05 })
        #expect(given[1] <= given[0])
    }

    @Test func theProbeRunsOffTheCallersPathAndTheFirstOneAfterTheStoreAnswersClosesTheBreaker() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = FakeRemoteStore(clock: ManualClock(now: 1_700_000_000))
        let events = RemoteEventLog()
        var options = hybridOptions(directory.url, clock: store.clock)
        var remote = RemoteTierOptions(store: store, namespace: "test")
        remote.failureThreshold = 1
        remote.breakerCooldown = 0.01
        remote.eventHandler = events.handler
        options.remote = remote
        let a = try HybridCache(options: options)
        defer { a.close() }
        store.holdPings()
        store.failing = true
        _ = try a.value(forKey: "x")
        // The probe waits in the fake; the callers meanwhile get misses at once, never a ping.
        poll("a probe is under way") { store.pingsWaiting == 1 }
        let calls = store.calls
        for key in ["x", "y", "z"] { #expect(try a.value(forKey: key) == nil) }
        try a.store(bytes("v"), forKey: "k")
        #expect(store.pingsWaiting == 1)
        #expect(store.calls == calls)
        #expect(store.pings == 0)
        // The store answers again; the probe under way is the first to see it and closes the
        // breaker; writes then reach the store.
        store.failing = false
        store.releasePings()
        poll("the breaker closed") { events.count { if case .breakerClosed = $0 { true } else { false } } == 1 }
        #expect(store.pings == 1)
        try a.store(bytes("after"), forKey: "k2")
        #expect(store.raw("test:v:k2") != nil)
        // The probe replayed what the open breaker kept from the store.
        poll("the outbox was replayed") { a.remote?.outbox.isEmpty == true }
    }

    // MARK: - The file

    @Test func theFileRoundTripsAndADamagedOneCoversEverything() throws {
        var entries = RemoteOutbox.Entries()
        entries.scopes = [.key("a"): 0, .key("ü/κ"): 0, .prefix("user/"): 0]
        let bytes = RemoteOutbox.encode(entries, namespace: "ns")
        guard case .entries(let decoded) = RemoteOutbox.decode(bytes, namespace: "ns") else {
            Issue.record("the file did not decode")
            return
        }
        #expect(Set(decoded.scopes.keys) == Set(entries.scopes.keys))
        #expect(RemoteOutbox.decode(bytes, namespace: "other") == .otherNamespace("ns"))
        // Every byte flipped, and every truncation: never a crash, always damaged.
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= 0x40
            if case .entries = RemoteOutbox.decode(flipped, namespace: "ns") { Issue.record("a flipped byte \(index) decoded") }
            if case .entries = RemoteOutbox.decode(Array(bytes[..<index]), namespace: "ns") {
                Issue.record("a file cut at \(index) decoded")
            }
        }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent(".larder-outbox").path
        var damaged = bytes
        damaged[damaged.count / 2] ^= 1
        #expect(FileManager.default.createFile(atPath: path, contents: Data(damaged)))
        let outbox = RemoteOutbox(namespace: "ns", path: path, io: FileIO())
        #expect(outbox.covers("anything"))
        #expect(outbox.loadProblem?.message.contains("damaged") == true)
        // Another namespace's file: reported, dropped and removed, so that it is reported once.
        #expect(FileManager.default.createFile(atPath: path, contents: Data(RemoteOutbox.encode(entries, namespace: "other"))))
        let another = RemoteOutbox(namespace: "ns", path: path, io: FileIO())
        #expect(another.isEmpty)
        #expect(another.loadProblem?.message.contains("\"other\"") == true)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func pastItsCapacityTheOutboxCollapsesIntoOneEntryForEverything() throws {
        let outbox = RemoteOutbox(namespace: "ns", path: nil, io: nil)
        for index in 0 ..< RemoteOutbox.capacity { outbox.add(.key("k\(index)")) }
        #expect(outbox.entries.scopes.count == 1024)
        #expect(outbox.entries.everything == nil)
        outbox.add(.key("one more"))
        #expect(outbox.entries.scopes.isEmpty)
        #expect(outbox.entries.everything != nil)
        #expect(outbox.covers("never added"))
        // Keys by size: 128 KiB of them collapse too.
        let large = RemoteOutbox(namespace: "ns", path: nil, io: nil)
        large.add(.key(String(repeating: "x", count: 128 << 10)))
        #expect(large.entries.everything == nil)
        large.add(.key("y"))
        #expect(large.entries.everything != nil)
    }

    @Test func aReplayDoesNotSettleAnEntryAddedAgainWhileItRan() {
        let outbox = RemoteOutbox(namespace: "ns", path: nil, io: nil)
        outbox.add(.key("k"))
        let replaying = outbox.entries
        outbox.add(.key("k"))
        outbox.settle(replaying)
        #expect(outbox.covers("k"))
        outbox.settle(outbox.entries)
        #expect(outbox.isEmpty)
    }

    @Test func theFileIsLarderOwnNeverARecordOrAForeignFile() throws {
        #expect(DiskLayout.isLarderFile(DiskLayout.outboxName))
        #expect(DiskLayout.isLarderFile(DiskLayout.outboxName + ".tmp-1-2"))
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        #expect(
            FileManager.default.createFile(atPath: directory.url.appendingPathComponent(".larder-outbox").path, contents: Data("x".utf8)))
        #expect(try DiskLayout.recognize(root: directory.url.path, io: FileIO()) == .empty)
        #expect(try DiskLayout(root: directory.url.path).misplacedEntries(io: FileIO()).isEmpty)
    }
}
