#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Synchronization
import Testing

/// Slots moving to a master added to a running cluster (`redis-cli --cluster add-node`, then
/// Redis's resharding steps by hand), while clients read and write: through `ASK` while a slot
/// migrates and `MOVED` once it moved, and with `.tracking`, the new master tracked.
@Suite(.enabled(if: LocalRedisCluster.runs, "redis-server or redis-cli is not on the PATH"), .serialized)
struct RedisClusterReshardingTests {
    /// What a store sent, batch by batch, per calling thread (a call's batches are sent on its thread).
    final class SentByThread: Sendable {
        private let batches = Mutex<[ObjectIdentifier: [ClusterBudget.Sent]]>([:])

        func record(_ sent: ClusterBudget.Sent) { batches.withLock { $0[Self.thread, default: []].append(sent) } }

        /// The batches this thread sent since its last call, emptied.
        func take() -> [ClusterBudget.Sent] { batches.withLock { $0.removeValue(forKey: Self.thread) ?? [] } }

        private static var thread: ObjectIdentifier { ObjectIdentifier(Thread.current) }
    }

    /// A worker's keys and the last value it wrote under each: it is their only writer.
    struct Worker {
        let index: Int
        let keys: [String]
        var expected: [String: String]
        var random: SplitMix64

        init(_ index: Int) {
            self.index = index
            // Keys of slots of their own, and three sharing a hash tag: one slot, read with one MGET.
            keys = (0 ..< 6).map { "w\(index):\($0)" } + ["{w\(index)}a", "{w\(index)}b", "{w\(index)}c"]
            expected = Dictionary(uniqueKeysWithValues: keys.map { ($0, "\($0)#0") })
            random = SplitMix64(seed: 4_400 + UInt64(index))
        }
    }

    /// Problems the worker threads saw, reported by the test's own thread.
    final class Problems: Sendable {
        private let found = Mutex<[String]>([])
        func add(_ problem: String) { found.withLock { $0.append(problem) } }
        var all: [String] { found.withLock { $0 } }
    }

    /// Runs `call` and adds a problem unless every batch it sent carried one deadline: the
    /// command timeout after a clock reading taken within the call.
    static func withinOneBudget<T>(
        _ what: String, _ log: SentByThread, _ timeouts: RemoteTimeouts, _ problems: Problems, _ call: () throws -> T
    ) rethrows -> T {
        _ = log.take()
        let before = Socket.monotonicSeconds()
        defer {
            let after = Socket.monotonicSeconds()
            let deadlines = Set(log.take().map(\.deadline))
            if deadlines.count > 1 { problems.add("\(what) sent under \(deadlines.count) deadlines") }
            if let deadline = deadlines.first, !(before + timeouts.command <= deadline && deadline <= after + timeouts.command) {
                problems.add("\(what) sent under a deadline that is not its call's budget")
            }
        }
        return try call()
    }

    @Test func readersAndWritersKeepTheirValuesWhileSlotsMoveToANewMaster() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let added = try cluster.addMaster()
        let store = try RedisClusterStore(seeds: [cluster.addresses[0]])
        let log = SentByThread()
        store.hooks.withLock { $0.observer = { log.record($0) } }
        let timeouts = RemoteTimeouts(connect: 5, command: 10)
        let problems = Problems()
        let workers = (0 ..< 4).map(Worker.init)
        let finalValues = Mutex<[Int: [String: String]]>([:])
        for worker in workers {
            for key in worker.keys {
                _ = try store.store(Data("\(key)#0".utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts)
            }
        }
        // The slots that move: each worker's first two keys and its tagged three.
        let moving = Set(workers.flatMap { [$0.keys[0], $0.keys[1], $0.keys[6]] }.map(HashSlot.slot(of:))).sorted()
        let sources = try moving.map { slot in try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0])) }

        let operations = Mutex([Int](repeating: 0, count: workers.count))
        let stop = Atomic<Bool>(false)
        let finished = DispatchSemaphore(value: 0)
        for initial in workers {
            let thread = Thread {
                var worker = initial
                defer {
                    finalValues.withLock { $0[worker.index] = worker.expected }
                    finished.signal()
                }
                var version = 0
                while !stop.load(ordering: .acquiring) {
                    let key = worker.keys[Int(worker.random.next() % UInt64(worker.keys.count))]
                    do {
                        switch worker.random.next() % 3 {
                        case 0:
                            version += 1
                            let value = "\(key)#\(version)"
                            try Self.withinOneBudget("a store", log, timeouts, problems) {
                                _ = try store.store(Data(value.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts)
                            }
                            worker.expected[key] = value
                        case 1:
                            let found = try Self.withinOneBudget("a read", log, timeouts, problems) {
                                try store.value(forKey: key, timeouts: timeouts)
                            }
                            if found?.data != Data(worker.expected[key]!.utf8) {
                                problems.add("\(key) read \(found.map { String(decoding: $0.data, as: UTF8.self) } ?? "nothing")")
                            }
                        default:
                            let asked = worker.keys.shuffled(using: &worker.random)
                            let found = try Self.withinOneBudget("a read of many", log, timeouts, problems) {
                                try store.values(forKeys: asked, timeouts: timeouts)
                            }
                            for (key, value) in zip(asked, found) where value?.data != Data(worker.expected[key]!.utf8) {
                                problems.add(
                                    "\(key) read among many: \(value.map { String(decoding: $0.data, as: UTF8.self) } ?? "nothing")")
                            }
                        }
                    } catch {
                        // A store that failed may or may not have applied: the key's value is unknown from here.
                        problems.add("worker \(worker.index) failed on \(key): \(error)")
                        return
                    }
                    operations.withLock { $0[worker.index] += 1 }
                }
            }
            thread.start()
        }
        // The workers end before the cluster goes, whatever this test throws.
        var joined = false
        func stopWorkers() {
            guard !joined else { return }
            joined = true
            stop.store(true, ordering: .releasing)
            for _ in workers.indices where finished.wait(timeout: .now() + 600) == .timedOut { Issue.record("a worker never ended") }
        }
        defer { stopWorkers() }
        /// Waits until every worker did `count` more operations: they run at each step of the move.
        func letWorkersRun(_ count: Int = 5) {
            let start = operations.withLock { $0 }
            waitUntil("the workers run") {
                !problems.all.isEmpty || operations.withLock { zip($0, start).allSatisfy { $0 - $1 >= count } }
            }
        }

        for (slot, source) in zip(moving, sources) {
            letWorkersRun()
            try cluster.beginMigrating(slot, from: source, to: added)
            letWorkersRun()
            let moved = try cluster.migrateKeys(ofSlot: slot, from: source, to: added)
            #expect(moved >= 1)
            // While the slot migrates, the source answers ASK for the keys it no longer holds.
            let asks = try cluster.errors(source, "ASK")
            let key = try #require(workers.flatMap(\.keys).first { HashSlot.slot(of: $0) == slot })
            #expect(try store.value(forKey: key, timeouts: timeouts) != nil)
            #expect(try cluster.errors(source, "ASK") > asks)
            letWorkersRun()
            try cluster.assignSlot(slot, from: source, to: added, alreadyMigrating: true)
            letWorkersRun()
        }
        letWorkersRun(20)
        stopWorkers()

        #expect(problems.all.isEmpty, "\(problems.all.prefix(10))")
        let expected = finalValues.withLock { $0 }
        #expect(operations.withLock { $0 }.allSatisfy { $0 >= 40 })
        // Redirections were followed: ASK while each slot migrated, MOVED once it moved.
        #expect(try sources.map { try cluster.errors($0, "MOVED") }.reduce(0, +) >= 1)
        // The moved slots' keys live on the new master only, each with its writer's last value.
        let movedKeys = workers.flatMap(\.keys).filter { moving.contains(HashSlot.slot(of: $0)) }
        #expect(try cluster.keyCount(added) == movedKeys.count)
        for worker in workers {
            let last = try #require(expected[worker.index])
            for key in worker.keys {
                let owner = try #require(try cluster.masterPort(ofSlot: HashSlot.slot(of: key), askedPort: cluster.ports[0]))
                #expect((owner == added) == movedKeys.contains(key))
                #expect(try cluster.run(owner, "GET", key) == last[key], "\(key)")
            }
            let found = try store.values(forKeys: worker.keys, timeouts: timeouts)
            #expect(found.map { $0.map { String(decoding: $0.data, as: UTF8.self) } } == worker.keys.map { last[$0] })
        }
    }

    @Test func aMasterThatTookSlotsIsTrackedAndAWriteThroughItInvalidatesBsCopy() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let added = try cluster.addMaster()
        let caches = try RedisClusterTrackingTests.Caches(seedsA: [cluster.addresses[0]], seedsB: [cluster.addresses[1]])
        defer { caches.close() }
        // The new master serves no slot yet: b tracks the three others.
        #expect(try cluster.ports.map { try trackingClients(cluster, $0) } == [1, 1, 1, 0])
        let key = "moving"
        let storeKey = caches.namespace + ":v:" + key
        let slot = HashSlot.slot(of: storeKey)
        let source = try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0]))
        try caches.a.store(Data("v1".utf8), forKey: key)
        waitUntil("b hears of v1") { caches.heard(key) >= 1 }
        #expect(try caches.b.value(forKey: key) == Data("v1".utf8))

        // The slot moves while b holds a copy: the source reports the key's removal, so the
        // copy goes.
        try cluster.beginMigrating(slot, from: source, to: added)
        try cluster.migrateKeys(ofSlot: slot, from: source, to: added)
        waitUntil("b drops its copy of the moved key") { caches.bHoldsNoCopy(of: key) }
        // a writes through ASK to the new master, which nobody tracks yet.
        try caches.a.store(Data("v2".utf8), forKey: key)
        #expect(try cluster.keyCount(added) == 1)
        // b reads through ASK too: the new master is a loss until it tracks, so the value is
        // served but not kept.
        #expect(try caches.b.value(forKey: key) == Data("v2".utf8))
        #expect(caches.losses >= 1)
        caches.b.flushRemoteWrites()
        #expect(try caches.b.value(forKey: key, from: [.memory, .disk]) == nil)
        try cluster.assignSlot(slot, from: source, to: added, alreadyMigrating: true)

        // Once the new master tracks, b keeps copies again, and a write there drops b's copy.
        waitUntil("b tracks again") { caches.restorations >= 1 }
        #expect(try trackingClients(cluster, added) == 1)
        waitUntil("b keeps a copy of v2") {
            _ = try? caches.b.value(forKey: key)
            caches.b.flushRemoteWrites()
            return (try? caches.b.value(forKey: key, from: [.memory])) == Data("v2".utf8)
        }
        try caches.a.store(Data("v3".utf8), forKey: key)
        #expect(try cluster.run(added, "GET", storeKey).hasSuffix("v3"))
        waitUntil("b drops its copy of v2") { caches.bHoldsNoCopy(of: key) }
        #expect(try caches.b.value(forKey: key) == Data("v3".utf8))
    }

    @Test func aRedirectionToAnUntrackedMasterKeepsTheCallsBudgetWhileTheCopiesGo() throws {
        let cluster = try LocalRedisCluster()
        defer { cluster.stop() }
        let added = try cluster.addMaster()
        let namespace = uniqueNamespace("cluster-redirect-loss")
        let directories = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            directories.0.remove()
            directories.1.remove()
        }
        // b's event handler blocks in the first loss until the test lets it go: the loss is
        // handled (b's tiers emptied) before the handler hears of it, and the handling stays
        // under way as long as the test wants.
        let events = EventLog()
        let inLoss = Atomic<Bool>(false)
        let release = DispatchSemaphore(value: 0)
        let a = try HybridCache(
            options: redisCacheOptions(directories.0.url, store: try RedisClusterStore(seeds: [cluster.addresses[0]]), namespace: namespace)
        )
        defer { a.close() }
        let b = try HybridCache(
            options: redisCacheOptions(
                directories.1.url, store: try RedisClusterStore(seeds: [cluster.addresses[1]]), namespace: namespace,
                events: { event in
                    events.handler(event)
                    if case .subscriptionLost = event, !inLoss.exchange(true, ordering: .acquiringAndReleasing) { release.wait() }
                }
            ) {
                $0.invalidation = .tracking
                $0.commandTimeout = 0.5
                $0.breakerCooldown = 0.2
            })
        defer { b.close() }
        waitUntil("b tracks") { events.subscribed == 1 }
        let key = "moving"
        let slot = HashSlot.slot(of: namespace + ":v:" + key)
        let source = try #require(try cluster.masterPort(ofSlot: slot, askedPort: cluster.ports[0]))
        // A copy b keeps of a key that does not move.
        let kept = try #require(
            (0 ..< 100).map { "kept/\($0)" }.first { candidate in
                (try? cluster.masterPort(ofSlot: HashSlot.slot(of: namespace + ":v:" + candidate), askedPort: cluster.ports[0])) != source
            })
        try a.store(Data("v1".utf8), forKey: kept)
        waitUntil("b reads and keeps v1") {
            _ = try? b.value(forKey: kept)
            b.flushRemoteWrites()
            return (try? b.value(forKey: kept, from: [.memory])) == Data("v1".utf8)
                && (try? b.value(forKey: kept, from: [.disk])) == Data("v1".utf8)
        }
        try a.store(Data("v1".utf8), forKey: key)
        try cluster.beginMigrating(slot, from: source, to: added)
        try cluster.migrateKeys(ofSlot: slot, from: source, to: added)
        try cluster.assignSlot(slot, from: source, to: added, alreadyMigrating: true)

        // b's read is redirected to the new master, which it does not track: the call returns
        // within its budget (a miss) while the loss's handling is still under way, and sent
        // nothing to the new master.
        let read = Mutex<Result<Data?, CacheError>?>(nil)
        let returned = DispatchSemaphore(value: 0)
        Thread {
            read.withLock { $0 = Result { () throws(CacheError) in try b.value(forKey: key) } }
            returned.signal()
        }.start()
        if returned.wait(timeout: .now() + 120) == .timedOut {
            Issue.record("the redirected read waited for the loss's handling beyond its budget")
            release.signal()
            _ = returned.wait(timeout: .now() + 600)
        } else {
            #expect(try read.withLock { $0 }?.get() == nil)
            #expect(try cluster.calls(added, command: "get") == 0)
            // The handling goes on in the background: b's copies went before it reports the loss.
            waitUntil("b handles the loss") { inLoss.load(ordering: .acquiring) }
            #expect(try b.value(forKey: kept, from: [.memory]) == nil)
            #expect(try b.value(forKey: kept, from: [.disk]) == nil)
            release.signal()
        }

        // Once the new master tracks, b reads from it and keeps its copies again.
        waitUntil("b tracks again") { events.restored >= 1 }
        #expect(try trackingClients(cluster, added) == 1)
        waitUntil("b reads v1 from the new master") { (try? b.value(forKey: key)) == Data("v1".utf8) }
        #expect(try b.value(forKey: kept) == Data("v1".utf8))
    }

    /// How many connections of the node at `port` turned tracking on with their last command.
    func trackingClients(_ cluster: LocalRedisCluster, _ port: Int) throws -> Int {
        try cluster.run(port, "CLIENT", "LIST").split(separator: "\n").filter { $0.contains("cmd=client|tracking") }.count
    }
}
