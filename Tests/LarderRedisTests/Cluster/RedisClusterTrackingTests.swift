import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Synchronization
import Testing

/// `RemoteTierOptions.invalidation = .tracking` on a `RedisClusterStore`: a tracking connection
/// per master, following the masters through a failover, against a Redis Cluster each test
/// starts on loopback.
@Suite(.enabled(if: LocalRedisCluster.runs, "redis-server or redis-cli is not on the PATH"), .serialized)
struct RedisClusterTrackingTests {
    /// Two caches on one cluster, each through a store of its own: `a` with pub/sub, `b` with
    /// tracking, which does not subscribe to `a`'s invalidations, so only tracking can drop its
    /// copies. `b` tracks every master when this returns.
    struct Caches {
        let a: HybridCache
        let b: HybridCache
        let eventsB = EventLog()
        let namespace = uniqueNamespace("cluster-tracking")
        let directories = (TemporaryDirectory(), TemporaryDirectory())

        init(seedsA: [String], seedsB: [String]) throws {
            let eventsB = eventsB
            a = try HybridCache(
                options: redisCacheOptions(directories.0.url, store: try RedisClusterStore(seeds: seedsA), namespace: namespace))
            b = try HybridCache(
                options: redisCacheOptions(
                    directories.1.url, store: try RedisClusterStore(seeds: seedsB), namespace: namespace, events: eventsB.handler
                ) {
                    $0.invalidation = .tracking
                    $0.breakerCooldown = 0.2
                })
            waitUntil("b tracks") { eventsB.subscribed == 1 }
        }

        func heard(_ key: String) -> Int { eventsB.count { if case .invalidated(.key(key)) = $0 { true } else { false } } }
        var losses: Int { eventsB.count { if case .subscriptionLost = $0 { true } else { false } } }
        var restorations: Int { eventsB.count { if case .subscriptionRestored = $0 { true } else { false } } }

        /// Whether `b` holds no copy of `key`, in memory or on disk.
        func bHoldsNoCopy(of key: String) -> Bool { (try? b.value(forKey: key, from: [.memory, .disk])) == .some(nil) }

        func close() {
            a.close()
            b.close()
            directories.0.remove()
            directories.1.remove()
        }
    }

    /// How many connections of the node at `port` turned tracking on with their last command.
    func trackingClients(_ cluster: LocalRedisCluster, _ port: Int) throws -> Int {
        try cluster.run(port, "CLIENT", "LIST").split(separator: "\n").filter { $0.contains("cmd=client|tracking") }.count
    }

    @Test func aWriteByAInvalidatesBsCopiesOnEveryMasterThroughTracking() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let caches = try Caches(seedsA: [cluster.addresses[0]], seedsB: [cluster.addresses[2]])
        defer { caches.close() }
        // One tracking connection on each master, b's.
        #expect(try cluster.ports.map { try trackingClients(cluster, $0) } == [1, 1, 1])
        // Enough keys that every master holds some whatever the namespace (some master gets
        // none of 40 with odds below one in a million).
        let keys = (0 ..< 40).map { "user/\($0)" }
        for key in keys { try caches.a.store(Data("v1:\(key)".utf8), forKey: key) }
        #expect(try cluster.ports.allSatisfy { try cluster.keyCount($0) > 0 })
        // The reports of a's first stores come first, so that they do not drop the copies b reads next.
        waitUntil("b hears of every v1") { keys.allSatisfy { caches.heard($0) >= 1 } }
        for key in keys { #expect(try caches.b.value(forKey: key) == Data("v1:\(key)".utf8)) }
        caches.b.flushRemoteWrites()
        for key in keys {
            #expect(try caches.b.value(forKey: key, from: [.memory]) == Data("v1:\(key)".utf8))
            #expect(try caches.b.value(forKey: key, from: [.disk]) == Data("v1:\(key)".utf8))
        }
        // a replaces each value: whichever master serves it reports the change, and b's copies go.
        for key in keys { try caches.a.store(Data("v2:\(key)".utf8), forKey: key) }
        waitUntil("b drops every copy") { keys.allSatisfy(caches.bHoldsNoCopy(of:)) }
        for key in keys {
            #expect(caches.heard(key) >= 2)
            #expect(try caches.b.value(forKey: key) == Data("v2:\(key)".utf8))
        }
        #expect(caches.losses == 0)
    }

    @Test func aFailedOverMasterLeavesBNoStaleCopyAndItsReplicaIsTracked() throws {
        let cluster = try LocalRedisCluster(masters: 3, replicasEach: 1)
        defer { cluster.stop() }
        let caches = try Caches(seedsA: cluster.addresses, seedsB: cluster.addresses)
        defer { caches.close() }
        let key = "k"
        let victim = try #require(
            try cluster.masterPort(ofSlot: HashSlot.slot(of: caches.namespace + ":v:" + key), askedPort: cluster.ports[0]))
        // A key on another master: b cannot tell which master a copy came from, so that copy
        // goes at the loss too.
        let other = try #require(
            (0 ..< 100).map { "other/\($0)" }.first { candidate in
                (try? cluster.masterPort(ofSlot: HashSlot.slot(of: caches.namespace + ":v:" + candidate), askedPort: cluster.ports[0]))
                    != victim
            })
        for shared in [key, other] {
            try caches.a.store(Data("v1".utf8), forKey: shared)
            waitUntil("b hears of v1") { caches.heard(shared) >= 1 }
            #expect(try caches.b.value(forKey: shared) == Data("v1".utf8))
        }
        caches.b.flushRemoteWrites()
        for shared in [key, other] {
            #expect(try caches.b.value(forKey: shared, from: [.memory]) == Data("v1".utf8))
            #expect(try caches.b.value(forKey: shared, from: [.disk]) == Data("v1".utf8))
        }
        // Replication is asynchronous: the replicas hold v1 before a master goes.
        waitUntil("the replicas hold v1") { cluster.ports.map { (try? cluster.keyCount($0)) ?? 0 }.reduce(0, +) == 4 }

        cluster.killNode(victim)
        try cluster.waitUntilHealthy()
        let survivor = try #require(cluster.ports.first { $0 != victim })
        let promoted = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: caches.namespace + ":v:" + key), askedPort: survivor))
        #expect(promoted != victim)
        // The loss is noticed, and b's copy, which it can no longer prove fresh, went with it.
        waitUntil("b notices the loss") { caches.losses >= 1 }
        #expect(caches.bHoldsNoCopy(of: key))
        #expect(caches.bHoldsNoCopy(of: other))
        // a replaces the value on the promoted master; b never serves v1 again, and tracks the
        // promoted master once its map names it.
        try caches.a.store(Data("v2".utf8), forKey: key)
        waitUntil("b tracks again") { caches.restorations >= 1 }
        #expect(try trackingClients(cluster, promoted) == 1)
        waitUntil("b reads v2") { (try? caches.b.value(forKey: key)) == Data("v2".utf8) }
        // b keeps a copy again (a late report of v2 may drop one), and a change on the
        // promoted master drops it.
        waitUntil("b keeps a copy of v2") {
            _ = try? caches.b.value(forKey: key)
            caches.b.flushRemoteWrites()
            return (try? caches.b.value(forKey: key, from: [.memory])) == Data("v2".utf8)
        }
        try caches.a.store(Data("v3".utf8), forKey: key)
        waitUntil("b drops its copy of v2") { caches.bHoldsNoCopy(of: key) }
        #expect(try caches.b.value(forKey: key) == Data("v3".utf8))
    }
}
