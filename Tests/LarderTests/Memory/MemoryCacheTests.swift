import Dispatch
import Foundation
@testable import Larder
import Synchronization
import Testing

@Suite("MemoryCache")
struct MemoryCacheTests {
    // MARK: Recency order

    @Test("The issue's example: a read is a use, so B is evicted and keys are [C, A, D]")
    func readCountsAsUse() throws {
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(countLimit: 3, evictionHandler: recorder.handler)
        try cache.store(1, forKey: "A")
        try cache.store(2, forKey: "B")
        try cache.store(3, forKey: "C")
        #expect(cache.value(forKey: "A") == 1)
        try cache.store(4, forKey: "D")
        #expect(cache.keys() == ["C", "A", "D"])
        #expect(cache.value(forKey: "B") == nil)
        #expect(recorder.events == [.init(key: "B", value: 2, reason: .countLimit)])
    }

    @Test("A write is a use too")
    func writeCountsAsUse() throws {
        let cache = try MemoryCache<String, Int>(countLimit: 3)
        try cache.store(1, forKey: "A")
        try cache.store(2, forKey: "B")
        try cache.store(3, forKey: "C")
        try cache.store(10, forKey: "A")
        try cache.store(4, forKey: "D")
        #expect(cache.keys() == ["C", "A", "D"])
        #expect(cache.value(forKey: "A") == 10)
    }

    @Test("Limits default to 0, which means no limit")
    func defaultsAreUnlimited() throws {
        let cache = try MemoryCache<Int, Int>()
        #expect(cache.countLimit == 0)
        #expect(cache.totalCostLimit == 0)
        #expect(cache.defaultExpiration == nil)
        for i in 0 ..< 2_000 { try cache.store(i, forKey: i, cost: 1_000) }
        #expect(cache.count == 2_000)
        #expect(cache.totalCost == 2_000_000)
        #expect(cache.statistics.totalEvictions == 0)
    }

    // MARK: Cost

    @Test("Entries over the cost limit are evicted least recently used first")
    func costEviction() throws {
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(totalCostLimit: 10, evictionHandler: recorder.handler)
        try cache.store(1, forKey: "a", cost: 4)
        try cache.store(2, forKey: "b", cost: 4)
        _ = cache.value(forKey: "a")
        try cache.store(3, forKey: "c", cost: 4)
        #expect(cache.keys() == ["a", "c"])
        #expect(cache.totalCost == 8)
        #expect(recorder.events == [.init(key: "b", value: 2, reason: .costLimit)])
    }

    @Test("A value costing more than the limit is not admitted, and the older value goes")
    func costAdmission() throws {
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(totalCostLimit: 10, evictionHandler: recorder.handler)
        try cache.store(1, forKey: "a", cost: 5)
        try cache.store(2, forKey: "b", cost: 3)
        try cache.store(3, forKey: "a", cost: 11)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.keys() == ["b"])
        #expect(cache.totalCost == 3)
        // Exactly the limit is admitted.
        try cache.store(4, forKey: "c", cost: 10)
        #expect(cache.keys() == ["c"])
        #expect(cache.statistics.insertions == 3)
        // The refused write's old value was replaced, not evicted; "b" was evicted for cost.
        #expect(recorder.events == [.init(key: "b", value: 2, reason: .costLimit)])
    }

    // MARK: Time to live

    @Test("A value expires at its expiry, counting as an expiration and a miss, not a hit")
    func ttlExpiry() throws {
        let clock = ManualClock(now: 1_000)
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(defaultExpiration: 60, clock: clock, evictionHandler: recorder.handler)
        try cache.store(1, forKey: "a")
        try cache.store(2, forKey: "b", expiry: .seconds(5))
        clock.advance(by: 4.5)
        #expect(cache.value(forKey: "b") == 2)
        clock.advance(by: 0.5)
        #expect(cache.value(forKey: "b") == nil)
        clock.advance(by: 54.9)
        #expect(cache.value(forKey: "a") == 1)
        clock.advance(by: 0.1)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.count == 0)
        #expect(cache.statistics == CacheStatistics(hits: 2, misses: 2, insertions: 2, expirations: 2, evictions: [:]))
        #expect(recorder.events == [.init(key: "b", value: 2, reason: .expired), .init(key: "a", value: 1, reason: .expired)])
    }

    @Test(
        "Without an expiry or default, values never expire; an expiry of 0 is rejected, and a tiny one expires as soon as the clock moves past it"
    )
    func ttlDefaults() throws {
        let clock = ManualClock(now: 1_000)
        let cache = try MemoryCache<String, Int>(clock: clock)
        try cache.store(1, forKey: "forever")
        // `ttl: 0` used to mean "expires at once"; `.seconds(0)` is now an invalid argument.
        let error = #expect(throws: CacheError.self) { try cache.store(2, forKey: "now", expiry: .seconds(0)) }
        #expect(error?.code == .invalidArgument)
        #expect(cache.value(forKey: "now") == nil)
        #expect(cache.count == 1)
        // What the test meant: a value whose lifetime has passed is never returned.
        try cache.store(2, forKey: "now", expiry: .seconds(0.001))
        clock.advance(by: 0.001)
        #expect(cache.value(forKey: "now") == nil)
        clock.advance(by: 1e9)
        #expect(cache.value(forKey: "forever") == 1)
    }

    @Test("Expired values are counted until dropped, and never reported removed by remove(forKey:)")
    func lazyExpiry() throws {
        let clock = ManualClock(now: 1_000)
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(clock: clock, evictionHandler: recorder.handler)
        try cache.store(1, forKey: "a", expiry: .seconds(1))
        try cache.store(2, forKey: "b", expiry: .seconds(1))
        try cache.store(3, forKey: "c", expiry: .seconds(100))
        clock.advance(by: 2)
        #expect(cache.count == 3)
        #expect(cache.remove(forKey: "a") == false)
        #expect(cache.keys() == ["b", "c"])
        cache.collectGarbage()
        #expect(cache.keys() == ["c"])
        // Two expired values: "a" found by the removal (an expiration), "b" by the sweep (both).
        #expect(cache.statistics.expirations == 2)
        #expect(cache.statistics.evictions == [.expired: 1])
        #expect(recorder.events.map(\.reason) == [.expired, .expired])
        #expect(cache.value(forKey: "c") == 3)
        #expect(cache.remove(forKey: "c") == true)
        #expect(recorder.events.count == 2)
    }

    // MARK: Limits, removal

    @Test("Lowering the count limit evicts at once; raising it evicts nothing")
    func lowerCountLimit() throws {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(countLimit: 10, evictionHandler: recorder.handler)
        for i in 0 ..< 10 { try cache.store(i, forKey: i) }
        try cache.setCountLimit(20)
        #expect(cache.count == 10)
        try cache.setCountLimit(4)
        #expect(cache.keys() == [6, 7, 8, 9])
        #expect(cache.statistics.evictions == [.countLimit: 6])
        #expect(recorder.events.map(\.key) == [0, 1, 2, 3, 4, 5])
        #expect(recorder.events.allSatisfy { $0.reason == .countLimit })
        try cache.setCountLimit(0)
        for i in 10 ..< 30 { try cache.store(i, forKey: i) }
        #expect(cache.count == 24)
    }

    @Test("Lowering the cost limit evicts at once")
    func lowerCostLimit() throws {
        let cache = try MemoryCache<Int, Int>(totalCostLimit: 100)
        for i in 0 ..< 10 { try cache.store(i, forKey: i, cost: 10) }
        try cache.setTotalCostLimit(35)
        #expect(cache.keys() == [7, 8, 9])
        #expect(cache.totalCost == 30)
        try cache.store(99, forKey: 99, cost: 36)
        #expect(cache.value(forKey: 99) == nil)
    }

    @Test("trim(toCount:) and trim(toCost:) evict the least recently used, as .trimmed")
    func trimming() throws {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(evictionHandler: recorder.handler)
        for i in 0 ..< 6 { try cache.store(i, forKey: i, cost: i) }
        try cache.trim(toCount: 4)
        #expect(cache.keys() == [2, 3, 4, 5])
        try cache.trim(toCost: 9)
        #expect(cache.keys() == [4, 5])
        #expect(recorder.events.map(\.key) == [0, 1, 2, 3])
        #expect(recorder.events.allSatisfy { $0.reason == .trimmed })
    }

    @Test("removeAll empties the cache without calling the handler, and keeps statistics")
    func removeAll() throws {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(countLimit: 5, evictionHandler: recorder.handler)
        for i in 0 ..< 5 { try cache.store(i, forKey: i, cost: 2) }
        _ = cache.value(forKey: 1)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.keys().isEmpty)
        #expect(cache.value(forKey: 1) == nil)
        #expect(recorder.events.isEmpty)
        #expect(cache.statistics.insertions == 5)
        #expect(cache.statistics.hits == 1)
        try cache.store(7, forKey: 7)
        #expect(cache.keys() == [7])
    }

    @Test("remove(forKey:) says whether it removed a value and does not call the handler; replacing does not either")
    func removalIsNotEviction() throws {
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(evictionHandler: recorder.handler)
        try cache.store(1, forKey: "a")
        try cache.store(2, forKey: "a")
        #expect(cache.value(forKey: "a") == 2)
        #expect(cache.remove(forKey: "a") == true)
        #expect(cache.remove(forKey: "a") == false)
        #expect(cache.value(forKey: "a") == nil)
        #expect(recorder.events.isEmpty)
        #expect(cache.statistics.totalEvictions == 0)
    }

    // MARK: Statistics

    @Test("Statistics count hits, misses and insertions; hitRate is hits over reads, 0 without reads")
    func statistics() throws {
        let cache = try MemoryCache<String, Int>()
        #expect(cache.statistics.hitRate == 0)
        try cache.store(1, forKey: "a")
        try cache.store(2, forKey: "a")
        for _ in 0 ..< 3 { _ = cache.value(forKey: "a") }
        _ = cache.value(forKey: "zzz")
        let stats = cache.statistics
        #expect(stats == CacheStatistics(hits: 3, misses: 1, insertions: 2))
        #expect(stats.lookups == 4)
        #expect(stats.hitRate == 0.75)
        #expect(stats.description == "hits 3, misses 1, insertions 2, expirations 0, evictions 0")
    }

    // MARK: Memory pressure

    @Test("A warning halves count and cost (rounded down), least recently used first")
    func pressureWarning() throws {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(evictionHandler: recorder.handler)
        for i in 0 ..< 5 { try cache.store(i, forKey: i, cost: 1) }
        cache.handleMemoryPressure(.warning)
        #expect(cache.keys() == [3, 4])  // 5 / 2 == 2
        #expect(recorder.events.allSatisfy { $0.reason == .memoryPressure })

        // Cost can bind harder than count: costs 1...5 total 15, so at most 7 may stay.
        let costly = try MemoryCache<Int, Int>()
        for i in 1 ... 5 { try costly.store(i, forKey: i, cost: i) }
        costly.handleMemoryPressure(.warning)
        #expect(costly.keys() == [5])
        #expect(costly.statistics.evictions == [.memoryPressure: 4])
    }

    @Test("A critical event removes everything, as evictions")
    func pressureCritical() throws {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(evictionHandler: recorder.handler)
        for i in 0 ..< 8 { try cache.store(i, forKey: i, cost: 3) }
        cache.handleMemoryPressure(.critical)
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.statistics.evictions == [.memoryPressure: 8])
        #expect(recorder.events.map(\.key) == Array(0 ..< 8))
        #expect(recorder.events.allSatisfy { $0.reason == .memoryPressure })
    }

    @Test("A monitor with no pressure file is inactive and stops at once")
    func inactiveMonitor() {
        let monitor = MemoryPressureMonitor(paths: ["/nonexistent/memory.pressure"]) { _ in }
        #expect(!monitor.isActive)
        monitor.stop()
        monitor.stop()
        #expect(!monitor.isActive)
    }

    #if os(Linux)
    @Test("The Linux monitor writes the 150 ms / 1 s trigger, watches on a thread, and stops cleanly")
    func linuxMonitorTrigger() throws {
        // A regular file accepts the trigger write but never reports POLLPRI, so the thread
        // just waits until it is stopped.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("larder-psi-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let calls = LarderMutex(0)
        let monitor = MemoryPressureMonitor(paths: [path]) { _ in calls.withLock { $0 += 1 } }
        #expect(monitor.isActive)
        monitor.stop()
        #expect(!monitor.isActive)
        #expect(calls.withLock { $0 } == 0)
        // The documented thresholds, first with one-second windows.
        #expect(PressureStallWatcher.warningTriggers.first == "some 150000 1000000")
        #expect(PressureStallWatcher.criticalTriggers.first == "full 500000 1000000")
        // Each trigger was written, NUL included, at offset 0 of its own descriptor: the
        // critical one (same length) overwrote the warning one in this plain file.
        let written = try String(contentsOfFile: path, encoding: .utf8)
        #expect(written == "full 500000 1000000\0")
    }
    #endif

    @Test("A cache that subscribes to pressure still takes direct events and frees its monitor")
    func subscribingCache() throws {
        weak var weakCache: MemoryCache<Int, Int>?
        do {
            let cache = try MemoryCache<Int, Int>(respondsToMemoryPressure: true)
            weakCache = cache
            for i in 0 ..< 4 { try cache.store(i, forKey: i) }
            cache.handleMemoryPressure(.warning)
            #expect(cache.count == 2)
            let plain = try MemoryCache<Int, Int>()
            #expect(!plain.isMonitoringMemoryPressure)
        }
        #expect(weakCache == nil)
    }

    // MARK: Eviction handler

    @Test("The eviction handler runs outside the lock, so it may use the cache", arguments: [EvictionPolicy.lru, .tinyLFU])
    func handlerOutsideLock(policy: EvictionPolicy) throws {
        let seen = LarderMutex<[Int]>([])
        let box = LarderMutex<MemoryCache<Int, Int>?>(nil)
        let cache = try MemoryCache<Int, Int>(countLimit: 2, policy: policy) { key, _, _ in
            // Reentering would deadlock if the handler ran under the cache's lock.
            let count = box.withLock { $0 }?.count ?? -1
            seen.withLock { $0.append(key * 100 + count) }
        }
        box.withLock { $0 = cache }
        for i in 0 ..< 4 { try cache.store(i, forKey: i) }
        // Under TinyLFU, key 0 holds the main area, and each later key loses its admission contest
        // to it when the next one arrives (none is counted more often than 0).
        #expect(seen.withLock { $0 } == (policy == .lru ? [2, 102] : [102, 202]))
        box.withLock { $0 = nil }
    }

    // MARK: Concurrency

    @Test("Concurrent readers and writers leave a consistent cache", arguments: [EvictionPolicy.lru, .tinyLFU])
    func concurrentUse(policy: EvictionPolicy) throws {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(countLimit: 64, totalCostLimit: 300, policy: policy, evictionHandler: recorder.handler)
        let threads = 4
        let operations = 20_000
        let reads = LarderMutex(0)
        let writes = LarderMutex(0)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SplitMix64(seed: UInt64(thread))
            var (myReads, myWrites) = (0, 0)
            for _ in 0 ..< operations {
                let key = Int.random(in: 0 ..< 200, using: &random)
                switch Int.random(in: 0 ..< 10, using: &random) {
                case 0 ..< 5:
                    if let value = cache.value(forKey: key) {
                        precondition(value == key * 10, "key \(key) holds \(value)")
                    }
                    myReads += 1
                case 5 ..< 9:
                    do { try cache.store(key * 10, forKey: key, cost: key % 7) } catch { Issue.record(error) }
                    myWrites += 1
                default:
                    cache.remove(forKey: key)
                }
            }
            reads.withLock { $0 += myReads }
            writes.withLock { $0 += myWrites }
        }
        let keys = cache.keys()
        #expect(keys.count == cache.count)
        #expect(Set(keys).count == keys.count)
        #expect(cache.count <= 64)
        #expect(cache.totalCost <= 300)
        #expect(cache.totalCost == keys.reduce(0) { $0 + $1 % 7 })
        #expect(keys.allSatisfy { cache.value(forKey: $0) == $0 * 10 })
        let stats = cache.statistics
        #expect(stats.lookups == reads.withLock { $0 } + keys.count)
        #expect(stats.insertions == writes.withLock { $0 })
        #expect(stats.totalEvictions == recorder.events.count)
        #expect(stats.evictions == Dictionary(grouping: recorder.events, by: \.reason).mapValues(\.count))
        #expect(stats.totalEvictions > 0)
    }

    // MARK: The unified API (issue 11)

    @Test("Zero, negative and non-finite expiries are rejected with invalidArgument, and the previous entry stays")
    func invalidExpiryRejected() throws {
        let clock = ManualClock(now: 1_000)
        let cache = try MemoryCache<String, Int>(clock: clock)
        try cache.store(1, forKey: "k", cost: 3, expiry: .seconds(10))
        try cache.store(2, forKey: "other")
        let before = cache.statistics
        for expiry in invalidExpiries {
            let error = #expect(throws: CacheError.self, "\(expiry)") { try cache.store(9, forKey: "k", cost: 5, expiry: expiry) }
            #expect(error?.code == .invalidArgument, "\(expiry)")
            #expect(error?.key == "k", "\(expiry)")
        }
        #expect(cache.statistics == before)
        #expect(cache.keys() == ["k", "other"])
        #expect(cache.totalCost == 3)
        #expect(cache.value(forKey: "k") == 1)
        // The previous entry kept its own expiry too.
        clock.advance(by: 10)
        #expect(cache.value(forKey: "k") == nil)
        #expect(cache.value(forKey: "other") == 2)
    }

    @Test("A negative cost is rejected with invalidArgument too")
    func negativeCostRejected() throws {
        let cache = try MemoryCache<String, Int>()
        try cache.store(1, forKey: "k", cost: 2)
        let error = #expect(throws: CacheError.self) { try cache.store(2, forKey: "k", cost: -1) }
        #expect(error?.code == .invalidArgument)
        #expect(cache.value(forKey: "k") == 1)
        #expect(cache.totalCost == 2)
    }

    @Test("An expiry above Expiry.maximumSeconds is clamped to it: the value expires then, not before")
    func hugeExpiryClamped() throws {
        let clock = ManualClock(now: 1_000)
        let cache = try MemoryCache<String, Int>(clock: clock)
        try cache.store(1, forKey: "k", expiry: .seconds(1e30))
        clock.advance(by: Expiry.maximumSeconds - 1)
        #expect(cache.contains("k"))
        #expect(cache.value(forKey: "k") == 1)
        clock.advance(by: 1)
        #expect(!cache.contains("k"))
        #expect(cache.value(forKey: "k") == nil)
        #expect(cache.statistics.expirations == 1)
        // The default expiration is clamped the same way.
        let defaulted = try MemoryCache<String, Int>(defaultExpiration: 1e30, clock: clock)
        #expect(defaulted.defaultExpiration == Expiry.maximumSeconds)
        try defaulted.store(2, forKey: "d")
        clock.advance(by: Expiry.maximumSeconds - 1)
        #expect(defaulted.value(forKey: "d") == 2)
        clock.advance(by: 1)
        #expect(defaulted.value(forKey: "d") == nil)
    }

    @Test("remove(forKey:) says whether a live value went; remove(forKeys:) lists the keys removed, in order")
    func removeReportsWhatWent() throws {
        let clock = ManualClock(now: 1_000)
        let cache = try MemoryCache<String, Int>(clock: clock)
        for (i, key) in ["a", "b", "c", "d"].enumerated() { try cache.store(i, forKey: key) }
        try cache.store(9, forKey: "stale", expiry: .seconds(1))
        clock.advance(by: 1)
        #expect(cache.remove(forKey: "a"))
        #expect(!cache.remove(forKey: "a"))
        #expect(!cache.remove(forKey: "never"))
        #expect(cache.remove(forKeys: ["d", "missing", "b", "a", "stale", "d"]) == ["d", "b"])
        #expect(cache.keys() == ["c"])
        #expect(cache.remove(forKeys: []) == [])
        #expect(cache.remove(forKeys: ["c"]) == ["c"])
        #expect(cache.count == 0)
        #expect(cache.statistics.expirations == 1)
        #expect(cache.statistics.totalEvictions == 0)
    }

    @Test("contains(_:) is not a use: the recency order and the statistics stay as they were")
    func containsIsNotAUse() throws {
        let clock = ManualClock(now: 1_000)
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(countLimit: 3, clock: clock, evictionHandler: recorder.handler)
        try cache.store(1, forKey: "A")
        try cache.store(2, forKey: "B", expiry: .seconds(5))
        try cache.store(3, forKey: "C")
        let before = cache.statistics
        // Asked most recent first, so that a contains that counted as a use would reverse the order.
        #expect(cache.contains("C"))
        #expect(cache.contains("B"))
        #expect(cache.contains("A"))
        #expect(!cache.contains("Z"))
        #expect(cache.keys() == ["A", "B", "C"])
        #expect(cache.statistics == before)
        // An expired value is not contained, and contains does not drop it either.
        clock.advance(by: 5)
        #expect(!cache.contains("B"))
        #expect(cache.count == 3)
        #expect(cache.statistics == before)
        // "A" was never used since its store, so it is the one a new value evicts.
        try cache.store(4, forKey: "D")
        #expect(cache.keys() == ["B", "C", "D"])
        #expect(recorder.events == [.init(key: "A", value: 1, reason: .countLimit)])
    }

    @Test("Evictions are counted by EvictionReason: a count limit's under .countLimit, a cost limit's under .costLimit")
    func evictionsByReason() throws {
        let cache = try MemoryCache<Int, Int>(countLimit: 2, totalCostLimit: 10)
        for i in 0 ..< 5 { try cache.store(i, forKey: i, cost: 1) }
        #expect(cache.statistics.evictions == [.countLimit: 3])
        #expect(cache.statistics.evictions[.countLimit] == 3)
        // The count limit evicts 3, then the cost limit (1 + 10 > 10) evicts 4.
        try cache.store(5, forKey: 5, cost: 10)
        #expect(cache.keys() == [5])
        #expect(cache.statistics.evictions == [.countLimit: 4, .costLimit: 1])
        try cache.trim(toCount: 0)
        #expect(cache.statistics.evictions == [.countLimit: 4, .costLimit: 1, .trimmed: 1])
        #expect(cache.statistics.totalEvictions == 6)
        #expect(
            cache.statistics.description
                == "hits 0, misses 0, insertions 6, expirations 0, evictions 6 (countLimit 4, costLimit 1, trimmed 1)")
    }
}
