#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import LarderTestSupport
import Testing

@testable import LarderRedis

/// The remote tier's promises through outages, against `redis-server` processes of the tests'
/// own: a removal made while Redis was down does not come back when Redis restarts from its file
/// (the outbox), and every call keeps to one budget, with connects off the caller's path.
@Suite(
    .enabled(
        if: PrivateRedisServer.executable != nil || TestRedis.isRequired,
        "redis-server is not on the PATH (set LARDER_REQUIRE_REDIS=1 to fail instead)"))
struct RedisOutageTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    func privateServer(persistent: TemporaryDirectory? = nil) throws -> PrivateRedisServer? {
        guard let executable = PrivateRedisServer.executable else {
            Issue.record("LARDER_REQUIRE_REDIS=1 but redis-server is not on the PATH")
            return nil
        }
        return try PrivateRedisServer(executable: executable, persistenceDirectory: persistent?.url)
    }

    /// The raw bytes under `key`, read by a store of the test's own.
    func raw(_ server: PrivateRedisServer, _ key: String) throws -> Data? {
        try RedisRemoteStore(address: server.address).values(forKeys: [key], timeouts: timeouts).first??.data
    }

    // MARK: - Section: a removal while Redis is down

    @Test func aRemovalWhileRedisWasDownIsReplayedByTheNextInstanceAfterRedisRestartsFromItsFile() throws {
        let persistence = TemporaryDirectory()
        defer { persistence.remove() }
        guard let server = try privateServer(persistent: persistence) else { return }
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let (dirA, dirB, dirC) = (TemporaryDirectory(), TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
            dirC.remove()
        }
        let eventsB = EventLog()
        let configure: (inout RemoteTierOptions) -> Void = {
            $0.commandTimeout = 0.5
            $0.breakerCooldown = 0.2
        }
        // a retries its replays only after an hour: until it goes, nothing replays the removal.
        let a = try HybridCache(
            options: redisCacheOptions(dirA.url, store: store, namespace: "outage", events: nil) {
                $0.commandTimeout = 0.5
                $0.breakerCooldown = 3600
                $0.failureThreshold = 1_000
            })
        let b = try HybridCache(
            options: redisCacheOptions(dirB.url, store: store, namespace: "outage", events: eventsB.handler, configure: configure))
        defer { b.close() }
        waitUntil("b's subscription listens") { eventsB.subscribed == 1 }
        try a.store(Data("old".utf8), forKey: "k")
        #expect(try b.value(forKey: "k") == Data("old".utf8))

        server.killNow()
        // Redis is down: the removal returns, and its key is written to a's outbox.
        #expect(try a.remove(forKey: "k") == true)
        #expect(FileManager.default.fileExists(atPath: dirA.url.appendingPathComponent(".larder-outbox").path))

        try server.restart()
        // Restarted from its file, Redis holds the old value again (framed: the payload ends it).
        #expect(try raw(server, "outage:v:k")?.suffix(3) == Data("old".utf8))
        // a answers the store again, but never reads the key it removed back from it.
        #expect(try a.value(forKey: "k") == nil)
        #expect(try a.value(forKey: "k", from: [.remote]) == nil)
        // a goes before its replay.
        a.close()
        waitUntil("b's subscription is back") { eventsB.count { if case .subscriptionRestored = $0 { true } else { false } } >= 1 }

        // The next instance on a's folder: its reads of the key skip Redis until the replay,
        // which removes the old value and tells b.
        let a2 = try HybridCache(options: redisCacheOptions(dirA.url, store: store, namespace: "outage", configure: configure))
        defer { a2.close() }
        #expect(try a2.value(forKey: "k") == nil)
        waitUntil("a2 replayed the removal") { (try? raw(server, "outage:v:k")) == .some(nil) }
        waitUntil("b dropped its copy on the replayed invalidation") { (try? b.value(forKey: "k")) == .some(nil) }
        let c = try HybridCache(options: redisCacheOptions(dirC.url, store: store, namespace: "outage", configure: configure))
        defer { c.close() }
        #expect(try c.value(forKey: "k") == nil)
        #expect(try a2.value(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: dirA.url.appendingPathComponent(".larder-outbox").path))
    }

    @Test func aRemovalWhileRedisWasDownIsReplayedByTheSameInstanceOnceRedisAnswers() throws {
        let persistence = TemporaryDirectory()
        defer { persistence.remove() }
        guard let server = try privateServer(persistent: persistence) else { return }
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let (dirA, dirC) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirC.remove()
        }
        let configure: (inout RemoteTierOptions) -> Void = {
            $0.commandTimeout = 0.5
            $0.breakerCooldown = 0.2
            $0.failureThreshold = 1
        }
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: store, namespace: "outage", configure: configure))
        defer { a.close() }
        try a.store(Data("old".utf8), forKey: "k")
        try a.store(Data("old".utf8), forKey: "stored")
        server.killNow()
        #expect(try a.remove(forKey: "k") == true)
        try a.store(Data("new".utf8), forKey: "stored")
        try server.restart()
        // Until the replay, a never reads the old values back from Redis.
        #expect(try a.value(forKey: "k", from: [.remote]) == nil)
        #expect(try a.value(forKey: "stored", from: [.remote]) == nil)
        waitUntil("a replayed its outbox") { a.statistics.remote.map { $0.invalidationsPublished >= 4 } ?? false }
        #expect(try raw(server, "outage:v:k") == nil)
        #expect(try raw(server, "outage:v:stored") == nil)
        let c = try HybridCache(options: redisCacheOptions(dirC.url, store: store, namespace: "outage", configure: configure))
        defer { c.close() }
        #expect(try c.value(forKey: "k") == nil)
        #expect(try c.value(forKey: "stored") == nil)
        #expect(try a.value(forKey: "stored") == Data("new".utf8))
    }

    // MARK: - Section: one budget per call

    @Test func aStoreToAHungServerSendsNoPublishOnceItsBudgetIsSpent() throws {
        guard let server = try privateServer() else { return }
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try HybridCache(
            options: redisCacheOptions(directory.url, store: store, namespace: "hung", events: nil) {
                $0.commandTimeout = 0.2
                $0.failureThreshold = 1_000
                $0.breakerCooldown = 3600
            })
        defer { cache.close() }
        try cache.store(Data("warm".utf8), forKey: "warm")
        let lent = store.pool.lent
        server.pause()
        do {
            defer { server.resume() }
            // Returns while the server is still stopped: the SET waited out the whole budget,
            // so the PUBLISH was never sent (one connection lent, not two).
            try cache.store(Data("v".utf8), forKey: "k")
            #expect(store.pool.lent == lent + 1)
            #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent(".larder-outbox").path))
        }
    }

    @Test func aCallNeverWaitsForAConnectThatDoesNotComplete() throws {
        let listener = try FullListener()
        defer { listener.close() }
        let store = try RedisRemoteStore(host: "127.0.0.1", port: listener.port)
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try HybridCache(
            options: redisCacheOptions(directory.url, store: store, namespace: "blackhole", events: nil) {
                $0.connectTimeout = 600
                $0.commandTimeout = 0.1
                $0.failureThreshold = 1_000
            })
        defer { cache.close() }
        // Each call gives up after its own budget while the connect goes on in the background
        // (still under way when the calls return): no caller waits for the connect timeout.
        #expect(try cache.value(forKey: "k") == nil)
        #expect(store.pool.connectsInFlight >= 1)
        try cache.store(Data("v".utf8), forKey: "k")
        #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent(".larder-outbox").path))
        #expect(try cache.value(forKey: "k") == Data("v".utf8))
        #expect(store.pool.connectsInFlight >= 1)
        #expect(store.pool.lent == 0)
        // One connect at a time for callers that find one under way (the subscription has its own).
        #expect(store.pool.connectsStarted == 1)
    }

    @Test func writesResumeAtTheFirstProbeAfterAKilledServerIsBack() throws {
        guard let server = try privateServer() else { return }
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let events = EventLog()
        let cache = try HybridCache(
            options: redisCacheOptions(directory.url, store: store, namespace: "resume", events: events.handler) {
                $0.commandTimeout = 0.5
                $0.failureThreshold = 1
                $0.breakerCooldown = 0.2
            })
        defer { cache.close() }
        try cache.store(Data("v".utf8), forKey: "before")
        server.killNow()
        try cache.store(Data("v".utf8), forKey: "during")
        waitUntil("the breaker opened") { events.count { if case .breakerOpened = $0 { true } else { false } } >= 1 }
        try server.restart()
        let opened = events.count { if case .breakerOpened = $0 { true } else { false } }
        // The pooled connections died with the server; the first probe that reaches the
        // restarted server closes the breaker (a probe that failed before the restart may have
        // opened it once more, never twice).
        waitUntil("the breaker closed") { events.count { if case .breakerClosed = $0 { true } else { false } } == 1 }
        #expect(events.count { if case .breakerOpened = $0 { true } else { false } } <= opened + 1)
        try cache.store(Data("v".utf8), forKey: "after")
        #expect(try raw(server, "resume:v:after") != nil)
    }
}

/// A listening socket whose backlog is full: a connect to it never completes (the kernel drops
/// its SYN), as with a server behind a black hole.
final class FullListener {
    let port: Int
    private let listener: Int32
    private var fillers: [Int32] = []

    init() throws {
        guard let (listener, port) = listenOnLoopback(backlog: 0) else {
            throw CacheError(.ioFailure, "the full listener could not listen")
        }
        self.listener = listener
        self.port = port
        // Connections nobody accepts: the first fills the queue (a backlog of 0 holds one), the
        // others wait as the store's will.
        for _ in 0 ..< 4 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            _ = fcntl(filler, F_SETFL, fcntl(filler, F_GETFL) | O_NONBLOCK)
            fillers.append(filler)
            var target = loopbackAddress(port: port)
            _ = withUnsafeMutablePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    func close() {
        for filler in fillers { closeDescriptor(filler) }
        closeDescriptor(listener)
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
