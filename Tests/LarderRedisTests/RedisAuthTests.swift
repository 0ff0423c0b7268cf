import Foundation
import Larder
import LarderTestSupport
import Testing

@testable import LarderRedis

/// `AUTH` (a password, a user and password) and `SELECT`, against a `redis-server` of the
/// suite's own that asks for a password, so that the shared test server is never changed.
@Suite(.enabled(if: TestRedis.runs, "no Redis server: set LARDER_TEST_REDIS=host:port (.ci/run starts one)"))
struct RedisAuthTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    /// A private server that wants `password` from the default user and knows the user `alice`.
    func securedServer() throws -> PrivateRedisServer? {
        guard let executable = PrivateRedisServer.executable else {
            Issue.record("redis-server is not on the PATH: the AUTH tests need their own server")
            return nil
        }
        let server = try PrivateRedisServer(executable: executable)
        let open = try RedisRemoteStore(host: "127.0.0.1", port: server.port)
        try open.command(["ACL", "SETUSER", "alice", "on", ">wonderland", "~*", "&*", "+@all"], timeouts: timeouts)
        try open.command(["CONFIG", "SET", "requirepass", "s3cret"], timeouts: timeouts)
        return server
    }

    @Test func aPasswordOrAUserAndPasswordAuthenticate() throws {
        guard let server = try securedServer() else { return }
        defer { server.stop() }
        // No AUTH, a wrong password, a wrong user: refused, and the error never carries the secret.
        #expect(throws: CacheError.self) { try RedisRemoteStore(host: "127.0.0.1", port: server.port).ping(timeouts: timeouts) }
        do {
            try RedisRemoteStore(host: "127.0.0.1", port: server.port, password: "guess").ping(timeouts: timeouts)
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.message.contains("refused AUTH"))
            #expect(!error.message.contains("guess"))
        }
        #expect(throws: CacheError.self) {
            try RedisRemoteStore(host: "127.0.0.1", port: server.port, username: "bob", password: "wonderland").ping(timeouts: timeouts)
        }
        try RedisRemoteStore(host: "127.0.0.1", port: server.port, password: "s3cret").ping(timeouts: timeouts)
        try RedisRemoteStore(host: "127.0.0.1", port: server.port, username: "alice", password: "wonderland").ping(timeouts: timeouts)
    }

    @Test func aDatabaseKeepsItsValuesApart() throws {
        guard let server = try securedServer() else { return }
        defer { server.stop() }
        let zero = try RedisRemoteStore(host: "127.0.0.1", port: server.port, password: "s3cret")
        let three = try RedisRemoteStore(address: server.address, password: "s3cret", database: 3)
        #expect(three.database == 3)
        #expect(try three.store(Data("in 3".utf8), forKey: "k", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try zero.values(forKeys: ["k"], timeouts: timeouts) == [nil])
        #expect(try three.values(forKeys: ["k"], timeouts: timeouts).first??.data == Data("in 3".utf8))
        // No such database: every call fails, as if the server were down.
        #expect(throws: CacheError.self) {
            try RedisRemoteStore(host: "127.0.0.1", port: server.port, password: "s3cret", database: 4096).ping(timeouts: timeouts)
        }
    }

    @Test func twoCachesShareValuesAndInvalidationsThroughAnAuthenticatedStore() throws {
        guard let server = try securedServer() else { return }
        defer { server.stop() }
        let store = try RedisRemoteStore(host: "127.0.0.1", port: server.port, username: "alice", password: "wonderland", database: 2)
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let events = EventLog()
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: store, namespace: "auth"))
        let b = try HybridCache(options: redisCacheOptions(dirB.url, store: store, namespace: "auth", events: events.handler))
        defer {
            a.close()
            b.close()
        }
        // The subscription authenticated too: it listens and receives a's invalidations.
        waitUntil("b's subscription listens") { events.subscribed == 1 }
        try a.store(Data("v".utf8), forKey: "k")
        waitUntil("b received a's invalidation") { b.statistics.remote?.invalidationsReceived == 1 }
        #expect(try b.value(forKey: "k") == Data("v".utf8))
        #expect(b.statistics.remote?.failures == 0)
    }
}
