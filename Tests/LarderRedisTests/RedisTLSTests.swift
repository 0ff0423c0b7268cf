#if os(Linux)
import Foundation
import Larder
import LarderTestSupport
import Synchronization
import Testing

@testable import LarderRedis

/// `RedisRemoteStore` over TLS, against `redis-server --tls-port` processes of the suite's own,
/// with certificates made by `openssl` for each test. Skipped when `openssl` or a TLS-capable
/// `redis-server` is missing, unless `LARDER_REQUIRE_REDIS=1` (then they fail).
@Suite(.enabled(if: TLSTestEnvironment.runs, "openssl or a redis-server built with TLS is missing (the log line says which)"))
struct RedisTLSTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    @Test func valuesRemovalsAndInvalidationsGoOverTLS() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates)
        // By address (checked against the certificate's IP address) and by name (checked against
        // its DNS name, and sent as SNI).
        let byAddress = try RedisRemoteStore(
            host: "127.0.0.1", port: server.port, tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        let byName = try RedisRemoteStore(
            host: "127.0.0.1", port: server.port,
            tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority, serverName: "localhost"))
        #expect(try byAddress.store(Data("over tls".utf8), forKey: "k", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try byName.value(forKey: "k", timeouts: timeouts)?.data == Data("over tls".utf8))
        #expect(try byName.values(forKeys: ["k", "absent"], timeouts: timeouts).map { $0?.data } == [Data("over tls".utf8), nil])
        try byName.remove(forKeys: ["k"], timeouts: timeouts)
        #expect(try byAddress.values(forKeys: ["k"], timeouts: timeouts) == [nil])
        // A value larger than one TLS record (16 KiB) in both directions.
        let large = Data((0 ..< (1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
        #expect(try byAddress.store(large, forKey: "large", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try byName.value(forKey: "large", timeouts: timeouts)?.data == large)

        // Two caches share a value and an invalidation (PUBLISH, and SUBSCRIBE on its own TLS connection).
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let events = EventLog()
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: byAddress, namespace: "tls"))
        let b = try HybridCache(options: redisCacheOptions(dirB.url, store: byName, namespace: "tls", events: events.handler))
        defer {
            a.close()
            b.close()
        }
        waitUntil("b's subscription listens over TLS") { events.subscribed == 1 }
        try a.store(Data("v1".utf8), forKey: "shared")
        waitUntil("b received a's invalidation") { b.statistics.remote?.invalidationsReceived == 1 }
        #expect(try b.value(forKey: "shared") == Data("v1".utf8))
        #expect(b.statistics.remote?.hits == 1)
        try a.store(Data("v2".utf8), forKey: "shared")
        waitUntil("b received a's second invalidation") { b.statistics.remote?.invalidationsReceived == 2 }
        #expect(try b.value(forKey: "shared") == Data("v2".utf8))
        #expect(a.statistics.remote?.failures == 0)
        #expect(b.statistics.remote?.failures == 0)
    }

    @Test func aServerSignedByAnotherAuthorityIsRefusedAndServesNothing() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates)
        let trusted = try RedisRemoteStore(
            host: "127.0.0.1", port: server.port, tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        let untrusting = try RedisRemoteStore(
            host: "127.0.0.1", port: server.port, tls: RedisTLSOptions(certificateAuthorityFile: certificates.otherAuthority))
        #expect(try trusted.store(Data("secret".utf8), forKey: "k", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts))
        do {
            _ = try untrusting.values(forKeys: ["k"], timeouts: timeouts)
            Issue.record("a server signed by an untrusted authority was read")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.message.contains("the server's TLS certificate was refused"))
        }
        // Through the tier: a miss and a counted failure, never the value.
        try verifyTierMisses(store: untrusting, trusted: trusted)
    }

    @Test(arguments: ["redis.example", "127.0.0.2"])
    func aServerNameTheCertificateDoesNotCarryIsRefused(_ name: String) throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates)
        let store = try RedisRemoteStore(
            host: "127.0.0.1", port: server.port,
            tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority, serverName: name))
        do {
            try store.ping(timeouts: timeouts)
            Issue.record("a certificate without \(name) was accepted for it")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.message.contains("the server's TLS certificate was refused"))
            #expect(error.message.contains("mismatch"))
        }
        // The same certificate by a name it carries: accepted.
        try RedisRemoteStore(
            host: "127.0.0.1", port: server.port,
            tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority, serverName: "localhost")
        ).ping(timeouts: timeouts)
    }

    @Test func skippingVerificationIsExplicitAndConnectsToAnUntrustedServer() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates)
        var options = RedisTLSOptions(certificateAuthorityFile: certificates.otherAuthority, serverName: "redis.example")
        #expect(options.insecurelySkipsServerVerification == false)
        options.insecurelySkipsServerVerification = true
        try RedisRemoteStore(host: "127.0.0.1", port: server.port, tls: options).ping(timeouts: timeouts)
    }

    @Test func aServerThatAuthenticatesClientsNeedsTheClientCertificate() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates, authenticatesClients: true)
        let anonymous = try RedisRemoteStore(
            host: "127.0.0.1", port: server.port, tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        #expect(throws: CacheError.self) { try anonymous.ping(timeouts: timeouts) }
        #expect(throws: CacheError.self) {
            try anonymous.store(Data("x".utf8), forKey: "k", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts)
        }
        let identified = try RedisRemoteStore(
            host: "127.0.0.1", port: server.port,
            tls: RedisTLSOptions(
                certificateAuthorityFile: certificates.authority, clientCertificateFile: certificates.clientCertificate,
                clientKeyFile: certificates.clientKey))
        #expect(try identified.store(Data("x".utf8), forKey: "k", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try identified.value(forKey: "k", timeouts: timeouts)?.data == Data("x".utf8))
        // The anonymous store's failed calls stored nothing.
        #expect(try identified.values(forKeys: ["k", "k2"], timeouts: timeouts).map { $0?.data } == [Data("x".utf8), nil])
    }

    @Test func aCommandWithoutAnAnswerOverTLSTimesOut() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates)
        let context = try TLSContext(RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        let connection = try RedisConnection.open(
            RedisServer(host: "127.0.0.1", port: server.port, username: nil, password: nil, database: 0, tls: context), timeout: 5)
        #expect(try connection.command(RedisArguments(["PING"])) == .status("PONG"))
        server.pause()
        defer { server.resume() }
        try connection.setCommandTimeout(0.1)
        do throws(CacheError) {
            _ = try connection.command(RedisArguments(["PING"]))
            Issue.record("a command to a stopped server returned")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.message == "reading a reply timed out")
        }
        #expect(connection.isBroken)
    }

    @Test func shuttingATLSConnectionDownWakesABlockedReader() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates)
        let context = try TLSContext(RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        let connection = try RedisConnection.open(
            RedisServer(host: "127.0.0.1", port: server.port, username: nil, password: nil, database: 0, tls: context), timeout: 5)
        try connection.setCommandTimeout(0)  // waits for ever, as a subscription does
        let outcome = Mutex<CacheError?>(nil)
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            do throws(CacheError) {
                _ = try connection.readReply()
            } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        reader.start()
        connection.shutdownSocket()
        // A guard against hanging the suite, not a timing assertion.
        #expect(done.wait(timeout: .now() + 120) == .success)
        #expect(outcome.withLock { $0?.code } == .remoteFailure)
        #expect(connection.isBroken)
    }

    @Test func writingToAServerThatWentAwayFailsWithoutKillingTheProcess() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try PrivateTLSRedisServer(certificates)
        let context = try TLSContext(RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        let connection = try RedisConnection.open(
            RedisServer(host: "127.0.0.1", port: server.port, username: nil, password: nil, database: 0, tls: context), timeout: 5)
        try connection.setCommandTimeout(5)
        #expect(try connection.command(RedisArguments(["PING"])) == .status("PONG"))
        server.stop()
        // The first write may still land in the socket's buffer; the peer's reset then fails a
        // later one with EPIPE, which without MSG_NOSIGNAL would raise SIGPIPE and end the process.
        let large = RedisArguments(["ECHO", String(repeating: "x", count: 1 << 16)])
        var failure: CacheError?
        for _ in 0 ..< 20 where failure == nil {
            do throws(CacheError) {
                _ = try connection.pipeline([large, large])
            } catch {
                failure = error
            }
        }
        #expect(failure?.code == .remoteFailure)
        #expect(connection.isBroken)
    }

    @Test func aClientKeyThatIsNotTheCertificatesIsRefusedNamingIt() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let options = RedisTLSOptions(clientCertificateFile: certificates.clientCertificate, clientKeyFile: certificates.serverKey)
        do {
            _ = try RedisRemoteStore(tls: options)
            Issue.record("a key of another certificate was accepted")
        } catch {
            #expect(error.code == .invalidOptions)
            #expect(error.message.contains(certificates.serverKey.path))
        }
    }

    /// A cache on `store` misses a value `trusted` holds, and counts the failure.
    private func verifyTierMisses(store: RedisRemoteStore, trusted: RedisRemoteStore) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let namespace = "refused"
        let writerDirectory = TemporaryDirectory()
        defer { writerDirectory.remove() }
        let writer = try HybridCache(options: redisCacheOptions(writerDirectory.url, store: trusted, namespace: namespace))
        defer { writer.close() }
        try writer.store(Data("secret".utf8), forKey: "k")
        #expect(try writer.value(forKey: "k", from: [.remote]) == Data("secret".utf8))
        let reader = try HybridCache(options: redisCacheOptions(directory.url, store: store, namespace: namespace))
        defer { reader.close() }
        #expect(try reader.value(forKey: "k") == nil)
        #expect((reader.statistics.remote?.failures ?? 0) > 0)
        #expect(reader.statistics.remote?.hits == 0)
    }
}

/// TLS settings that are wrong before any server is reached: refused when the store is created,
/// naming the file or the setting. Needs neither `openssl` nor a server.
@Suite struct RedisTLSOptionsTests {
    @Test func missingOrUnusableFilesAreRefusedNamingTheFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let missing = directory.url.appendingPathComponent("no-such-ca.crt")
        let garbage = directory.url.appendingPathComponent("garbage.pem")
        try Data("not a certificate\n".utf8).write(to: garbage)
        let cases: [(RedisTLSOptions, String)] = [
            (RedisTLSOptions(certificateAuthorityFile: missing), missing.path),
            (RedisTLSOptions(certificateAuthorityFile: garbage), garbage.path),
            (RedisTLSOptions(clientCertificateFile: garbage, clientKeyFile: missing), missing.path),
            (RedisTLSOptions(clientCertificateFile: garbage, clientKeyFile: garbage), garbage.path),
            (RedisTLSOptions(clientCertificateFile: garbage), garbage.path),
            (RedisTLSOptions(clientKeyFile: garbage), garbage.path),
            (RedisTLSOptions(serverName: ""), "server name is empty"),
        ]
        for (options, named) in cases {
            do {
                _ = try RedisRemoteStore(host: "127.0.0.1", port: 6379, tls: options)
                Issue.record("\(options) was accepted")
            } catch {
                #expect(error.code == .invalidOptions)
                #expect(error.message.contains(named), "\(error.message)")
            }
        }
        // The system's roots and no client certificate: nothing to refuse.
        let store = try RedisRemoteStore(host: "127.0.0.1", port: 6379, tls: RedisTLSOptions())
        #expect(store.tls == RedisTLSOptions())
        #expect(try RedisRemoteStore(address: "127.0.0.1:6379").tls == nil)
    }

    @Test func theHandshakeKeepsTheConnectTimeout() throws {
        // A server that accepts the connection and never answers the handshake.
        let scripted = try ScriptedServer([])
        defer { scripted.stop() }
        let context = try TLSContext(RedisTLSOptions())
        do throws(CacheError) {
            _ = try RedisConnection.open(
                RedisServer(host: "127.0.0.1", port: scripted.port, username: nil, password: nil, database: 0, tls: context), timeout: 0.2)
            Issue.record("a handshake without an answer returned")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.message.contains("the TLS handshake timed out"))
        }
        #expect(scripted.accepted == 1)
    }

    @Test func aHostNameIsSentAsTheServerNameButAnAddressIsNot() throws {
        // The ClientHello travels in the clear: the name it indicates (SNI) can be read in it.
        for (name, sent) in [("redis.example", true), ("127.0.0.1", false)] {
            let scripted = try ScriptedServer([])
            defer { scripted.stop() }
            let context = try TLSContext(RedisTLSOptions(serverName: name))
            #expect(throws: CacheError.self) {
                try RedisConnection.open(
                    RedisServer(host: "127.0.0.1", port: scripted.port, username: nil, password: nil, database: 0, tls: context),
                    timeout: 0.2)
            }
            // Far more than a ClientHello's first bytes: the handshake starts with it.
            waitUntil("the server received the ClientHello") { scripted.received(0).count > 100 }
            let hello = scripted.received(0)
            #expect(hello.first == 0x16)  // a TLS handshake record
            #expect(contains(hello, Array(name.utf8)) == sent, "\(name)")
        }
    }

    private func contains(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
        guard bytes.count >= part.count else { return false }
        return (0 ... bytes.count - part.count).contains { bytes[$0 ..< $0 + part.count].elementsEqual(part) }
    }
}
#endif
