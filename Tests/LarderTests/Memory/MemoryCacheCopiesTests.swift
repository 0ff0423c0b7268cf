@testable import Larder
import LarderTestSupport
import Testing

@Suite("MemoryCache.storeCopies against one store per copy")
struct MemoryCacheCopiesTests {
    struct Setup: Sendable, CustomTestStringConvertible {
        var seed: UInt64
        var policy: EvictionPolicy
        var countLimit: Int
        var totalCostLimit: Int
        var defaultExpiration: Double?
        var testDescription: String {
            "seed \(seed), \(policy), count \(countLimit), cost \(totalCostLimit), default \(defaultExpiration.map { "\($0)" } ?? "none")"
        }
    }

    static let setups: [Setup] = [
        Setup(seed: 1, policy: .lru, countLimit: 12, totalCostLimit: 0, defaultExpiration: nil),
        Setup(seed: 2, policy: .lru, countLimit: 0, totalCostLimit: 40, defaultExpiration: 8),
        Setup(seed: 3, policy: .tinyLFU, countLimit: 12, totalCostLimit: 0, defaultExpiration: 8),
        Setup(seed: 4, policy: .tinyLFU, countLimit: 0, totalCostLimit: 40, defaultExpiration: nil),
        Setup(seed: 5, policy: .tinyLFU, countLimit: 0, totalCostLimit: 0, defaultExpiration: nil),
    ]

    /// Batches of copies (skipped ones, ones already at their deadline, ones costing more than
    /// the cost limit, repeated keys) go to one cache through `storeCopies`, and to another as
    /// `HybridCache.promote` stored them: one `store` per copy with the lifetime left (capped by
    /// the default expiration), a `remove` for a copy with none. Reads and clock moves go to both.
    /// After every step the two hold the same keys in the same eviction order, with the same
    /// values, counters and evictions.
    @Test("random batches leave the same entries, order, counters and evictions", arguments: setups)
    func batchesMatchStores(setup: Setup) throws {
        var random = SplitMix64(seed: setup.seed)
        let batchClock = ManualClock(now: 1_000)
        let storeClock = ManualClock(now: 1_000)
        let batchEvictions = EvictionRecorder<Int, Int>()
        let storeEvictions = EvictionRecorder<Int, Int>()
        func cache(_ clock: ManualClock, _ recorder: EvictionRecorder<Int, Int>) throws -> MemoryCache<Int, Int> {
            try MemoryCache(
                countLimit: setup.countLimit, totalCostLimit: setup.totalCostLimit, defaultExpiration: setup.defaultExpiration,
                clock: clock, policy: setup.policy, evictionHandler: recorder.handler)
        }
        let batched = try cache(batchClock, batchEvictions)
        let stored = try cache(storeClock, storeEvictions)
        let keySpace = 48
        var sawRefused = false
        var sawSkipped = false
        var sawExpiredRemoval = false
        for step in 0 ..< 4_000 {
            let now = batchClock.now
            switch random.below(10) {
            case 0 ..< 4:
                for _ in 0 ..< 1 + random.below(3) {
                    let key = random.below(keySpace)
                    #expect(batched.value(forKey: key) == stored.value(forKey: key), "step \(step): read of \(key)")
                }
            case 4:
                let seconds = Double(1 + random.below(4))
                batchClock.now += seconds
                storeClock.now += seconds
            default:
                // Whole seconds throughout, so that `now + (deadline - now)` is exactly `deadline`.
                let copies: [MemoryCache<Int, Int>.Copy?] = (0 ..< 1 + random.below(16)).map { _ in
                    let key = random.below(keySpace)
                    let deadline: Double =
                        switch random.below(8) {
                        case 0: .infinity
                        case 1: now - Double(random.below(2))
                        default: now + Double(1 + random.below(30))
                        }
                    let cost = random.below(10) == 0 ? 41 : random.below(6)
                    return random.below(10) == 0 ? nil : .init(key: key, value: random.below(1_000), cost: cost, deadline: deadline)
                }
                batched.storeCopies(count: copies.count, now: now) { copies[$0] }
                for copy in copies {
                    guard let copy else {
                        sawSkipped = true
                        continue
                    }
                    var lifetime = setup.defaultExpiration
                    if copy.deadline != .infinity { lifetime = min(copy.deadline - now, lifetime ?? .infinity) }
                    if let lifetime, lifetime <= 0 {
                        sawExpiredRemoval = true
                        stored.remove(forKey: copy.key)
                    } else {
                        if setup.totalCostLimit > 0, copy.cost > setup.totalCostLimit { sawRefused = true }
                        try stored.store(copy.value, forKey: copy.key, cost: copy.cost, expiry: lifetime.map { .seconds($0) } ?? .default)
                    }
                }
            }
            #expect(batched.keys() == stored.keys(), "step \(step): keys in eviction order")
            #expect(batched.keys().map { batched.peek($0)?.value } == stored.keys().map { stored.peek($0)?.value }, "step \(step): values")
            #expect(batched.statistics == stored.statistics, "step \(step): counters")
            #expect(batched.totalCost == stored.totalCost, "step \(step): total cost")
            #expect(batchEvictions.drain() == storeEvictions.drain(), "step \(step): evictions")
        }
        #expect(sawSkipped)
        #expect(sawExpiredRemoval)
        #expect(sawRefused == (setup.totalCostLimit > 0))
    }

    /// What TinyLFU keeps beside the entries, compared whole, so that a batch that orders its
    /// work differently from one store per copy (hashing, reading ahead) is caught if it changes
    /// any of it.
    struct OrderState: Equatable {
        var keys: [String]
        var sketch: [UInt64]
        var windowHistory: [UInt64]
        var mainHistory: [UInt64]
        var shadow: [UInt32]
        var windowFraction: Double
        var windowFloor: Double
        var clock: UInt64
        var insertions: UInt32
        var mainEvictions: UInt32
        var sampledEntries: Int
        var capacity: Int

        init(_ cache: MemoryCache<String, Int>) {
            keys = cache.keys()
            (sketch, windowHistory, mainHistory, shadow) = cache.state.withLock { state in
                let order = state.storage.order
                return (order.sketch.table, order.windowHistory.buckets, order.mainHistory.buckets, order.shadow.hashesInOrder())
            }
            (windowFraction, windowFloor, clock, insertions, mainEvictions, sampledEntries, capacity) = cache.state.withLock {
                let order = $0.storage.order
                return (
                    order.windowFraction, order.windowFloor, order.clock, order.insertions, order.mainEvictions, order.sampledEntries,
                    order.capacity
                )
            }
        }
    }

    /// Batches of 100 copies of mostly new keys (as `values(forKeys:)` promotes remote hits),
    /// with reads between them, leave the sketch, both histories, the shadow LRU, the window's
    /// tuning and the eviction order exactly as one `store` per copy does: with a count limit
    /// (evictions, contests, history records) and without one (a growing table, rehashed
    /// mid-batch). Enough keys that the shadow samples only some of them.
    @Test("batches of 100 leave TinyLFU's sketch, histories and shadow as one store per copy", arguments: [0, 10_000])
    func batchesLeaveTheSameTinyLFUState(countLimit: Int) throws {
        var random = SplitMix64(seed: 44 &+ UInt64(countLimit))
        let batched = try MemoryCache<String, Int>(countLimit: countLimit, clock: ManualClock(now: 1_000), policy: .tinyLFU)
        let stored = try MemoryCache<String, Int>(countLimit: countLimit, clock: ManualClock(now: 1_000), policy: .tinyLFU)
        var next = 0
        for round in 0 ..< 150 {
            let keys = (0 ..< 100).map { _ in
                // Mostly new keys; some come back (window and main history hits), some repeat.
                if next > 0 && random.below(5) == 0 { return "key-\(random.below(next))" }
                next += 1
                return "key-\(next - 1)"
            }
            batched.storeCopies(count: keys.count, now: 1_000) { .init(key: keys[$0], value: $0, cost: 1, deadline: .infinity) }
            for (index, key) in keys.enumerated() { try stored.store(index, forKey: key) }
            for _ in 0 ..< 50 {
                let key = "key-\(random.below(next))"
                #expect(batched.value(forKey: key) == stored.value(forKey: key), "round \(round): read of \(key)")
            }
            // Compared every tenth round (and after the last): a whole comparison is O(capacity).
            if round % 10 == 9 { try #require(OrderState(batched) == OrderState(stored), "round \(round)") }
        }
        let (sampleMask, capacity) = batched.state.withLock { ($0.storage.order.sampleMask, $0.storage.order.capacity) }
        #expect(sampleMask != 0, "only some keys sampled")
        if countLimit > 0 { #expect(batched.statistics.totalEvictions > 0 && capacity == countLimit) }
    }

    /// The closure runs with the cache's lock held: a copy it refuses there is never stored,
    /// and the ones it allows are, in the order given.
    @Test("a copy the closure refuses is not stored; the others are, newest last")
    func refusedCopiesAreSkipped() throws {
        let cache = try MemoryCache<String, Int>(clock: ManualClock(now: 100))
        try cache.store(0, forKey: "b")
        let keys = ["a", "b", "c", "d"]
        var asked: [Int] = []
        cache.storeCopies(count: keys.count, now: 100) { index in
            asked.append(index)
            return index == 1 ? nil : .init(key: keys[index], value: index + 1, cost: 1, deadline: 150)
        }
        #expect(asked == [0, 1, 2, 3])
        #expect(cache.keys() == ["b", "a", "c", "d"])
        #expect(cache.value(forKey: "b") == 0)
        #expect(cache.peek("a")?.deadline == 150)
        #expect(cache.statistics.insertions == 4)
    }
}
