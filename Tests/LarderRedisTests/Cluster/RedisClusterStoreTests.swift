import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Synchronization
import Testing

/// `RedisClusterStore` against a Redis Cluster of three masters each test starts on loopback.
/// Without `redis-server` and `redis-cli` they are skipped; with `LARDER_REQUIRE_REDIS=1` and
/// either missing, they fail.
@Suite(.enabled(if: LocalRedisCluster.runs, "redis-server or redis-cli is not on the PATH"), .serialized)
struct RedisClusterStoreTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    @Test func valuesSpreadOverEveryMasterAndReadBack() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: [cluster.addresses[0]])
        let keys = (0 ..< 60).map { "spread:\($0)" }
        for key in keys { #expect(try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts)) }
        let counts = try cluster.ports.map { try cluster.keyCount($0) }
        #expect(counts.allSatisfy { $0 > 0 }, "keys on each master: \(counts)")
        #expect(counts.reduce(0, +) == keys.count)
        // Each key is on the master its slot says, as the cluster itself computes the slot.
        for key in keys.prefix(10) {
            let slot = try #require(Int(try cluster.run(cluster.ports[0], "CLUSTER", "KEYSLOT", key)))
            #expect(slot == HashSlot.slot(of: key))
            let port = try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0]))
            #expect(try cluster.run(port, "GET", key) == key)
        }
        for key in keys { #expect(try store.value(forKey: key, timeouts: timeouts)?.data == Data(key.utf8)) }
        #expect(try store.store(Data("other".utf8), forKey: keys[0], expiresIn: nil, onlyIfAbsent: true, timeouts: timeouts) == false)
        _ = try store.store(Data("t".utf8), forKey: "touched", expiresIn: 10_000, onlyIfAbsent: false, timeouts: timeouts)
        #expect(try store.touch(forKey: "touched", expiresIn: 60_000, timeouts: timeouts))
        #expect(try store.touch(forKey: "touched", expiresIn: 1_000, timeouts: timeouts) == false)
        try store.ping(timeouts: timeouts)
    }

    @Test func manyKeyReadsAndRemovalsAcrossSlotsKeepTheKeysOrder() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: cluster.addresses)
        var random = SplitMix64(seed: 44)
        let stored = (0 ..< 40).map { "many:\($0)" } + ["{tag}a", "{tag}b", "{tag}c"]
        for key in stored { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts) }
        var asked = stored + (0 ..< 10).map { "missing:\($0)" }
        for index in asked.indices.reversed() { asked.swapAt(index, Int(random.next() % UInt64(index + 1))) }
        let found = try store.values(forKeys: asked, timeouts: timeouts)
        #expect(found.count == asked.count)
        for (key, value) in zip(asked, found) {
            #expect(value?.data == (key.hasPrefix("missing:") ? nil : Data(key.utf8)), "\(key)")
        }
        try store.remove(forKeys: Array(asked.prefix(20)), timeouts: timeouts)
        let after = try store.values(forKeys: asked, timeouts: timeouts)
        for (index, value) in after.enumerated() {
            let key = asked[index]
            #expect(value?.data == (index < 20 || key.hasPrefix("missing:") ? nil : Data(key.utf8)), "\(key)")
        }
        let left = stored.filter { !asked.prefix(20).contains($0) }
        #expect(try store.remove(withPrefix: "many:", timeouts: timeouts) == left.filter { $0.hasPrefix("many:") }.count)
        #expect(try cluster.ports.map { try cluster.keyCount($0) }.reduce(0, +) == left.filter { $0.hasPrefix("{tag}") }.count)
    }

    @Test func aMigratingSlotIsFollowedThroughASKThenMOVED() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: [cluster.addresses[0]])
        let key = "migrating-key"
        let slot = HashSlot.slot(of: key)
        _ = try store.store(Data("v1".utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts)
        let source = try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0]))
        let target = try #require(cluster.ports.first { $0 != source })
        let (sourceID, targetID) = (try cluster.id(source), try cluster.id(target))
        // Redis's own resharding steps: importing on the target, migrating on the source, then the key moves.
        try cluster.run(target, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID)
        try cluster.run(source, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID)
        #expect(try cluster.run(source, "MIGRATE", "127.0.0.1", String(target), "", "0", "5000", "KEYS", key) == "OK")
        #expect(try cluster.keyCount(source) == 0)
        #expect(try cluster.keyCount(target) == 1)

        // The source no longer has the key: it answers ASK, and the store asks the target.
        #expect(try store.value(forKey: key, timeouts: timeouts)?.data == Data("v1".utf8))
        #expect(try store.values(forKeys: [key, "elsewhere"], timeouts: timeouts).first??.data == Data("v1".utf8))
        #expect(try cluster.errors(source, "ASK") == 2)
        #expect(try cluster.calls(target, command: "asking") == 2)

        // The slot is the target's now: the source answers MOVED once, the store reloads its map.
        try cluster.assignSlot(slot, from: source, to: target, alreadyMigrating: true)
        #expect(try store.value(forKey: key, timeouts: timeouts)?.data == Data("v1".utf8))
        #expect(try cluster.errors(source, "MOVED") == 1)
        #expect(try store.store(Data("v2".utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try cluster.errors(source, "MOVED") == 1)
        #expect(try cluster.run(target, "GET", key) == "v2")
    }

    @Test func twoCachesOnTheClusterInvalidateEachOther() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        // Each cache seeds from another node, so their subscriptions and publishes start on different masters.
        let storeA = try RedisClusterStore(seeds: [cluster.addresses[0]])
        let storeB = try RedisClusterStore(seeds: [cluster.addresses[2]])
        let namespace = uniqueNamespace("cluster")
        let (dirA, dirB) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            dirA.remove()
            dirB.remove()
        }
        let (eventsA, eventsB) = (EventLog(), EventLog())
        let a = try HybridCache(options: redisCacheOptions(dirA.url, store: storeA, namespace: namespace, events: eventsA.handler))
        let b = try HybridCache(options: redisCacheOptions(dirB.url, store: storeB, namespace: namespace, events: eventsB.handler))
        defer {
            a.close()
            b.close()
        }
        waitUntil("both subscriptions listen") { eventsA.subscribed == 1 && eventsB.subscribed == 1 }
        // Enough keys that every master holds some whatever the namespace (some master gets none of 40 with odds below one in a million).
        let keys = (0 ..< 40).map { "user/\($0)" }
        for key in keys { try a.store(Data("a:\(key)".utf8), forKey: key) }
        for key in keys { #expect(try b.value(forKey: key) == Data("a:\(key)".utf8)) }
        #expect(try cluster.ports.allSatisfy { try cluster.keyCount($0) > 0 })
        // b replaces each: a's copies go, and a reads b's values.
        for key in keys { try b.store(Data("b:\(key)".utf8), forKey: key) }
        waitUntil("a dropped its copies") { keys.allSatisfy { (try? a.value(forKey: $0, from: [.memory, .disk])) == nil } }
        for key in keys { #expect(try a.value(forKey: key) == Data("b:\(key)".utf8)) }
        // a removes by prefix: b's copies go, and the cluster holds none of the namespace.
        try a.remove(withPrefix: "user/")
        waitUntil("b dropped user/") { (try? b.keys(withPrefix: "user/"))?.isEmpty == true }
        #expect(try storeA.remove(withPrefix: namespace + ":", timeouts: timeouts) == 0)
        #expect((a.statistics.remote?.invalidationsReceived ?? 0) >= 1)
        #expect((b.statistics.remote?.invalidationsReceived ?? 0) >= 1)
    }

    @Test func aKilledMasterIsReplacedByItsReplicaWithoutAWrongValue() throws {
        let cluster = try LocalRedisCluster(masters: 3, replicasEach: 1)
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: cluster.addresses)
        let keys = (0 ..< 30).map { "failover:\($0)" }
        for key in keys { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts) }
        // Replication is asynchronous: wait until every replica holds its master's keys.
        waitUntil("the replicas hold every key") {
            let counts = cluster.ports.map { (try? cluster.keyCount($0)) ?? -1 }
            return counts.reduce(0, +) == 2 * keys.count
        }
        let slot = HashSlot.slot(of: keys[0])
        let victim = try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0]))
        cluster.killNode(victim)
        try cluster.waitUntilHealthy()
        let survivor = try #require(cluster.ports.first { $0 != victim })
        let promoted = try #require(try cluster.masterPort(ofSlot: slot, askedPort: survivor))
        #expect(promoted != victim)

        // A call may fail while the store still has the old map (the node is gone); it never
        // returns a wrong value, and the map is reloaded for the next call.
        var failures = 0
        for key in keys {
            do {
                #expect(try store.value(forKey: key, timeouts: timeouts)?.data == Data(key.utf8), "\(key)")
            } catch {
                failures += 1
                #expect(try store.value(forKey: key, timeouts: timeouts)?.data == Data(key.utf8), "\(key) after \(error)")
            }
        }
        #expect(failures <= 1)
        let found = try store.values(forKeys: keys, timeouts: timeouts)
        #expect(found.map { $0?.data } == keys.map { Data($0.utf8) })
        #expect(try store.store(Data("new".utf8), forKey: keys[0], expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try cluster.run(promoted, "GET", keys[0]) == "new")
    }

    @Test func aSubscriptionWhoseNodeIsKilledListensOnAnotherMaster() throws {
        let cluster = try LocalRedisCluster(masters: 3, replicasEach: 1)
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: cluster.addresses)
        let channel = "larder-cluster-channel"
        let received = Mutex<[RemoteSubscriptionEvent]>([])
        let subscription = store.subscribe(to: channel, timeouts: timeouts) { event in received.withLock { $0.append(event) } }
        defer { subscription.cancel() }
        waitUntil("the subscription listens") { received.withLock { $0.contains(.subscribed(afterReconnect: false)) } }
        // It listens on the channel's slot's master: kill that one.
        let victim = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: channel), askedPort: cluster.ports[0]))
        cluster.killNode(victim)
        try cluster.waitUntilHealthy()
        waitUntil("the subscription listens again") { received.withLock { $0.contains(.subscribed(afterReconnect: true)) } }
        let publisher = try RedisClusterStore(seeds: [try #require(cluster.addresses.first { !$0.hasSuffix(":\(victim)") })])
        waitUntil("a message published after the loss arrives") {
            try? publisher.publish(Data("hello".utf8), to: channel, timeouts: timeouts)
            return received.withLock { $0.contains(.message(Data("hello".utf8))) }
        }
        #expect(received.withLock { $0.contains { if case .lost = $0 { true } else { false } } })
    }
}
