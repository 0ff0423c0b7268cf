import Foundation
import Testing
@testable import Larder

/// The shared remote tier (`HybridCacheOptions.remote`) against an in-memory fake store: reads
/// through and promotion, invalidation across instances, fail-open, the circuit breaker, the
/// payload header, lost invalidations and the load lock.
@Suite struct HybridRemoteTests {
    /// Two caches with separate directories sharing one fake store and one clock.
    struct Pair {
        let clock = ManualClock(now: 1_700_000_000)
        let store: FakeRemoteStore
        let a: HybridCache
        let b: HybridCache
        let eventsA = RemoteEventLog()
        let eventsB = RemoteEventLog()
        let directories = (TemporaryDirectory(), TemporaryDirectory())

        init(cap: TimeInterval = 60, configure: (inout RemoteTierOptions) -> Void = { _ in }) throws {
            let clock = self.clock
            let store = FakeRemoteStore(clock: clock)
            func options(_ directory: URL, _ events: RemoteEventLog) -> HybridCacheOptions {
                var options = hybridOptions(directory, clock: clock)
                var remote = RemoteTierOptions(store: store, namespace: "test")
                remote.localLifetimeCap = cap
                remote.eventHandler = events.handler
                configure(&remote)
                options.remote = remote
                return options
            }
            self.store = store
            a = try HybridCache(options: options(directories.0.url, eventsA))
            b = try HybridCache(options: options(directories.1.url, eventsB))
        }

        func close() {
            a.close()
            b.close()
            directories.0.remove()
            directories.1.remove()
        }
    }

    @Test func aRemoteHitIsPromotedWithAnExpiryNoLaterThanTheRemotesAndTheCap() throws {
        let pair = try Pair(cap: 60)
        defer { pair.close() }
        try pair.a.store(bytes("long"), forKey: "long", expiry: .seconds(3600))
        try pair.a.store(bytes("short"), forKey: "short", expiry: .seconds(10))
        #expect(try pair.b.value(forKey: "long") == bytes("long"))
        #expect(try pair.b.value(forKey: "short") == bytes("short"))
        pair.b.flushRemoteWrites()  // the disk copies are written in the background
        let now = pair.clock.now
        // Promoted to both local tiers, ending at the cap (60 s) or the remote's time to live (10 s).
        #expect(pair.b.memory.contains("long") && pair.b.memory.contains("short"))
        let long = try #require(try pair.b.disk.record(forKey: "long")?.expirationTime)
        let short = try #require(try pair.b.disk.record(forKey: "short")?.expirationTime)
        #expect(long <= now + 60 && long > now)
        #expect(short <= now + 10 && short > now)
        #expect(pair.b.statistics.remote?.hits == 2)
        // Past the cap, the local copies are gone and the next read goes to the remote again.
        pair.clock.advance(by: 61)
        #expect(try pair.b.value(forKey: "long", from: [.memory, .disk]) == nil)
        #expect(try pair.b.value(forKey: "long") == bytes("long"))
        #expect(pair.b.statistics.remote?.hits == 3)
        // Past the remote's own expiry, nobody has it.
        #expect(try pair.b.value(forKey: "short") == nil)
    }

    /// A slow `GET` does not lengthen the local copies: they end at the value's expiry, counted
    /// from the same clock reading as the lifetime the value had left.
    @Test func aSlowReadDoesNotLengthenTheLocalCopies() throws {
        let pair = try Pair(cap: 600)
        defer { pair.close() }
        let start = pair.clock.now
        try pair.a.store(bytes("v"), forKey: "k", expiry: .seconds(10))
        pair.store.readAdvancesClock = 5
        #expect(try pair.b.value(forKey: "k") == bytes("v"))
        pair.store.readAdvancesClock = 0
        pair.b.flushRemoteWrites()
        #expect(pair.b.memory.contains("k"))
        let onDisk = try #require(try pair.b.disk.record(forKey: "k")?.expirationTime)
        #expect(onDisk <= start + 10)
        // Just past the value's expiry the memory copy is gone; the disk, which counts whole
        // seconds, lets its copy go within the next second (it would last until start + 15 if
        // the read's 5 s were added to its lifetime).
        pair.clock.advance(by: 10.5 - (pair.clock.now - start))
        #expect(try pair.b.value(forKey: "k", from: [.memory]) == nil)
        pair.clock.advance(by: 1)
        #expect(try pair.b.value(forKey: "k", from: [.memory, .disk]) == nil)
    }

    @Test func storesAndRemovalsInvalidateTheOtherInstancesMemoryAndDisk() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.a.store(bytes("v1"), forKey: "user/1/name")
        try pair.a.store(bytes("p"), forKey: "user/1/photo")
        try pair.a.store(bytes("q"), forKey: "user/2/name")
        for key in ["user/1/name", "user/1/photo", "user/2/name"] { _ = try pair.b.value(forKey: key) }
        pair.b.flushRemoteWrites()
        #expect(pair.b.memory.contains("user/1/name") && pair.b.disk.contains("user/1/name"))

        // A replacement: b drops both local copies, and reads the new value.
        try pair.a.store(bytes("v2"), forKey: "user/1/name")
        #expect(!pair.b.memory.contains("user/1/name") && !pair.b.disk.contains("user/1/name"))
        #expect(try pair.b.value(forKey: "user/1/name") == bytes("v2"))

        // A removal.
        try pair.a.remove(forKey: "user/1/name")
        #expect(try pair.b.value(forKey: "user/1/name") == nil)
        #expect(pair.store.raw("test:v:user/1/name") == nil)

        // A prefix: only the matching keys go.
        try pair.a.remove(withPrefix: "user/1/")
        #expect(!pair.b.memory.contains("user/1/photo") && !pair.b.disk.contains("user/1/photo"))
        #expect(pair.b.disk.contains("user/2/name"))
        #expect(try pair.b.value(forKey: "user/1/photo") == nil)

        // Everything, on the store too (the namespace only).
        pair.store.put(bytes("other"), forKey: "elsewhere:v:x")
        try pair.a.removeAll()
        #expect(!pair.b.memory.contains("user/2/name") && !pair.b.disk.contains("user/2/name"))
        #expect(pair.store.keys == ["elsewhere:v:x"])
        let stats = try #require(pair.b.statistics.remote)
        // Three first stores, a replacement, a removal, a prefix, everything.
        #expect(stats.invalidationsReceived == 7)
        #expect(pair.a.statistics.remote?.invalidationsPublished == 7)
        // An instance ignores its own invalidations: a's local copy of what it just stored stays.
        try pair.a.store(bytes("mine"), forKey: "k")
        #expect(pair.a.memory.contains("k") && pair.a.statistics.remote?.invalidationsReceived == 0)
    }

    @Test func aRemoteThatFailsNeverFailsACallTheLocalTiersServe() throws {
        let pair = try Pair { $0.failureThreshold = 1_000 }
        defer { pair.close() }
        try pair.a.store(bytes("local"), forKey: "k")
        pair.store.failing = true
        try pair.a.store(bytes("new"), forKey: "k2")
        #expect(try pair.a.value(forKey: "k") == bytes("local"))
        #expect(try pair.a.value(forKey: "k2") == bytes("new"))
        #expect(try pair.a.value(forKey: "absent") == nil)
        #expect(try pair.a.remove(forKey: "k"))
        try pair.a.removeAll()
        let stats = try #require(pair.a.statistics.remote)
        #expect(stats.failures >= 4)
        #expect(pair.eventsA.count { if case .failed = $0 { true } else { false } } == stats.failures)
    }

    @Test func aSlowRemoteIsCutAtTheCommandTimeout() throws {
        let pair = try Pair { $0.commandTimeout = 0.01 }
        defer { pair.close() }
        pair.store.latency = 3_600
        // The fake sleeps for the command timeout, then times out: the read is a plain miss.
        #expect(try pair.a.value(forKey: "absent") == nil)
        #expect(pair.a.statistics.remote?.failures == 1)
        #expect(pair.a.statistics.misses == 1)
    }

    @Test func aReadIsGivenItsWholeBudgetAndNoMore() throws {
        let pair = try Pair {
            $0.commandTimeout = 0.25
            $0.connectTimeout = 0.5
        }
        defer { pair.close() }
        try pair.a.store(bytes("v"), forKey: "k")
        try pair.a.store(bytes("w"), forKey: "l")
        // A read of one key, then of several: one call each, given the command timeout itself
        // (a read sends one command, so its budget is the whole timeout from the call's start).
        let calls = pair.store.calls
        #expect(try pair.b.value(forKey: "k") == bytes("v"))
        #expect(try pair.b.values(forKeys: ["l", "absent"]) == [bytes("w"), nil])
        #expect(pair.store.calls == calls + 2)
        let given = pair.store.timeoutsGiven.suffix(2)
        #expect(given.map(\.command) == [0.25, 0.25])
        #expect(given.map(\.connect) == [0.5, 0.5])
    }

    @Test func theBreakerSkipsTheRemoteAfterRepeatedFailuresThenProbesWithPing() throws {
        let pair = try Pair {
            $0.failureThreshold = 2
            $0.breakerCooldown = 0.05
        }
        defer { pair.close() }
        pair.store.holdPings()
        pair.store.failing = true
        _ = try pair.a.value(forKey: "x")
        _ = try pair.a.value(forKey: "y")
        #expect(pair.eventsA.count { if case .breakerOpened = $0 { true } else { false } } == 1)
        let callsWhenOpened = pair.store.calls
        _ = try pair.a.value(forKey: "z")
        #expect(pair.store.calls == callsWhenOpened)
        #expect(pair.a.statistics.remote?.skips == 1)
        // After the cool-down, one ping, in the background; the store answers again, so the
        // breaker closes. (Held until the store answers, so that it is the one ping.)
        pair.store.failing = false
        pair.store.releasePings()
        pair.store.put(RemotePayload.encode(bytes("back"), expiryMilliseconds: nil, isLocked: false), forKey: "test:v:z")
        poll("the cool-down passed") {
            (try? pair.a.value(forKey: "z")) == bytes("back")
        }
        // The close is reported just after the breaker lets calls through again.
        poll("the close was reported") {
            pair.eventsA.count { if case .breakerClosed = $0 { true } else { false } } >= 1
        }
        #expect(pair.store.pings == 1)
        #expect(pair.eventsA.count { if case .breakerClosed = $0 { true } else { false } } == 1)
    }

    @Test func aFailedProbeOpensTheBreakerAgain() throws {
        let pair = try Pair {
            $0.failureThreshold = 1
            $0.breakerCooldown = 0.05
        }
        defer { pair.close() }
        pair.store.failing = true
        _ = try pair.a.value(forKey: "x")
        // The probe fails in the background; the breaker's reopening is reported after the ping
        // is counted, so wait for the report itself.
        poll("a failed probe reopened the breaker") {
            pair.eventsA.count { if case .breakerOpened = $0 { true } else { false } } >= 2
        }
        #expect(pair.store.pings >= 1)
        #expect(pair.eventsA.count { if case .breakerClosed = $0 { true } else { false } } == 0)
    }

    @Test(arguments: ["foreign", "damaged", "short"])
    func aValueWithoutAValidHeaderIsAMiss(_ kind: String) throws {
        let pair = try Pair()
        defer { pair.close() }
        var frame = RemotePayload.encode(bytes("payload"), expiryMilliseconds: nil, isLocked: false)
        switch kind {
        case "foreign": frame = bytes("{\"json\": \"written by someone else\"}")
        case "damaged": frame[frame.count - 1] ^= 0x01
        default: frame = frame.prefix(RemotePayload.headerSize - 1)
        }
        pair.store.put(frame, forKey: "test:v:k")
        #expect(try pair.b.value(forKey: "k") == nil)
        #expect(!pair.b.memory.contains("k") && !pair.b.disk.contains("k"))
        #expect(pair.b.statistics.remote?.rejectedPayloads == 1)
        #expect(pair.eventsB.count { if case .payloadRejected(key: "k") = $0 { true } else { false } } == 1)
    }

    @Test func thePayloadHeaderRoundTrips() throws {
        let data = Data((0 ..< 4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let frame = RemotePayload.encode(data, expiryMilliseconds: 1_700_000_123_456, isLocked: true)
        #expect(frame.count == RemotePayload.headerSize + data.count)
        #expect(frame.prefix(5) == Data("LRDR".utf8) + [1])
        let decoded = try #require(RemotePayload.decode(frame))
        #expect(decoded.data == data && decoded.expiryMilliseconds == 1_700_000_123_456 && decoded.isLocked)
        #expect(RemotePayload.decode(RemotePayload.encode(Data(), expiryMilliseconds: nil, isLocked: false))?.data == Data())
    }

    @Test func invalidationMessagesRoundTrip() throws {
        let sender = UUID()
        for scope in [RemoteInvalidation.Scope.key("a/b c"), .prefix(""), .prefix("user/"), .all, .key("é")] {
            let message = RemoteInvalidation(sender: sender, scope: scope)
            #expect(RemoteInvalidation(decoding: message.encoded) == message)
        }
        #expect(RemoteInvalidation(decoding: bytes("hello")) == nil)
        #expect(RemoteInvalidation(decoding: Data(sender.uuidString.utf8) + bytes("x")) == nil)
        // The id in either case; a key that starts with a combining mark is still a key.
        let lower = RemoteInvalidation(decoding: Data(sender.uuidString.lowercased().utf8) + bytes("k\u{301}x"))
        #expect(lower == RemoteInvalidation(sender: sender, scope: .key("\u{301}x")))
        // A message from a Data slice (indices not from 0) decodes the same.
        let sliced = (Data([0xFF]) + RemoteInvalidation(sender: sender, scope: .key("k")).encoded).dropFirst()
        #expect(RemoteInvalidation(decoding: sliced) == RemoteInvalidation(sender: sender, scope: .key("k")))
        var id = Array(sender.uuidString.utf8)
        for (offset, replacement) in [(0, UInt8(ascii: "g")), (8, UInt8(ascii: "0")), (35, UInt8(ascii: "-")), (13, UInt8(ascii: "_"))] {
            var bad = id
            bad[offset] = replacement
            #expect(RemoteInvalidation(decoding: Data(bad) + bytes("kx")) == nil, "\(String(decoding: bad, as: UTF8.self))")
        }
        id += Array("k".utf8) + [0xC3, 0x28]  // not UTF-8
        #expect(RemoteInvalidation(decoding: Data(id)) == nil)
        #expect(RemoteInvalidation(decoding: Data(sender.uuidString.utf8) + bytes("ax")) == nil)
    }

    @Test func lostInvalidationsAreBoundedByTheCapAndAReconnectClearsMemory() throws {
        let pair = try Pair(cap: 30)
        defer { pair.close() }
        try pair.a.store(bytes("old"), forKey: "k")
        #expect(try pair.b.value(forKey: "k") == bytes("old"))
        pair.store.dropsMessages = true
        try pair.a.store(bytes("new"), forKey: "k")
        // The invalidation was lost: b serves its copy (eventual consistency)...
        #expect(try pair.b.value(forKey: "k") == bytes("old"))
        // ...its memory copy goes when its subscription reconnects...
        pair.store.dropSubscriptions()
        #expect(!pair.b.memory.contains("k"))
        #expect(pair.eventsB.count { if case .subscriptionRestored = $0 { true } else { false } } == 1)
        #expect(pair.b.statistics.remote?.failures == 1)
        // ...and its disk copy at the local cap at the latest.
        pair.clock.advance(by: 31)
        #expect(try pair.b.value(forKey: "k") == bytes("new"))
    }

    @Test func backgroundWritesReachTheStoreInOrder() throws {
        let pair = try Pair { $0.writeMode = .background }
        defer { pair.close() }
        for round in 0 ..< 20 { try pair.a.store(bytes("v\(round)"), forKey: "k") }
        try pair.a.remove(forKey: "gone")
        pair.a.flushRemoteWrites()
        let frame = try #require(pair.store.raw("test:v:k"))
        #expect(RemotePayload.decode(frame)?.data == bytes("v19"))
        #expect(try pair.b.value(forKey: "k") == bytes("v19"))
    }

    @Test func storesInLocalTiersOnlyDropTheRemoteCopy() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.a.store(bytes("shared"), forKey: "k")
        #expect(pair.store.raw("test:v:k") != nil)
        try pair.a.store(bytes("mine"), forKey: "k", in: [.memory, .disk])
        #expect(pair.store.raw("test:v:k") == nil)
        #expect(try pair.b.value(forKey: "k") == nil)
        #expect(try pair.a.value(forKey: "k") == bytes("mine"))
    }

    @Test func aLoadThroughMissWaitsForTheInstanceHoldingTheLoadLock() async throws {
        let pair = try Pair { $0.loadLockWait = 120 }
        defer { pair.close() }
        // Another instance holds the lock for "k" and is loading it.
        pair.store.put(bytes("someone"), forKey: "test:l:k", milliseconds: 60_000)
        let loader = CountingLoader()
        let waiting = Task { try await pair.b.value(forKey: "k", orLoad: loader.load) }
        await eventually("b asked the remote tier and met the lock") { pair.store.calls >= 3 }
        try await pair.a.store(bytes("from a"), forKey: "k")
        #expect(try await waiting.value == bytes("from a"))
        #expect(loader.count == 0)
        #expect(pair.b.statistics.loads == 0)
    }

    @Test func aLoadThroughMissTakesTheLockLoadsStoresAndReleasesIt() async throws {
        let pair = try Pair()
        defer { pair.close() }
        let loader = CountingLoader()
        let data = try await pair.a.value(forKey: "k", expiry: .seconds(300), orLoad: loader.load)
        #expect(loader.count == 1)
        #expect(RemotePayload.decode(try #require(pair.store.raw("test:v:k")))?.data == data)
        await eventually("the lock was released") { pair.store.raw("test:l:k") == nil }
        // The other instance reads it from the remote tier, without loading.
        let other = CountingLoader()
        #expect(try await pair.b.value(forKey: "k", orLoad: other.load) == data)
        #expect(other.count == 0)
    }

    @Test func invalidOptionsAreRejected() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let store = FakeRemoteStore(clock: ManualClock())
        let changes: [(inout RemoteTierOptions) -> Void] = [{ $0.namespace = "" }, { $0.commandTimeout = 0 }, { $0.failureThreshold = 0 }]
        for change in changes {
            var options = hybridOptions(temporary.url)
            var remote = RemoteTierOptions(store: store, namespace: "n")
            change(&remote)
            options.remote = remote
            #expect(throws: CacheError.self) { try HybridCache(options: options) }
        }
    }
}

/// Polls `condition` every millisecond for up to a minute, from a synchronous test; records an
/// issue if it never holds. Waits for something to happen at all, never for how fast.
func poll(_ what: String, _ condition: () -> Bool) {
    for _ in 0 ..< 60_000 {
        if condition() { return }
        Thread.sleep(forTimeInterval: 0.001)
    }
    Issue.record("never happened: \(what)")
}

/// `HybridCache.values(forKeys:from:)`: local hits per key, one remote call for the rest.
@Suite struct HybridBatchReadTests {
    @Test func localHitsThenOneRemoteCallForTheMisses() throws {
        let pair = try HybridRemoteTests.Pair()
        defer { pair.close() }
        for index in 0 ..< 5 { try pair.a.store(bytes("v\(index)"), forKey: "k\(index)") }
        _ = try pair.b.value(forKey: "k0")
        let callsBefore = pair.store.calls
        let values = try pair.b.values(forKeys: ["k0", "k1", "absent", "k2", "k1"])
        #expect(values == [bytes("v0"), bytes("v1"), nil, bytes("v2"), bytes("v1")])
        #expect(pair.store.calls == callsBefore + 1)
        pair.b.flushRemoteWrites()
        #expect(pair.b.memory.contains("k2") && pair.b.disk.contains("k2"))
        // Without a remote tier in the call, the plain per-key reads.
        #expect(try pair.b.values(forKeys: ["k3", "k2"], from: [.memory, .disk]) == [nil, bytes("v2")])
    }
}
