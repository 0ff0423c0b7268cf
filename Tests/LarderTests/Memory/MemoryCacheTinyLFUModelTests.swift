@testable import Larder
import LarderTestSupport
import Testing

@Suite("MemoryCache under TinyLFU against a reference TinyLFU")
struct MemoryCacheTinyLFUModelTests {
    /// One configuration of the randomized comparison.
    struct Setup: Sendable, CustomTestStringConvertible {
        var seed: UInt64
        var countLimit: Int
        var totalCostLimit: Int
        /// Keys are drawn from 0 ..< keySpace, skewed towards small keys so that frequencies differ.
        var keySpace: Int
        /// Whether phases of new keys that each come back once (where LRU misses less than a small
        /// window, and the check against LRU raises the window's floor) alternate with phases of
        /// the skewed keys (where it sinks back), every 20,000 steps.
        var returns = false
        var testDescription: String {
            "seed \(seed), count \(countLimit), cost \(totalCostLimit), \(keySpace) keys\(returns ? ", returning keys" : "")"
        }
    }

    static let setups: [Setup] = [
        Setup(seed: 1, countLimit: 8, totalCostLimit: 40, keySpace: 24),
        Setup(seed: 2, countLimit: 8, totalCostLimit: 40, keySpace: 24),
        Setup(seed: 3, countLimit: 0, totalCostLimit: 40, keySpace: 24),
        Setup(seed: 4, countLimit: 12, totalCostLimit: 0, keySpace: 40),
        Setup(seed: 0xDEAD_BEEF, countLimit: 40, totalCostLimit: 0, keySpace: 200),
        Setup(seed: 5, countLimit: 44, totalCostLimit: 0, keySpace: 200, returns: true),
    ]

    @Test("100,000 random operations match the reference after every step", arguments: setups)
    func randomOperations(setup: Setup) throws {
        var random = SplitMix64(seed: setup.seed)
        let clock = ManualClock(now: 1_000)
        let defaultExpiration: Double? = setup.seed % 2 == 0 ? 20 : nil
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(
            countLimit: setup.countLimit, totalCostLimit: setup.totalCostLimit, defaultExpiration: defaultExpiration,
            clock: clock, policy: .tinyLFU, evictionHandler: recorder.handler
        )
        var model = ReferenceTinyLFU(
            countLimit: setup.countLimit, totalCostLimit: setup.totalCostLimit, defaultExpiration: defaultExpiration)
        // Limits move only in the small setups: in the large one they would keep the cache tiny.
        let limitsMove = setup.keySpace <= 40
        let keySpace = setup.keySpace
        var step = 0
        try runModelComparison(
            cache: cache, model: &model, clock: clock, recorder: recorder, random: &random,
            operations: [
                (460, .read), (350, .store), (50, .containsThenRemove), (50, .advanceClock),
                // Trims and pressure empty the cache often; the returning-keys setup needs it full.
                (setup.returns ? 0 : 10, .trimToCount(0 ..< 10)), (setup.returns ? 0 : 10, .trimToCost(0 ..< 40)),
                (limitsMove && setup.countLimit > 0 ? 15 : 0, .setCountLimit(1 ..< 14)),
                (limitsMove && setup.totalCostLimit > 0 ? 15 : 0, .setCostLimit(20 ..< 60)),
                (20, .removeExpired), (setup.returns ? 0 : 15, .pressureWarning), (setup.returns ? 0 : 3, .pressureCritical),
                (setup.returns ? 1 : 2, .removeAll),
            ],
            nextKey: { random in
                step += 1
                if setup.returns && step / 20_000 % 2 == 0 {
                    // Every key comes back once, 30 new keys later: LRU (44 entries) hits every
                    // return, while the window histories look back only 11 insertions.
                    return 1_000_000 + step / 2 - (step % 2 == 0 ? 0 : 30)
                }
                // The smaller of two draws: small keys come up more often, so counts differ.
                return min(Int.random(in: 0 ..< keySpace, using: &random), Int.random(in: 0 ..< keySpace, using: &random))
            },
            check: { step, model in
                let (fraction, floor, shadow) = cache.state.withLock {
                    ($0.storage.order.windowFraction, $0.storage.order.windowFloor, $0.storage.order.shadow.hashesInOrder())
                }
                guard fraction == model.windowFraction && floor == model.windowFloor else {
                    Issue.record(
                        "step \(step): window fraction \(fraction), floor \(floor), expected \(model.windowFraction), \(model.windowFloor)")
                    return false
                }
                guard shadow == model.shadow else {
                    Issue.record("step \(step): shadow LRU \(shadow), expected \(model.shadow)")
                    return false
                }
                return true
            }
        )
        if setup.returns {
            // The check against LRU raised the window's floor and let it sink back (3 and 16 times).
            #expect(model.floorRaised > 0)
            #expect(model.floorLowered > 0)
            return
        }
        // The run must have exercised every decision, or the comparison proves little.
        #expect(model.statistics.hits > 1_000)
        #expect(model.statistics.totalEvictions > 1_000)
        #expect(model.admittedByFrequency > 50)
        #expect(model.admittedAsReturning > 0)
        #expect(model.refused > 100)
        #expect(model.windowGrew > 20)
        #expect(model.windowShrank > 20)
        #expect(model.statistics.expirations > 100 || defaultExpiration == nil)
    }

    @Test("A hit sets a bit and counts the use in the entry; it moves nothing and leaves the sketch alone")
    func hitMovesNothing() throws {
        let cache = try MemoryCache<Int, Int>(countLimit: 100, policy: .tinyLFU)
        for i in 0 ..< 100 { try cache.store(i, forKey: i) }
        let before = cache.keys()
        let sketchBefore = cache.state.withLock { $0.storage.order.sketch.table }
        for i in stride(from: 99, through: 0, by: -3) { #expect(cache.value(forKey: i) == i) }
        for _ in 0 ..< 20 { #expect(cache.value(forKey: 99) == 99) }
        #expect(cache.keys() == before)
        let (marked, counts, sketchAfter) = cache.state.withLock { state in
            (
                state.storage.nodes.filter { $0.evictionLink.marks & EvictionOrder.referenced != 0 }.count,
                [99, 96, 98].map { key in state.storage.nodes.first { $0.key == key }!.evictionLink.marks >> 4 },
                state.storage.order.sketch.table
            )
        }
        #expect(marked == 34)
        #expect(counts == [15, 1, 0])  // 21 uses saturate at 15
        #expect(sketchAfter == sketchBefore)
    }

    @Test("A scan of one-time keys does not flush the frequently used ones")
    func scanResistance() throws {
        let cache = try MemoryCache<Int, Int>(countLimit: 100, policy: .tinyLFU)
        // A working set of 80 keys, each read many times.
        for _ in 0 ..< 20 {
            for key in 0 ..< 80 where cache.value(forKey: key) == nil { try cache.store(key, forKey: key) }
        }
        // A scan of 10,000 keys read once.
        for key in 1_000 ..< 11_000 where cache.value(forKey: key) == nil { try cache.store(key, forKey: key) }
        let survivors = (0 ..< 80).filter { cache.contains($0) }.count
        #expect(survivors >= 75, "only \(survivors) of the 80 hot keys survived the scan")

        let lru = try MemoryCache<Int, Int>(countLimit: 100)
        for _ in 0 ..< 20 {
            for key in 0 ..< 80 where lru.value(forKey: key) == nil { try lru.store(key, forKey: key) }
        }
        for key in 1_000 ..< 11_000 where lru.value(forKey: key) == nil { try lru.store(key, forKey: key) }
        #expect((0 ..< 80).filter { lru.contains($0) }.isEmpty)
    }

    @Test("A loop larger than the cache keeps part of it cached, where LRU misses every time")
    func loopLargerThanCache() throws {
        let tiny = try MemoryCache<Int, Int>(countLimit: 500, policy: .tinyLFU)
        let lru = try MemoryCache<Int, Int>(countLimit: 500)
        var misses = (tiny: 0, lru: 0)
        for _ in 0 ..< 20 {
            for key in 0 ..< 1_000 {
                if tiny.value(forKey: key) == nil {
                    misses.tiny += 1
                    try tiny.store(key, forKey: key)
                }
                if lru.value(forKey: key) == nil {
                    misses.lru += 1
                    try lru.store(key, forKey: key)
                }
            }
        }
        #expect(misses.lru == 20_000)
        #expect(misses.tiny < 15_000)
    }

    @Test("The policy and its name", arguments: [(EvictionPolicy.lru, "lru"), (.tinyLFU, "tinylfu"), (.recommended, "tinylfu")])
    func names(policy: EvictionPolicy, name: String) throws {
        #expect(policy.description == name)
        #expect(try MemoryCache<Int, Int>(policy: policy).policy == policy)
        #expect(try MemoryCache<Int, Int>().policy == .lru)
    }
}
