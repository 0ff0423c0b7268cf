import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Synchronization
import Testing

/// A read of several keys of one slot while the slot's keys are half moved to another master:
/// the source answers `TRYAGAIN` (it holds some of the keys, not all), and the store sends the
/// read again after a short wait, within the call's budget. The waits go through the store's
/// pause hook, which moves the rest of the keys (a resharding that goes on) or moves an injected
/// clock (a resharding that never ends): nothing is timed.
@Suite(.enabled(if: LocalRedisCluster.runs, "redis-server or redis-cli is not on the PATH"), .serialized)
struct RedisClusterTryAgainTests {
    /// Three keys of one slot (a hash tag), stored; then the slot migrating from its master to
    /// another, and the first key alone moved there.
    struct HalfMoved {
        let keys = ["{half}a", "{half}b", "{half}c"]
        let slot = HashSlot.slot(of: "{half}")
        let source: Int
        let target: Int

        init(_ cluster: LocalRedisCluster, _ store: RedisClusterStore) throws {
            let setup = RemoteTimeouts(connect: 60, command: 60)
            for key in keys { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: setup) }
            let source = try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0]))
            let target = try #require(cluster.ports.first { $0 != source })
            (self.source, self.target) = (source, target)
            try cluster.beginMigrating(slot, from: source, to: target)
            let moved = try cluster.run(source, arguments: ["MIGRATE", "127.0.0.1", String(target), "", "0", "60000", "KEYS", keys[0]])
            #expect(moved == "OK")
            #expect(try cluster.keyCount(source) == 2)
            #expect(try cluster.keyCount(target) == 1)
        }
    }

    @Test func aReadOfAHalfMovedSlotReturnsTheValuesOnceTheKeysAreOnOneNode() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: [cluster.addresses[0]])
        let half = try HalfMoved(cluster, store)
        // The first wait is when the resharding moves the rest of the slot's keys.
        let moveTheRest = cluster.job(
            half.source, arguments: ["MIGRATE", "127.0.0.1", String(half.target), "", "0", "60000", "KEYS"] + half.keys.dropFirst())
        let pauses = Mutex<[Double]>([])
        let moved = Mutex<String?>(nil)
        store.hooks.withLock { hooks in
            hooks.pause = { seconds in
                let first = pauses.withLock { pauses in
                    pauses.append(seconds)
                    return pauses.count == 1
                }
                if first { moved.withLock { $0 = (try? moveTheRest()) ?? "failed" } }
            }
        }

        let values = try store.values(forKeys: half.keys + ["elsewhere"], timeouts: RemoteTimeouts(connect: 60, command: 60))
        #expect(values.map { $0.map { String(decoding: $0.data, as: UTF8.self) } } == half.keys.map { Optional($0) } + [nil])
        #expect(moved.withLock { $0 } == "OK")
        // One TRYAGAIN from the source, one wait of 5 ms, then the source (holding none of the
        // keys now) answers ASK and the target serves them all.
        #expect(pauses.withLock { $0 } == [RedisClusterStore.firstTryAgainPause])
        #expect(RedisClusterStore.firstTryAgainPause == 0.005)
        #expect(try cluster.errors(half.source, "TRYAGAIN") == 1)
        #expect(try cluster.errors(half.source, "ASK") == 1)
        #expect(try cluster.calls(half.target, command: "asking") == 1)
    }

    @Test func aReadOfASlotThatStaysHalfMovedFailsWhenTheBudgetEnds() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: [cluster.addresses[0]])
        let half = try HalfMoved(cluster, store)
        // Each wait moves the injected clock on by its length, and nothing else happens.
        let clock = RedisClusterBudgetTests.TestClock()
        let pauses = Mutex<[Double]>([])
        store.hooks.withLock { hooks in
            hooks.clock = { clock.read() }
            hooks.pause = { seconds in
                pauses.withLock { $0.append(seconds) }
                clock.advance(by: seconds)
            }
        }

        var error: CacheError?
        do {
            _ = try store.values(forKeys: half.keys, timeouts: RemoteTimeouts(connect: 60, command: 1))
        } catch let caught {
            error = caught
        }
        #expect(error?.code == .remoteFailure)
        #expect(error?.message.contains("TRYAGAIN") == true, "\(String(describing: error))")
        // Waits of 5 ms doubling up to 100 ms, while what is left of the 1 s budget covers the
        // next: 5 + 10 + 20 + 40 + 80 ms, then eight of 100 ms (45 ms left); one try after each.
        let waited = pauses.withLock { $0 }
        #expect(waited == [0.005, 0.01, 0.02, 0.04, 0.08] + Array(repeating: 0.1, count: 8))
        #expect(RedisClusterStore.longestTryAgainPause == 0.1)
        #expect(try cluster.errors(half.source, "TRYAGAIN") == 1 + waited.count)
        #expect(try cluster.calls(half.target, command: "mget") == 0)
    }
}
