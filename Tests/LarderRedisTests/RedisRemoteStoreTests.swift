import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Testing

/// `RedisRemoteStore` and the remote tier against a real `redis-server` (`LARDER_TEST_REDIS`).
/// Without one they are skipped; with `LARDER_REQUIRE_REDIS=1` and none, they fail.
@Suite(.enabled(if: TestRedis.runs, "no Redis server: set LARDER_TEST_REDIS=host:port (.ci/run starts one)"))
struct RedisRemoteStoreTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    @Test(arguments: [4 << 10, 1 << 20])
    func binaryValuesRoundTripBetweenTwoCaches(_ size: Int) throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("roundtrip")
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let events = EventLog()
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: store, namespace: namespace))
        let b = try HybridCache(options: redisCacheOptions(dirB.url, store: store, namespace: namespace, events: events.handler))
        defer {
            a.close()
            b.close()
        }
        waitUntil("b's subscription listens") { events.subscribed == 1 }
        // Every byte value, zeros included, in a pattern that no off-by-one survives.
        var generator = SystemRandomNumberGenerator()
        let data = Data((0 ..< size).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
        try a.store(data, forKey: "blob/\(size)", expiry: .seconds(600))
        // The store's invalidation reaches b first (else it could drop the copy b is about to make).
        waitUntil("b received a's invalidation") { b.statistics.remote?.invalidationsReceived == 1 }
        #expect(try b.value(forKey: "blob/\(size)") == data)
        #expect(b.statistics.remote?.hits == 1)
        // Promoted: the next read is b's own.
        #expect(try b.value(forKey: "blob/\(size)", from: [.memory, .disk]) == data)
        // The raw value carries the header.
        let raw = try #require(try store.values(forKeys: ["\(namespace):v:blob/\(size)"], timeouts: timeouts).first ?? nil)
        #expect(raw.data.count == size + RemotePayload.headerSize)
        #expect(RemotePayload.decode(raw.data)?.data == data)
        try a.removeAll()
    }

    /// The key's `PTTL` in milliseconds (-1: no expiry, -2: no key).
    func timeToLive(_ store: RedisRemoteStore, _ key: String) throws -> Int64 {
        guard case .integer(let ttl) = try store.command(["PTTL", key], timeouts: timeouts) else {
            Issue.record("PTTL answered something else than an integer")
            return -3
        }
        return ttl
    }

    @Test func valuesExpireOnTheServer() throws {
        let store = try TestRedis.store()
        let key = uniqueNamespace("expiry")
        #expect(try store.store(Data("x".utf8), forKey: key, expiresIn: 300, onlyIfAbsent: false, timeouts: timeouts))
        let ttl = try timeToLive(store, key)
        #expect(ttl > 0 && ttl <= 300)
        // One GET: the time to live is not asked (the frame header carries the expiry).
        #expect(try store.values(forKeys: [key], timeouts: timeouts).first??.millisecondsToLive == nil)
        waitUntil("the value expired") { (try? store.values(forKeys: [key], timeouts: timeouts).first ?? nil) == nil }
        // SET NX: only the first of two writers.
        let lock = uniqueNamespace("lock")
        #expect(try store.store(Data("1".utf8), forKey: lock, expiresIn: 60_000, onlyIfAbsent: true, timeouts: timeouts))
        #expect(try !store.store(Data("2".utf8), forKey: lock, expiresIn: 60_000, onlyIfAbsent: true, timeouts: timeouts))
        // PEXPIRE GT: a shorter lifetime is refused, a longer one taken.
        #expect(try !store.touch(forKey: lock, expiresIn: 1_000, timeouts: timeouts))
        #expect(try timeToLive(store, lock) > 1_000)
        #expect(try store.touch(forKey: lock, expiresIn: 120_000, timeouts: timeouts))
        #expect(try timeToLive(store, lock) > 60_000)
        #expect(try store.touch(forKey: lock, expiresIn: nil, timeouts: timeouts))
        #expect(try timeToLive(store, lock) == -1)
        try store.remove(forKeys: [lock], timeouts: timeouts)
        #expect(try store.values(forKeys: [lock], timeouts: timeouts) == [nil])
    }

    @Test func severalKeysAreReadWithOneMGET() throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("mget")
        let keys = ["\(namespace):a", "\(namespace):missing", "\(namespace):b"]
        for key in [keys[0], keys[2]] {
            _ = try store.store(Data(key.utf8), forKey: key, expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts)
        }
        let found = try store.values(forKeys: keys, timeouts: timeouts)
        #expect(found.map { $0?.data } == [Data(keys[0].utf8), nil, Data(keys[2].utf8)])
        #expect(try store.values(forKeys: [], timeouts: timeouts).isEmpty)
        try store.remove(forKeys: keys, timeouts: timeouts)
    }

    @Test func removalByPrefixTakesTheNamespaceOnlyAndTreatsGlobCharactersLiterally() throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("prefix")
        let keys = ["\(namespace)*:a", "\(namespace)*:b", "\(namespace)?:c"] + (0 ..< 1500).map { "\(namespace)*:bulk/\($0)" }
        for key in keys { _ = try store.store(Data("v".utf8), forKey: key, expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts) }
        #expect(try store.remove(withPrefix: "\(namespace)*:", timeouts: timeouts) == keys.count - 1)
        #expect(try store.values(forKeys: ["\(namespace)?:c"], timeouts: timeouts).first??.data == Data("v".utf8))
        try store.remove(forKeys: ["\(namespace)?:c"], timeouts: timeouts)
    }

    @Test func twoCachesWithSeparateDirectoriesShareValuesAndInvalidations() throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("share")
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let (eventsA, eventsB) = (EventLog(), EventLog())
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: store, namespace: namespace, events: eventsA.handler))
        let b = try HybridCache(options: redisCacheOptions(dirB.url, store: store, namespace: namespace, events: eventsB.handler))
        defer {
            a.close()
            b.close()
        }
        waitUntil("both subscriptions listen") { eventsA.subscribed == 1 && eventsB.subscribed == 1 }
        try a.store(Data("v1".utf8), forKey: "user/1/name")
        try a.store(Data("p".utf8), forKey: "user/1/photo")
        #expect(try b.value(forKey: "user/1/name") == Data("v1".utf8))
        #expect(try b.value(forKey: "user/1/photo") == Data("p".utf8))
        // b removes: a's own copies go.
        try b.remove(forKey: "user/1/name")
        waitUntil("a dropped its copy of user/1/name") { (try? a.value(forKey: "user/1/name", from: [.memory, .disk])) == nil }
        #expect(try a.value(forKey: "user/1/name") == nil)
        // a replaces: b reads the new value once its copy is dropped.
        try a.store(Data("p2".utf8), forKey: "user/1/photo")
        waitUntil("b dropped its copy of user/1/photo") { (try? b.value(forKey: "user/1/photo", from: [.memory, .disk])) == nil }
        #expect(try b.value(forKey: "user/1/photo") == Data("p2".utf8))
        // A prefix from a, then everything from b.
        try a.remove(withPrefix: "user/1/")
        waitUntil("b dropped user/1/") { (try? b.keys(withPrefix: "user/1/"))?.isEmpty == true }
        try a.store(Data("z".utf8), forKey: "z")
        _ = try b.value(forKey: "z")
        try b.removeAll()
        waitUntil("a dropped everything") { (try? a.keys())?.isEmpty == true }
        #expect(try store.remove(withPrefix: namespace + ":", timeouts: timeouts) == 0)
        #expect((b.statistics.remote?.invalidationsReceived ?? 0) >= 2)
    }

    @Test func anInvalidationReachesAnotherProcess() throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("peer")
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: store, namespace: namespace))
        defer { a.close() }
        let payload = Data((0 ..< 4096).map { UInt8(truncatingIfNeeded: $0) })
        try a.store(payload, forKey: "shared", expiry: .seconds(600))
        let peer = try HelperProcess("larder-redis-peer", [try #require(TestRedis.address), dirB.url.path, namespace, "shared"])
        defer { peer.kill() }
        #expect(peer.readLine() == "ready 4096")
        try a.remove(forKey: "shared")
        #expect(peer.readLine() == "invalidated")
        #expect(peer.waitForExit() == 0)
    }

    @Test func aPausedServerNeverFailsACallTheLocalTiersServe() throws {
        guard let executable = PrivateRedisServer.executable else {
            Issue.record("redis-server is not on the PATH: the paused-server test needs its own server")
            return
        }
        let server = try PrivateRedisServer(executable: executable)
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let events = EventLog()
        let cache = try HybridCache(
            options: redisCacheOptions(directory.url, store: store, namespace: "paused", events: events.handler) {
                $0.commandTimeout = 0.2
                $0.breakerCooldown = 0.2
            })
        defer { cache.close() }
        try cache.store(Data("local".utf8), forKey: "k")
        server.pause()
        do {
            defer { server.resume() }
            #expect(try cache.value(forKey: "k") == Data("local".utf8))
            #expect(try cache.value(forKey: "absent") == nil)
            try cache.store(Data("while paused".utf8), forKey: "k2")
            #expect(try cache.value(forKey: "k2") == Data("while paused".utf8))
            #expect((cache.statistics.remote?.failures ?? 0) >= 1)
            #expect(events.count { if case .failed = $0 { true } else { false } } >= 1)
        }
        // Once resumed (and past the breaker's cool-down), writes reach the server again.
        waitUntil("a store reaches the resumed server") {
            try? cache.store(Data("after".utf8), forKey: "k3")
            let found = try? store.values(forKeys: ["paused:v:k3"], timeouts: timeouts).first ?? nil
            return found != nil
        }
    }

    @Test func aKilledServerIsSurvivedAndTheSubscriberReconnects() throws {
        guard let executable = PrivateRedisServer.executable else {
            Issue.record("redis-server is not on the PATH: the killed-server test needs its own server")
            return
        }
        let server = try PrivateRedisServer(executable: executable)
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let (eventsA, eventsB) = (EventLog(), EventLog())
        let configure: (inout RemoteTierOptions) -> Void = {
            $0.commandTimeout = 0.5
            $0.breakerCooldown = 0.2
        }
        let a = try HybridCache(
            options: redisCacheOptions(dirA.url, store: store, namespace: "killed", events: eventsA.handler, configure: configure))
        let b = try HybridCache(
            options: redisCacheOptions(dirB.url, store: store, namespace: "killed", events: eventsB.handler, configure: configure))
        defer {
            a.close()
            b.close()
        }
        waitUntil("both subscriptions listen") { eventsA.subscribed == 1 && eventsB.subscribed == 1 }
        try a.store(Data("v".utf8), forKey: "k")
        waitUntil("b received a's invalidation") { b.statistics.remote?.invalidationsReceived == 1 }
        #expect(try b.value(forKey: "k") == Data("v".utf8))
        server.killNow()
        // Local tiers keep serving; the remote is a miss, never an error.
        #expect(try b.value(forKey: "k") == Data("v".utf8))
        #expect(try b.value(forKey: "absent") == nil)
        try a.store(Data("local only".utf8), forKey: "k4")
        waitUntil("b's subscription saw the loss") { eventsB.count { if case .subscriptionLost = $0 { true } else { false } } >= 1 }
        try server.restart()
        waitUntil("b's subscription is back") { eventsB.count { if case .subscriptionRestored = $0 { true } else { false } } >= 1 }
        // After reconnecting, b cleared its memory tier; invalidations flow again.
        #expect(!b.memory.contains("k"))
        waitUntil("an invalidation from a reaches b") {
            _ = try? a.remove(forKey: "k")
            return (try? b.value(forKey: "k", from: [.memory, .disk])) == nil
        }
    }
}
