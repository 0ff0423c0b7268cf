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
        var testDescription: String { "seed \(seed), count \(countLimit), cost \(totalCostLimit), \(keySpace) keys" }
    }

    static let setups: [Setup] = [
        Setup(seed: 1, countLimit: 8, totalCostLimit: 40, keySpace: 24),
        Setup(seed: 2, countLimit: 8, totalCostLimit: 40, keySpace: 24),
        Setup(seed: 3, countLimit: 0, totalCostLimit: 40, keySpace: 24),
        Setup(seed: 4, countLimit: 12, totalCostLimit: 0, keySpace: 40),
        Setup(seed: 0xDEAD_BEEF, countLimit: 40, totalCostLimit: 0, keySpace: 200),
    ]

    @Test("100,000 random operations match the reference after every step", arguments: setups)
    func randomOperations(setup: Setup) {
        var random = SplitMix64(seed: setup.seed)
        let clock = ManualClock(now: 1_000)
        let defaultExpiration: Double? = setup.seed % 2 == 0 ? 20 : nil
        let recorder = EvictionRecorder<Int, Int>()
        let cache = MemoryCache<Int, Int>(
            countLimit: setup.countLimit, totalCostLimit: setup.totalCostLimit, defaultExpiration: defaultExpiration,
            clock: clock, policy: .tinyLFU, evictionHandler: recorder.handler
        )
        var model = ReferenceTinyLFU(
            countLimit: setup.countLimit, totalCostLimit: setup.totalCostLimit, defaultExpiration: defaultExpiration)
        let limitsMove = setup.keySpace <= 40

        for step in 0 ..< 100_000 {
            // The smaller of two draws: small keys come up more often, so counts differ.
            let key = min(Int.random(in: 0 ..< setup.keySpace, using: &random), Int.random(in: 0 ..< setup.keySpace, using: &random))
            let now = clock.now
            let roll = Int.random(in: 0 ..< 1000, using: &random)
            switch roll {
            case 0 ..< 450:
                let got = cache.value(forKey: key)
                let expected = model.value(forKey: key, now: now)
                #expect(got == expected, "step \(step): value(forKey: \(key))")
            case 450 ..< 800:
                let value = Int.random(in: 0 ..< 1_000_000, using: &random)
                let cost = Int.random(in: 0 ..< 12, using: &random)
                let seconds: Double? = Bool.random(using: &random) ? Double(Int.random(in: 0 ..< 30, using: &random)) : nil
                let accepted = model.store(value, forKey: key, cost: cost, seconds: seconds, now: now)
                do {
                    try cache.store(value, forKey: key, cost: cost, expiry: seconds.map { .seconds($0) } ?? .default)
                    #expect(accepted, "step \(step): store was accepted")
                } catch {
                    #expect(!accepted && error.code == .invalidArgument, "step \(step): store threw \(error)")
                }
            case 800 ..< 850:
                #expect(cache.contains(key) == model.contains(key, now: now), "step \(step): contains")
                #expect(cache.remove(forKey: key) == model.remove(forKey: key, now: now), "step \(step): remove")
            case 850 ..< 900:
                clock.advance(by: Double(Int.random(in: 0 ..< 4, using: &random)))
            case 900 ..< 910:
                let count = Int.random(in: 0 ..< 10, using: &random)
                cache.trim(toCount: count)
                model.trim(count: count, reason: .trimmed)
            case 910 ..< 920:
                let cost = Int.random(in: 0 ..< 40, using: &random)
                cache.trim(toCost: cost)
                model.trim(cost: cost, reason: .trimmed)
            case 920 ..< 935 where limitsMove && setup.countLimit > 0:
                let limit = Int.random(in: 1 ..< 14, using: &random)
                cache.countLimit = limit
                model.countLimit = limit
                model.enforceLimits()
            case 935 ..< 950 where limitsMove && setup.totalCostLimit > 0:
                let limit = Int.random(in: 20 ..< 60, using: &random)
                cache.totalCostLimit = limit
                model.totalCostLimit = limit
                model.enforceLimits()
            case 950 ..< 970:
                cache.removeExpired()
                model.removeExpired(now: now)
            case 970 ..< 985:
                let (count, cost) = (model.count / 2, model.totalCost / 2)
                cache.handleMemoryPressure(.warning)
                model.trim(count: count, cost: cost, reason: .memoryPressure)
            case 985 ..< 988:
                cache.handleMemoryPressure(.critical)
                model.trim(count: 0, reason: .memoryPressure)
            case 988 ..< 990:
                cache.removeAll()
                model.removeAll()
            default:
                let got = cache.value(forKey: key)
                let expected = model.value(forKey: key, now: now)
                #expect(got == expected, "step \(step): value(forKey: \(key))")
            }

            // Which keys survive, in which queue order, is the point; totals alone would hide a wrong victim.
            let keys = cache.keys()
            if keys != model.keys {
                Issue.record("step \(step) (roll \(roll), key \(key)): keys \(keys), expected \(model.keys)")
                return
            }
            #expect(cache.count == model.count)
            #expect(cache.totalCost == model.totalCost)
            let events = recorder.drain()
            if events != model.evicted {
                Issue.record("step \(step): evicted \(events), expected \(model.evicted)")
                return
            }
            model.evicted.removeAll()
            if cache.statistics != model.statistics {
                Issue.record("step \(step): statistics \(cache.statistics), expected \(model.statistics)")
                return
            }
            let fraction = cache.state.withLock { $0.storage.order.windowFraction }
            if fraction != model.windowFraction {
                Issue.record("step \(step): window fraction \(fraction), expected \(model.windowFraction)")
                return
            }
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
        let cache = MemoryCache<Int, Int>(countLimit: 100, policy: .tinyLFU)
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
        let cache = MemoryCache<Int, Int>(countLimit: 100, policy: .tinyLFU)
        // A working set of 80 keys, each read many times.
        for _ in 0 ..< 20 {
            for key in 0 ..< 80 where cache.value(forKey: key) == nil { try cache.store(key, forKey: key) }
        }
        // A scan of 10,000 keys read once.
        for key in 1_000 ..< 11_000 where cache.value(forKey: key) == nil { try cache.store(key, forKey: key) }
        let survivors = (0 ..< 80).filter { cache.contains($0) }.count
        #expect(survivors >= 75, "only \(survivors) of the 80 hot keys survived the scan")

        let lru = MemoryCache<Int, Int>(countLimit: 100)
        for _ in 0 ..< 20 {
            for key in 0 ..< 80 where lru.value(forKey: key) == nil { try lru.store(key, forKey: key) }
        }
        for key in 1_000 ..< 11_000 where lru.value(forKey: key) == nil { try lru.store(key, forKey: key) }
        #expect((0 ..< 80).filter { lru.contains($0) }.isEmpty)
    }

    @Test("A loop larger than the cache keeps part of it cached, where LRU misses every time")
    func loopLargerThanCache() throws {
        let tiny = MemoryCache<Int, Int>(countLimit: 500, policy: .tinyLFU)
        let lru = MemoryCache<Int, Int>(countLimit: 500)
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
    func names(policy: EvictionPolicy, name: String) {
        #expect(policy.description == name)
        #expect(MemoryCache<Int, Int>(policy: policy).policy == policy)
        #expect(MemoryCache<Int, Int>().policy == .lru)
    }
}
