#if os(Linux)
import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Testing

/// `RedisClusterStore` over TLS: a cluster whose nodes listen on TLS ports only and speak TLS to
/// each other and to their replicas, with certificates made at test time.
@Suite(
    .enabled(if: LocalRedisCluster.runs && TLSTestEnvironment.runs, "redis-server, redis-cli or openssl is missing"), .serialized)
struct RedisClusterTLSTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    /// The options that make the nodes show the certificates' server certificate and `redis-cli`
    /// trust their CA. The nodes show the client certificate to each other: the cluster bus
    /// always asks for one.
    static func tlsArguments(_ certificates: TestCertificates) -> LocalRedisCluster.TLSArguments {
        LocalRedisCluster.TLSArguments(
            server: [
                "--tls-cert-file", certificates.serverCertificate.path, "--tls-key-file", certificates.serverKey.path,
                "--tls-client-cert-file", certificates.clientCertificate.path, "--tls-client-key-file", certificates.clientKey.path,
                "--tls-ca-cert-file", certificates.authority.path, "--tls-auth-clients", "no",
            ],
            cli: ["--tls", "--cacert", certificates.authority.path])
    }

    @Test func valuesStoredOverTLSReadBackFromEveryMaster() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let cluster = try LocalRedisCluster(tls: Self.tlsArguments(certificates))
        defer { cluster.stop() }
        // One seed: the other masters are learned from the map, and reached over TLS too.
        let store = try RedisClusterStore(
            seeds: [cluster.addresses[0]], tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        let keys = (0 ..< 40).map { "tls:\($0)" }
        for key in keys { #expect(try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts)) }
        let counts = try cluster.ports.map { try cluster.keyCount($0) }
        #expect(counts.allSatisfy { $0 > 0 }, "keys on each master: \(counts)")
        #expect(try store.values(forKeys: keys, timeouts: timeouts).map { $0?.data } == keys.map { Data($0.utf8) })
        try store.ping(timeouts: timeouts)

        // A store that does not trust the nodes' CA reaches none of them.
        let otherCertificates = try TestCertificates()
        defer { otherCertificates.remove() }
        let distrusting = try RedisClusterStore(
            seeds: [cluster.addresses[0]], tls: RedisTLSOptions(certificateAuthorityFile: otherCertificates.authority))
        #expect(throws: CacheError.self) { try distrusting.value(forKey: keys[0], timeouts: timeouts) }
    }

    @Test func aFailoverOverTLSKeepsEveryValue() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let cluster = try LocalRedisCluster(masters: 3, replicasEach: 1, tls: Self.tlsArguments(certificates))
        defer { cluster.stop() }
        let store = try RedisClusterStore(
            seeds: [cluster.addresses[0]], tls: RedisTLSOptions(certificateAuthorityFile: certificates.authority))
        let keys = (0 ..< 30).map { "tls-failover:\($0)" }
        for key in keys { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts) }
        waitUntil("the replicas hold every key") {
            cluster.ports.map { (try? cluster.keyCount($0)) ?? -1 }.reduce(0, +) == 2 * keys.count
        }
        let victim = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: keys[0]), askedPort: cluster.ports[1]))
        cluster.killNode(victim)
        try cluster.waitUntilHealthy()
        let survivor = try #require(cluster.ports.first { $0 != victim })
        let promoted = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: keys[0]), askedPort: survivor))
        #expect(promoted != victim)
        // The promoted replica is reached over TLS, and no call fails for the old map.
        for key in keys { #expect(try store.value(forKey: key, timeouts: timeouts)?.data == Data(key.utf8), "\(key)") }
        #expect(try store.store(Data("new".utf8), forKey: keys[0], expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try cluster.run(promoted, "GET", keys[0]) == "new")
    }
}
#endif
