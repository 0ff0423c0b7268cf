import Foundation
import Larder
import LarderTestSupport
import Synchronization
import Testing

@testable import LarderRedis

/// Push frames on one connection, and the remote tier's `CLIENT TRACKING` invalidation
/// (`RemoteTierOptions.invalidation = .tracking`): against a scripted server, the shared test
/// server, and `redis-server` processes of the tests' own for the losses.
@Suite struct RedisPushRoutingTests {
    @Test func pushFramesBetweenRepliesGoToTheHandlerAndRepliesToTheirCommands() throws {
        let invalidateA = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nn:a\r\n"
        let flush = ">2\r\n$10\r\ninvalidate\r\n_\r\n"
        let scripted = try ScriptedServer([invalidateA + "+PONG\r\n", "$1\r\nv\r\n" + flush + ":5\r\n" + invalidateA])
        defer { scripted.stop() }
        let connection = try RedisConnection.open(
            RedisServer(host: "127.0.0.1", port: scripted.port, username: nil, password: nil, database: 0), timeout: 5)
        try connection.setCommandTimeout(5)
        let pushes = Mutex<[RedisReply]>([])
        connection.pushHandler = { push in pushes.withLock { $0.append(push) } }
        #expect(try connection.command(RedisArguments(["PING"])) == .status("PONG"))
        #expect(pushes.withLock { $0.count } == 1)
        // A push between two pipelined replies; the one after them waits for the next read.
        #expect(
            try connection.pipeline([RedisArguments(["GET", "k"]), RedisArguments(["INCR", "x"])]) == [
                .string(Data("v".utf8)), .integer(5),
            ])
        let invalidate = RedisReply.string(Data("invalidate".utf8))
        #expect(pushes.withLock { $0 } == [.push([invalidate, .array([.string(Data("n:a".utf8))])]), .push([invalidate, .null])])
        #expect(RedisTrackingSubscription.event(of: pushes.withLock { $0[0] }) == .changed(keys: ["n:a"]))
        #expect(RedisTrackingSubscription.event(of: pushes.withLock { $0[1] }) == .changed(keys: nil))
        #expect(RedisTrackingSubscription.event(of: .push([.string(Data("message".utf8)), .string(Data()), .string(Data())])) == nil)
        #expect(!connection.isBroken)
    }

    @Test func withoutAHandlerAPushIsReturnedAsAReply() throws {
        let scripted = try ScriptedServer([">1\r\n+hi\r\n+PONG\r\n"])
        defer { scripted.stop() }
        let connection = try RedisConnection.open(
            RedisServer(host: "127.0.0.1", port: scripted.port, username: nil, password: nil, database: 0), timeout: 5)
        try connection.setCommandTimeout(5)
        #expect(try connection.command(RedisArguments(["PING"])) == .push([.status("hi")]))
        #expect(try connection.readReply() == .status("PONG"))
    }

    @Test func helloThreeCarriesTheCredentialsWhenTheConnectionSpeaksRESP3() {
        var server = RedisServer(host: "h", port: 1, username: nil, password: "pw", database: 2)
        #expect(server.handshake.map(\.name) == ["AUTH", "SELECT"])
        server.speaksRESP3 = true
        var expected: [UInt8] = []
        RedisArguments(["HELLO", "3", "AUTH", "default", "pw"]).encode(into: &expected)
        RedisArguments(["SELECT", "2"]).encode(into: &expected)
        var encoded: [UInt8] = []
        for command in server.handshake { command.encode(into: &encoded) }
        #expect(encoded == expected)
        server.password = nil
        server.database = 0
        #expect(server.handshake.count == 1)
        #expect(server.handshake.first?.name == "HELLO")
    }
}

@Suite(.enabled(if: TestRedis.runs, "no Redis server: set LARDER_TEST_REDIS=host:port (.ci/run starts one)"))
struct RedisTrackingTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    @Test func aTrackingConnectionRoutesInvalidationsAroundItsOwnReplies() throws {
        guard let address = TestRedis.address else {
            Issue.record("no test Redis server")
            return
        }
        let store = try TestRedis.store()
        let prefix = uniqueNamespace("push") + ":"
        let colon = try #require(address.lastIndex(of: ":"))
        var server = RedisServer(
            host: String(address[..<colon]), port: try #require(Int(address[address.index(after: colon)...])), username: nil,
            password: nil, database: 0)
        server.speaksRESP3 = true
        let connection = try RedisConnection.open(server, timeout: 5)
        try connection.setCommandTimeout(5)
        let pushes = Mutex<[RedisReply]>([])
        connection.pushHandler = { push in pushes.withLock { $0.append(push) } }
        #expect(try connection.command(RedisArguments(["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", prefix])) == .status("OK"))
        _ = try store.store(Data("1".utf8), forKey: prefix + "a", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts)
        // Each command on the tracking connection gets its own reply, whatever pushes came first.
        waitUntil("the invalidation arrives") {
            #expect((try? connection.command(RedisArguments(["PING"]))) == .status("PONG"))
            return !pushes.withLock { $0.isEmpty }
        }
        #expect(pushes.withLock { $0.map(RedisTrackingSubscription.event(of:)) }.first == .changed(keys: [prefix + "a"]))
    }

    @Test func theTrackingConnectionProbesASilentServer() throws {
        guard let address = TestRedis.address else {
            Issue.record("no test Redis server")
            return
        }
        let colon = try #require(address.lastIndex(of: ":"))
        let server = RedisServer(
            host: String(address[..<colon]), port: try #require(Int(address[address.index(after: colon)...])), username: nil,
            password: nil, database: 0)
        let subscribed = Atomic<Int>(0)
        let subscription = RedisTrackingSubscription.start(
            server: server, prefix: uniqueNamespace("keepalive") + ":", timeouts: timeouts
        ) { event in
            if case .subscribed = event { subscribed.add(1, ordering: .relaxed) }
        }
        defer { subscription.cancel() }
        waitUntil("it tracks") { subscribed.load(ordering: .relaxed) == 1 }
        // Only the connection it waits for pushes on has keepalive: without it, a server gone
        // without closing the connection would never be reported lost.
        let settings = try #require(subscription.keepAliveSettings)
        let expected = RedisConnection.keepAlive
        #expect(settings.on && settings.idle == expected.idle && settings.interval == expected.interval && settings.count == expected.count)
        let plain = try RedisConnection.open(server, timeout: 5)
        #expect((plain.transport as? Socket)?.keepAliveSettings().on == false)
    }

    @Test func aWriteByAInvalidatesBsCopiesThroughTracking() throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("tracking")
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let eventsB = EventLog()
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: store, namespace: namespace))
        let b = try HybridCache(
            options: redisCacheOptions(dirB.url, store: store, namespace: namespace, events: eventsB.handler) {
                $0.invalidation = .tracking
            })
        defer {
            a.close()
            b.close()
        }
        waitUntil("b tracks") { eventsB.subscribed == 1 }
        let invalidationsOfK = { eventsB.count { if case .invalidated(.key("k")) = $0 { true } else { false } } }
        try a.store(Data("v1".utf8), forKey: "k")
        // The store's own change report comes first, so that it does not drop the copy b reads next.
        waitUntil("b hears of v1") { invalidationsOfK() == 1 }
        // b does not subscribe to a's pub/sub invalidations: only tracking can drop its copies,
        // by the key's change report or, when its connection is lost (a loaded machine), all of
        // them at once. After a loss, the step is made again with a new value once b tracks again:
        // one change must reach b as a report of its key.
        var heard = false
        for version in 2 ... 4 where !heard {
            #expect(try b.value(forKey: "k") == Data("v\(version - 1)".utf8))
            b.flushRemoteWrites()
            #expect(try b.value(forKey: "k", from: [.memory]) == Data("v\(version - 1)".utf8))
            #expect(try b.value(forKey: "k", from: [.disk]) == Data("v\(version - 1)".utf8))
            let (reports, losses) = (invalidationsOfK(), eventsB.lost)
            try a.store(Data("v\(version)".utf8), forKey: "k")
            waitUntil("b drops its copies of k") {
                (try? b.value(forKey: "k", from: [.memory, .disk])) == .some(nil)
            }
            waitUntil("b hears of the change, or of the loss") { invalidationsOfK() > reports || eventsB.lost > losses }
            heard = invalidationsOfK() > reports
            if !heard { waitUntil("b tracks again") { eventsB.restored >= eventsB.lost } }
        }
        #expect(heard, "a change reached b as a report of its key")
        #expect(try b.value(forKey: "k") != nil)
    }
}

/// Losses of the tracking connection, against `redis-server` processes of the tests' own.
@Suite(
    .enabled(
        if: PrivateRedisServer.executable != nil || TestRedis.isRequired,
        "redis-server is not on the PATH (set LARDER_REQUIRE_REDIS=1 to fail instead)"))
struct RedisTrackingLossTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    /// Two caches on `server`: `a` with pub/sub, `b` with tracking; `b` tracks when this returns.
    struct Caches {
        let a: HybridCache
        let b: HybridCache
        let eventsB = EventLog()
        let directories = (TemporaryDirectory(), TemporaryDirectory())

        init(_ store: RedisRemoteStore) throws {
            let eventsB = eventsB
            a = try HybridCache(options: redisCacheOptions(directories.0.url, store: store, namespace: "loss"))
            b = try HybridCache(
                options: redisCacheOptions(directories.1.url, store: store, namespace: "loss", events: eventsB.handler) {
                    $0.invalidation = .tracking
                    $0.breakerCooldown = 0.2
                })
            waitUntil("b tracks") { eventsB.subscribed == 1 }
        }

        /// `a` stores `value` under `k`, and `b` holds its own copy in memory and on disk.
        func share(_ value: String) throws {
            let heard = eventsB.count { if case .invalidated(.key("k")) = $0 { true } else { false } }
            try a.store(Data(value.utf8), forKey: "k")
            // The store's own change report comes first, so that it does not drop the copy b reads next.
            waitUntil("b hears of \(value)") { eventsB.count { if case .invalidated(.key("k")) = $0 { true } else { false } } > heard }
            #expect(try b.value(forKey: "k") == Data(value.utf8))
            b.flushRemoteWrites()
            #expect(try b.value(forKey: "k", from: [.memory]) == Data(value.utf8))
            #expect(try b.value(forKey: "k", from: [.disk]) == Data(value.utf8))
        }

        var losses: Int { eventsB.count { if case .subscriptionLost = $0 { true } else { false } } }
        var restorations: Int { eventsB.count { if case .subscriptionRestored = $0 { true } else { false } } }

        func close() {
            a.close()
            b.close()
            directories.0.remove()
            directories.1.remove()
        }
    }

    func privateServer() throws -> PrivateRedisServer? {
        guard let executable = PrivateRedisServer.executable else {
            Issue.record("LARDER_REQUIRE_REDIS=1 but redis-server is not on the PATH")
            return nil
        }
        return try PrivateRedisServer(executable: executable)
    }

    /// The ids of the connections whose last command turned tracking on.
    func trackingClients(_ store: RedisRemoteStore) throws -> [String] {
        guard case .string(let list) = try store.command(["CLIENT", "LIST"], timeouts: timeouts) else { return [] }
        return String(decoding: list, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard line.contains("cmd=client|tracking") else { return nil }
            return line.split(separator: " ").first { $0.hasPrefix("id=") }.map { String($0.dropFirst(3)) }
        }
    }

    @Test func aKilledTrackingConnectionIsNoticedAndNoCopyOutlivesIt() throws {
        guard let server = try privateServer() else { return }
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let caches = try Caches(store)
        defer { caches.close() }
        try caches.share("v1")
        let ids = try trackingClients(store)
        #expect(ids.count == 1)
        for id in ids { try store.command(["CLIENT", "KILL", "ID", id], timeouts: timeouts) }
        // The loss is noticed, and b's copies, which it can no longer prove fresh, went with it.
        waitUntil("b notices the loss") { caches.losses >= 1 }
        #expect(try caches.b.value(forKey: "k", from: [.memory, .disk]) == nil)
        // A change made while b may not be tracking yet reaches b once it tracks again.
        let writerDirectory = TemporaryDirectory()
        let writer = try HybridCache(options: redisCacheOptions(writerDirectory.url, store: store, namespace: "loss"))
        defer {
            writer.close()
            writerDirectory.remove()
        }
        try writer.store(Data("v2".utf8), forKey: "k")
        waitUntil("b tracks again") { caches.restorations >= 1 }
        #expect(try caches.b.value(forKey: "k") == Data("v2".utf8))
        // And tracking works on the new connection.
        try caches.a.store(Data("v3".utf8), forKey: "k")
        waitUntil("b drops v2") { (try? caches.b.value(forKey: "k", from: [.memory, .disk])) == .some(nil) }
        #expect(try caches.b.value(forKey: "k") == Data("v3".utf8))
    }

    @Test func aKilledServerIsNoticedAndBServesNoStaleValueAfterItRestarts() throws {
        guard let server = try privateServer() else { return }
        defer { server.stop() }
        let store = try RedisRemoteStore(address: server.address)
        let caches = try Caches(store)
        defer { caches.close() }
        try caches.share("v1")
        server.killNow()
        waitUntil("b notices the loss") { caches.losses >= 1 }
        // Redis is down: b has nothing to serve it from.
        #expect(try caches.b.value(forKey: "k") == nil)
        // Restarted empty: the value is gone, and b does not bring back its old copy.
        try server.restart()
        waitUntil("b tracks again") { caches.restorations >= 1 }
        #expect(try caches.b.value(forKey: "k") == nil)
    }

    @Test func aFlushDropsEveryCopyAndHelloThreeAuthenticates() throws {
        guard let server = try privateServer() else { return }
        defer { server.stop() }
        try RedisRemoteStore(address: server.address).command(["CONFIG", "SET", "requirepass", "s3cret"], timeouts: timeouts)
        let store = try RedisRemoteStore(address: server.address, password: "s3cret")
        let caches = try Caches(store)
        defer { caches.close() }
        try caches.share("v1")
        try store.command(["FLUSHALL"], timeouts: timeouts)
        waitUntil("b drops everything") { (try? caches.b.value(forKey: "k", from: [.memory, .disk])) == .some(nil) }
        #expect(caches.eventsB.count { if case .invalidated(.all) = $0 { true } else { false } } >= 1)
        #expect(caches.losses == 0)
    }
}
