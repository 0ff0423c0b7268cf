import Dispatch
import Foundation
@testable import Larder
import Synchronization
import Testing

@Suite("MemoryCache")
struct MemoryCacheTests {
    // MARK: Recency order

    @Test("The issue's example: a read is a use, so B is evicted and keys are [C, A, D]")
    func readCountsAsUse() {
        let recorder = EvictionRecorder<String, Int>()
        let cache = MemoryCache<String, Int>(countLimit: 3, evictionHandler: recorder.handler)
        cache.setValue(1, forKey: "A")
        cache.setValue(2, forKey: "B")
        cache.setValue(3, forKey: "C")
        #expect(cache.value(forKey: "A") == 1)
        cache.setValue(4, forKey: "D")
        #expect(cache.keys == ["C", "A", "D"])
        #expect(cache.value(forKey: "B") == nil)
        #expect(recorder.events == [.init(key: "B", value: 2, reason: .countLimit)])
    }

    @Test("A write is a use too")
    func writeCountsAsUse() {
        let cache = MemoryCache<String, Int>(countLimit: 3)
        cache.setValue(1, forKey: "A")
        cache.setValue(2, forKey: "B")
        cache.setValue(3, forKey: "C")
        cache.setValue(10, forKey: "A")
        cache.setValue(4, forKey: "D")
        #expect(cache.keys == ["C", "A", "D"])
        #expect(cache.value(forKey: "A") == 10)
    }

    @Test("Limits default to 0, which means no limit")
    func defaultsAreUnlimited() {
        let cache = MemoryCache<Int, Int>()
        #expect(cache.countLimit == 0)
        #expect(cache.totalCostLimit == 0)
        #expect(cache.defaultTTL == nil)
        for i in 0..<2_000 { cache.setValue(i, forKey: i, cost: 1_000) }
        #expect(cache.count == 2_000)
        #expect(cache.totalCost == 2_000_000)
        #expect(cache.statistics.evictions == 0)
    }

    // MARK: Cost

    @Test("Entries over the cost limit are evicted least recently used first")
    func costEviction() {
        let recorder = EvictionRecorder<String, Int>()
        let cache = MemoryCache<String, Int>(totalCostLimit: 10, evictionHandler: recorder.handler)
        cache.setValue(1, forKey: "a", cost: 4)
        cache.setValue(2, forKey: "b", cost: 4)
        _ = cache.value(forKey: "a")
        cache.setValue(3, forKey: "c", cost: 4)
        #expect(cache.keys == ["a", "c"])
        #expect(cache.totalCost == 8)
        #expect(recorder.events == [.init(key: "b", value: 2, reason: .costLimit)])
    }

    @Test("A value costing more than the limit is not admitted, and the older value goes")
    func costAdmission() {
        let recorder = EvictionRecorder<String, Int>()
        let cache = MemoryCache<String, Int>(totalCostLimit: 10, evictionHandler: recorder.handler)
        cache.setValue(1, forKey: "a", cost: 5)
        cache.setValue(2, forKey: "b", cost: 3)
        cache.setValue(3, forKey: "a", cost: 11)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.keys == ["b"])
        #expect(cache.totalCost == 3)
        // Exactly the limit is admitted.
        cache.setValue(4, forKey: "c", cost: 10)
        #expect(cache.keys == ["c"])
        #expect(cache.statistics.insertions == 3)
        // The refused write's old value was replaced, not evicted; "b" was evicted for cost.
        #expect(recorder.events == [.init(key: "b", value: 2, reason: .costLimit)])
    }

    // MARK: Time to live

    @Test("A value expires at its TTL, counting as an expiration and a miss, not a hit")
    func ttlExpiry() {
        let clock = ManualClock(now: 1_000)
        let recorder = EvictionRecorder<String, Int>()
        let cache = MemoryCache<String, Int>(defaultTTL: 60, clock: clock, evictionHandler: recorder.handler)
        cache.setValue(1, forKey: "a")
        cache.setValue(2, forKey: "b", ttl: 5)
        clock.advance(by: 4.5)
        #expect(cache.value(forKey: "b") == 2)
        clock.advance(by: 0.5)
        #expect(cache.value(forKey: "b") == nil)
        clock.advance(by: 54.9)
        #expect(cache.value(forKey: "a") == 1)
        clock.advance(by: 0.1)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.count == 0)
        #expect(cache.statistics == CacheStatistics(hits: 2, misses: 2, insertions: 2, expirations: 2, evictions: 0))
        #expect(recorder.events == [.init(key: "b", value: 2, reason: .expired), .init(key: "a", value: 1, reason: .expired)])
    }

    @Test("Without a TTL or default, values never expire; a TTL of 0 expires at once")
    func ttlDefaults() {
        let clock = ManualClock(now: 1_000)
        let cache = MemoryCache<String, Int>(clock: clock)
        cache.setValue(1, forKey: "forever")
        cache.setValue(2, forKey: "now", ttl: 0)
        #expect(cache.value(forKey: "now") == nil)
        clock.advance(by: 1e9)
        #expect(cache.value(forKey: "forever") == 1)
    }

    @Test("Expired values are counted until dropped, and never returned by removeValue")
    func lazyExpiry() {
        let clock = ManualClock(now: 1_000)
        let recorder = EvictionRecorder<String, Int>()
        let cache = MemoryCache<String, Int>(clock: clock, evictionHandler: recorder.handler)
        cache.setValue(1, forKey: "a", ttl: 1)
        cache.setValue(2, forKey: "b", ttl: 1)
        cache.setValue(3, forKey: "c", ttl: 100)
        clock.advance(by: 2)
        #expect(cache.count == 3)
        #expect(cache.removeValue(forKey: "a") == nil)
        #expect(cache.keys == ["b", "c"])
        cache.removeExpiredValues()
        #expect(cache.keys == ["c"])
        #expect(cache.statistics.expirations == 2)
        #expect(recorder.events.map(\.reason) == [.expired, .expired])
        #expect(cache.removeValue(forKey: "c") == 3)
        #expect(recorder.events.count == 2)
    }

    // MARK: Limits, removal

    @Test("Lowering the count limit evicts at once; raising it evicts nothing")
    func lowerCountLimit() {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = MemoryCache<Int, Int>(countLimit: 10, evictionHandler: recorder.handler)
        for i in 0..<10 { cache.setValue(i, forKey: i) }
        cache.countLimit = 20
        #expect(cache.count == 10)
        cache.countLimit = 4
        #expect(cache.keys == [6, 7, 8, 9])
        #expect(cache.statistics.evictions == 6)
        #expect(recorder.events.map(\.key) == [0, 1, 2, 3, 4, 5])
        #expect(recorder.events.allSatisfy { $0.reason == .countLimit })
        cache.countLimit = 0
        for i in 10..<30 { cache.setValue(i, forKey: i) }
        #expect(cache.count == 24)
    }

    @Test("Lowering the cost limit evicts at once")
    func lowerCostLimit() {
        let cache = MemoryCache<Int, Int>(totalCostLimit: 100)
        for i in 0..<10 { cache.setValue(i, forKey: i, cost: 10) }
        cache.totalCostLimit = 35
        #expect(cache.keys == [7, 8, 9])
        #expect(cache.totalCost == 30)
        cache.setValue(99, forKey: 99, cost: 36)
        #expect(cache.value(forKey: 99) == nil)
    }

    @Test("trim(toCount:) and trim(toCost:) evict the least recently used, as .trimmed")
    func trimming() {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = MemoryCache<Int, Int>(evictionHandler: recorder.handler)
        for i in 0..<6 { cache.setValue(i, forKey: i, cost: i) }
        cache.trim(toCount: 4)
        #expect(cache.keys == [2, 3, 4, 5])
        cache.trim(toCost: 9)
        #expect(cache.keys == [4, 5])
        #expect(recorder.events.map(\.key) == [0, 1, 2, 3])
        #expect(recorder.events.allSatisfy { $0.reason == .trimmed })
    }

    @Test("removeAll empties the cache without calling the handler, and keeps statistics")
    func removeAll() {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = MemoryCache<Int, Int>(countLimit: 5, evictionHandler: recorder.handler)
        for i in 0..<5 { cache.setValue(i, forKey: i, cost: 2) }
        _ = cache.value(forKey: 1)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.keys.isEmpty)
        #expect(cache.value(forKey: 1) == nil)
        #expect(recorder.events.isEmpty)
        #expect(cache.statistics.insertions == 5)
        #expect(cache.statistics.hits == 1)
        cache.setValue(7, forKey: 7)
        #expect(cache.keys == [7])
    }

    @Test("removeValue returns the value and does not call the handler; replacing does not either")
    func removalIsNotEviction() {
        let recorder = EvictionRecorder<String, Int>()
        let cache = MemoryCache<String, Int>(evictionHandler: recorder.handler)
        cache.setValue(1, forKey: "a")
        cache.setValue(2, forKey: "a")
        #expect(cache.removeValue(forKey: "a") == 2)
        #expect(cache.removeValue(forKey: "a") == nil)
        #expect(recorder.events.isEmpty)
        #expect(cache.statistics.evictions == 0)
    }

    // MARK: Statistics

    @Test("Statistics count hits, misses and insertions; hitRate is hits over reads, 0 without reads")
    func statistics() {
        let cache = MemoryCache<String, Int>()
        #expect(cache.statistics.hitRate == 0)
        cache.setValue(1, forKey: "a")
        cache.setValue(2, forKey: "a")
        for _ in 0..<3 { _ = cache.value(forKey: "a") }
        _ = cache.value(forKey: "zzz")
        let stats = cache.statistics
        #expect(stats == CacheStatistics(hits: 3, misses: 1, insertions: 2))
        #expect(stats.lookups == 4)
        #expect(stats.hitRate == 0.75)
        #expect(stats.description == "hits 3, misses 1, insertions 2, expirations 0, evictions 0")
    }

    // MARK: Memory pressure

    @Test("A warning halves count and cost (rounded down), least recently used first")
    func pressureWarning() {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = MemoryCache<Int, Int>(evictionHandler: recorder.handler)
        for i in 0..<5 { cache.setValue(i, forKey: i, cost: 1) }
        cache.handleMemoryPressure(.warning)
        #expect(cache.keys == [3, 4])  // 5 / 2 == 2
        #expect(recorder.events.allSatisfy { $0.reason == .memoryPressure })

        // Cost can bind harder than count: costs 1...5 total 15, so at most 7 may stay.
        let costly = MemoryCache<Int, Int>()
        for i in 1...5 { costly.setValue(i, forKey: i, cost: i) }
        costly.handleMemoryPressure(.warning)
        #expect(costly.keys == [5])
        #expect(costly.statistics.evictions == 4)
    }

    @Test("A critical event removes everything, as evictions")
    func pressureCritical() {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = MemoryCache<Int, Int>(evictionHandler: recorder.handler)
        for i in 0..<8 { cache.setValue(i, forKey: i, cost: 3) }
        cache.handleMemoryPressure(.critical)
        #expect(cache.count == 0)
        #expect(cache.totalCost == 0)
        #expect(cache.statistics.evictions == 8)
        #expect(recorder.events.map(\.key) == Array(0..<8))
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
        let calls = Mutex(0)
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
    func subscribingCache() {
        weak var weakCache: MemoryCache<Int, Int>?
        do {
            let cache = MemoryCache<Int, Int>(respondsToMemoryPressure: true)
            weakCache = cache
            for i in 0..<4 { cache.setValue(i, forKey: i) }
            cache.handleMemoryPressure(.warning)
            #expect(cache.count == 2)
            let plain = MemoryCache<Int, Int>()
            #expect(!plain.isMonitoringMemoryPressure)
        }
        #expect(weakCache == nil)
    }

    // MARK: Eviction handler

    @Test("The eviction handler runs outside the lock, so it may use the cache")
    func handlerOutsideLock() {
        let seen = Mutex<[Int]>([])
        let box = Mutex<MemoryCache<Int, Int>?>(nil)
        let cache = MemoryCache<Int, Int>(countLimit: 2) { key, _, _ in
            // Reentering would deadlock if the handler ran under the cache's lock.
            let count = box.withLock { $0 }?.count ?? -1
            seen.withLock { $0.append(key * 100 + count) }
        }
        box.withLock { $0 = cache }
        for i in 0..<4 { cache.setValue(i, forKey: i) }
        #expect(seen.withLock { $0 } == [2, 102])
        box.withLock { $0 = nil }
    }

    // MARK: Concurrency

    @Test("Concurrent readers and writers leave a consistent cache")
    func concurrentUse() {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = MemoryCache<Int, Int>(countLimit: 64, totalCostLimit: 300, evictionHandler: recorder.handler)
        let threads = 4
        let operations = 20_000
        let reads = Mutex(0)
        let writes = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SplitMix64(seed: UInt64(thread))
            var (myReads, myWrites) = (0, 0)
            for _ in 0..<operations {
                let key = Int.random(in: 0..<200, using: &random)
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    if let value = cache.value(forKey: key) {
                        precondition(value == key * 10, "key \(key) holds \(value)")
                    }
                    myReads += 1
                case 5..<9:
                    cache.setValue(key * 10, forKey: key, cost: key % 7)
                    myWrites += 1
                default:
                    cache.removeValue(forKey: key)
                }
            }
            reads.withLock { $0 += myReads }
            writes.withLock { $0 += myWrites }
        }
        let keys = cache.keys
        #expect(keys.count == cache.count)
        #expect(Set(keys).count == keys.count)
        #expect(cache.count <= 64)
        #expect(cache.totalCost <= 300)
        #expect(cache.totalCost == keys.reduce(0) { $0 + $1 % 7 })
        #expect(keys.allSatisfy { cache.value(forKey: $0) == $0 * 10 })
        let stats = cache.statistics
        #expect(stats.lookups == reads.withLock { $0 } + keys.count)
        #expect(stats.insertions == writes.withLock { $0 })
        #expect(stats.evictions == recorder.events.count)
        #expect(stats.evictions > 0)
    }
}
