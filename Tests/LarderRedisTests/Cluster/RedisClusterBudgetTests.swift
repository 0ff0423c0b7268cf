import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Synchronization
import Testing

/// Every call through `RedisClusterStore` spends one budget, the command timeout, whatever it
/// sends: asserted through what the store sends (each batch carries its call's deadline) and an
/// injected clock, never by timing a call.
@Suite(.enabled(if: LocalRedisCluster.runs, "redis-server or redis-cli is not on the PATH"), .serialized)
struct RedisClusterBudgetTests {
    /// What a store sent, batch by batch.
    final class SentLog: Sendable {
        let batches = Mutex<[ClusterBudget.Sent]>([])

        func record(_ sent: ClusterBudget.Sent) { batches.withLock { $0.append(sent) } }

        /// The batches sent since the last call, emptied.
        func take() -> [ClusterBudget.Sent] {
            batches.withLock { batches in
                defer { batches.removeAll() }
                return batches
            }
        }
    }

    /// A clock that moves only when told.
    final class TestClock: Sendable {
        let now = Mutex<Double>(1_000)
        func read() -> Double { now.withLock { $0 } }
        func advance(by seconds: Double) { now.withLock { $0 += seconds } }
    }

    /// Runs `call` and returns what it sent, after checking that every batch carried one
    /// deadline: the command timeout after a clock reading taken within the call.
    func sentByOneCall(
        _ store: RedisClusterStore, _ log: SentLog, budget: Double, sourceLocation: SourceLocation = #_sourceLocation,
        _ call: () throws -> Void
    ) -> (sent: [ClusterBudget.Sent], error: (any Error)?) {
        _ = log.take()
        let before = Socket.monotonicSeconds()
        var failure: (any Error)?
        do { try call() } catch { failure = error }
        let after = Socket.monotonicSeconds()
        let sent = log.take()
        let deadlines = Set(sent.map(\.deadline))
        #expect(deadlines.count <= 1, "one call, one deadline: \(sent)", sourceLocation: sourceLocation)
        if let deadline = deadlines.first {
            #expect(
                before + budget <= deadline && deadline <= after + budget, "the deadline is the call's budget",
                sourceLocation: sourceLocation)
        }
        return (sent, failure)
    }

    @Test func aHungMasterCostsEachCallOneBudgetAndSparesTheOtherMasters() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: cluster.addresses)
        let log = SentLog()
        store.hooks.withLock { $0.observer = { log.record($0) } }
        let timeouts = RemoteTimeouts(connect: 5, command: 1)
        let keys = (0 ..< 30).map { "hung:\($0)" }
        // The keys go in with room for a loaded machine: the first call waits for the slot map.
        let setup = RemoteTimeouts(connect: 60, command: 60)
        for key in keys { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: setup) }
        let hung = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: keys[0]), askedPort: cluster.ports[0]))
        let hungAddress = "127.0.0.1:\(hung)"
        let elsewhere = try #require(
            try keys.first { try cluster.masterPort(ofSlot: HashSlot.slot(of: $0), askedPort: cluster.ports[0]) != hung })

        cluster.pauseNode(hung)
        // A store and a removal on the hung master: each sends its command once, to that node,
        // under one deadline, and fails; the node is still stopped when they return.
        let stored = sentByOneCall(store, log, budget: timeouts.command) {
            _ = try store.store(Data("new".utf8), forKey: keys[0], expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts)
        }
        #expect(stored.error != nil)
        #expect(stored.sent.map(\.address) == [hungAddress])
        // The map is stale now (a node failed): it is reloaded in the background, from the other
        // masters first, while this call waits within its budget.
        let removed = sentByOneCall(store, log, budget: timeouts.command) { try store.remove(forKeys: [keys[0]], timeouts: timeouts) }
        #expect(removed.error != nil)
        #expect(removed.sent.filter { $0.address == hungAddress }.count <= 1)
        #expect(removed.sent.allSatisfy { $0.commands == ["UNLINK"] })
        // A key of another master is read while that one hangs.
        let read = sentByOneCall(store, log, budget: timeouts.command) {
            let value = try store.value(forKey: elsewhere, timeouts: timeouts)
            #expect(value?.data == Data(elsewhere.utf8))
        }
        #expect(read.error == nil)
        #expect(!read.sent.contains { $0.address == hungAddress })
        cluster.resumeNode(hung)

        // Once it answers again, the next calls reach it.
        waitUntil("the resumed master answers the store") {
            (try? store.store(Data("back".utf8), forKey: keys[0], expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts)) == true
        }
        #expect(try cluster.run(hung, "GET", keys[0]) == "back")
    }

    @Test func aSeedWhoseConnectNeverCompletesCostsACallOnlyItsBudget() throws {
        let listener = try FullListener()
        defer { listener.close() }
        let seed = "127.0.0.1:\(listener.port)"
        let store = try RedisClusterStore(seeds: [seed])
        let timeouts = RemoteTimeouts(connect: 600, command: 0.1)
        // Each call gives up when its budget is spent while the map's load (and its connect)
        // goes on in the background: still under way when the calls return.
        for _ in 0 ..< 2 {
            #expect {
                _ = try store.value(forKey: "k", timeouts: timeouts)
            } throws: { error in
                (error as? CacheError)?.message.contains("slot map was loaded") == true
            }
        }
        let node = try store.node(seed)
        waitUntil("the load's connect is under way") { node.pool.connectsInFlight == 1 }
        #expect(store.state.withLock { $0.refreshing })
        // One load, one connect, whatever the number of calls that waited for them.
        #expect(node.pool.connectsStarted == 1)
        #expect(node.pool.lent == 0)
    }

    @Test func aCallWhoseBudgetIsSpentFollowsNoRedirection() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: [cluster.addresses[0]])
        let clock = TestClock()
        let log = SentLog()
        let spendOnFirstSend = Mutex(false)
        store.hooks.withLock { hooks in
            hooks.clock = { clock.read() }
            hooks.observer = { sent in
                log.record(sent)
                // The first batch, once armed, takes the whole budget on the injected clock.
                if spendOnFirstSend.withLock({ armed in
                    defer { armed = false }
                    return armed
                }) {
                    clock.advance(by: 10)
                }
            }
        }
        let timeouts = RemoteTimeouts(connect: 5, command: 1)
        // An empty slot moves to another master after the store learned the map.
        let key = "redirected-key"
        let slot = HashSlot.slot(of: key)
        #expect(try store.value(forKey: key, timeouts: timeouts) == nil)
        let source = try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0]))
        let target = try #require(cluster.ports.first { $0 != source })
        try cluster.assignSlot(slot, from: source, to: target)
        #expect(try cluster.calls(target, command: "get") == 0)

        _ = log.take()
        spendOnFirstSend.withLock { $0 = true }
        var error: CacheError?
        do { _ = try store.value(forKey: key, timeouts: timeouts) } catch let caught { error = caught }
        // The source answered MOVED after the budget was spent: the target is never asked.
        #expect(error?.code == .remoteFailure)
        #expect(error?.message.contains("spent its command timeout") == true, "\(String(describing: error))")
        #expect(log.take().map(\.address) == ["127.0.0.1:\(source)"])
        #expect(try cluster.errors(source, "MOVED") == 1)
        #expect(try cluster.calls(target, command: "get") == 0)

        // The next call has a budget of its own and reaches the slot's new master.
        #expect(try store.value(forKey: key, timeouts: timeouts) == nil)
        #expect(try cluster.calls(target, command: "get") == 1)
    }

    @Test func aMasterKilledMidRunIsReplacedWithinEachCallsBudget() throws {
        let cluster = try LocalRedisCluster(masters: 3, replicasEach: 1)
        defer { cluster.stop() }
        let store = try RedisClusterStore(seeds: cluster.addresses)
        let log = SentLog()
        store.hooks.withLock { $0.observer = { log.record($0) } }
        let timeouts = RemoteTimeouts(connect: 5, command: 1)
        let keys = (0 ..< 30).map { "killed:\($0)" }
        for key in keys { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts) }
        waitUntil("the replicas hold every key") {
            cluster.ports.map { (try? cluster.keyCount($0)) ?? -1 }.reduce(0, +) == 2 * keys.count
        }
        let victim = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: keys[0]), askedPort: cluster.ports[0]))
        let onVictim = try keys.filter { try cluster.masterPort(ofSlot: HashSlot.slot(of: $0), askedPort: cluster.ports[0]) == victim }

        // Killed while the store holds connections to it: until a replica takes over, calls on
        // its slots fail, each within one budget, and none returns a wrong value.
        cluster.killNode(victim)
        for key in keys {
            let call = sentByOneCall(store, log, budget: timeouts.command) {
                if let value = try store.value(forKey: key, timeouts: timeouts) { #expect(value.data == Data(key.utf8)) }
            }
            #expect(call.sent.filter { $0.address == "127.0.0.1:\(victim)" }.count <= 1)
        }
        try cluster.waitUntilHealthy()
        let survivor = try #require(cluster.ports.first { $0 != victim })
        let promoted = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: keys[0]), askedPort: survivor))
        #expect(promoted != victim)

        // Once promoted, every call succeeds, the first ones after a reload of the map within
        // their own budget: none fails for the store still having the old map.
        for key in onVictim + keys {
            let call = sentByOneCall(store, log, budget: timeouts.command) {
                let value = try store.value(forKey: key, timeouts: timeouts)
                #expect(value?.data == Data(key.utf8), "\(key)")
            }
            #expect(call.error == nil, "\(key): \(String(describing: call.error))")
        }
        #expect(try store.store(Data("new".utf8), forKey: keys[0], expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try cluster.run(promoted, "GET", keys[0]) == "new")
    }
}
