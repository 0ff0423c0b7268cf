@testable import Larder
import LarderTestSupport
import Testing

/// TinyLFU's window keeps nearly LRU order although a hit only writes a stamp, the window grows
/// quickly when the workload is all recency, and the check against a sampled LRU holds it up
/// where the histories alone would not.
@Suite("TinyLFU's recency window")
struct TinyLFUWindowTests {
    /// A working set of `workingSet` consecutive keys, read uniformly, sliding one key every
    /// `requestsPerKey` requests, for ten working sets' worth of keys.
    static func drift(workingSet: Int, requestsPerKey: Int, seed: UInt64) -> [Int] {
        var random = SplitMix64(seed: seed)
        return (0 ..< 10 * workingSet * requestsPerKey).map { $0 / requestsPerKey + random.below(workingSet) }
    }

    /// Replays `trace` (get; on a miss, store) and returns the misses. `prepare` runs before each request.
    static func misses(_ trace: [Int], cache: MemoryCache<Int, Int>, prepare: () -> Void = {}) throws -> Int {
        var misses = 0
        for key in trace {
            prepare()
            if cache.value(forKey: key) == nil {
                misses += 1
                try cache.store(key, forKey: key)
            }
        }
        return misses
    }

    @Test("A window as large as the cache misses within 1 % of exact LRU on a sliding working set")
    func windowIsNearlyLRU() throws {
        let trace = Self.drift(workingSet: 500, requestsPerKey: 20, seed: 5)
        let lru = try Self.misses(trace, cache: try MemoryCache(countLimit: 550))
        let tiny = try MemoryCache<Int, Int>(countLimit: 550, policy: .tinyLFU)
        // The whole cache is window: its order alone decides.
        let tinyMisses = try Self.misses(trace, cache: tiny) {
            tiny.state.withLock { $0.storage.order.windowFraction = 1 }
        }
        #expect(tiny.state.withLock { $0.storage.order.probation.count + $0.storage.order.protected.count } == 0)
        #expect(Double(tinyMisses) <= 1.01 * Double(lru), "window \(tinyMisses) misses, LRU \(lru)")
    }

    @Test("On a working set sliding past a cache of 110 % of it, TinyLFU's window grows and it misses at most 1.05 × LRU")
    func slidingWorkingSet() throws {
        let trace = Self.drift(workingSet: 500, requestsPerKey: 50, seed: 6)
        let lru = try Self.misses(trace, cache: try MemoryCache(countLimit: 550))
        let tiny = try MemoryCache<Int, Int>(countLimit: 550, policy: .tinyLFU)
        let tinyMisses = try Self.misses(trace, cache: tiny)
        #expect(tiny.state.withLock { $0.storage.order.windowFraction } > 0.5)
        #expect(Double(tinyMisses) <= 1.05 * Double(lru), "TinyLFU \(tinyMisses) misses, LRU \(lru)")
    }

    @Test("On a working set sliding fast past a cache of 55 % of it, the check against LRU holds the window up")
    func fastSlidingWorkingSet() throws {
        // The histories alone settle at a third of the cache here, and miss about 1.2 × LRU.
        let trace = Self.drift(workingSet: 2_000, requestsPerKey: 10, seed: 7)
        let lru = try Self.misses(trace, cache: try MemoryCache(countLimit: 1_100))
        let tiny = try MemoryCache<Int, Int>(countLimit: 1_100, policy: .tinyLFU)
        var highestFloor = 0.0
        let tinyMisses = try Self.misses(trace, cache: tiny) {
            highestFloor = max(highestFloor, tiny.state.withLock { $0.storage.order.windowFloor })
        }
        #expect(highestFloor >= 0.75)
        #expect(Double(tinyMisses) <= 1.03 * Double(lru), "TinyLFU \(tinyMisses) misses, LRU \(lru)")
    }

    @Test(
        "The sample: every key below 8,192 entries, else 2,048 to 8,191 keys' worth",
        arguments: [(1_000, 0), (8_191, 0), (8_192, 1), (9_000, 1), (16_384, 2), (100_000, 4), (1_000_000, 7)])
    func sampleRate(countLimit: Int, shift: Int) throws {
        let cache = try MemoryCache<Int, Int>(countLimit: countLimit, policy: .tinyLFU)
        try cache.store(1, forKey: 1)
        let (mask, shadowCapacity) = cache.state.withLock { ($0.storage.order.sampleMask, $0.storage.order.shadow.capacity) }
        #expect(mask == UInt32((1 << shift) - 1))
        #expect(shadowCapacity == countLimit >> shift)
        #expect((2_048 ..< 8_192).contains(shadowCapacity) || shift == 0)
    }

    @Test("While the cache is full, the shadow LRU holds as many keys as the cache holds sampled ones")
    func shadowFollowsTheSampledEntries() throws {
        // 9,000 entries: half the keys are sampled, so the scaled capacity would be 4,500, while
        // the sampled share of the cached working set strays from half as it slides.
        let trace = Self.drift(workingSet: 8_200, requestsPerKey: 50, seed: 8).prefix(200_000)
        let lru = try Self.misses(Array(trace), cache: try MemoryCache(countLimit: 9_000))
        let tiny = try MemoryCache<Int, Int>(countLimit: 9_000, policy: .tinyLFU)
        var checked = 0
        var strayed = 0
        var step = 0
        let tinyMisses = try Self.misses(Array(trace), cache: tiny) {
            step += 1
            guard step % 97 == 0 else { return }
            tiny.state.withLock {
                let order = $0.storage.order
                guard order.count >= order.capacity else { return }
                #expect(order.sampleMask == 1)
                // Set at each sampled request; the inserts and evictions since may have moved the count a little.
                #expect(abs(order.shadow.capacity - order.sampledEntries) <= 16)
                #expect(order.shadow.count <= order.shadow.capacity)
                checked += 1
                if order.sampledEntries != order.capacity >> 1 { strayed += 1 }
            }
        }
        #expect(checked > 1_000)
        #expect(strayed > checked / 2, "the sampled share matched the rate at \(checked - strayed) of \(checked) steps")
        // A short trace: the window's climb to the whole cache weighs more than in `hitratio`.
        #expect(Double(tinyMisses) <= 1.1 * Double(lru), "TinyLFU \(tinyMisses) misses, LRU \(lru)")
    }

    @Test("The shadow LRU holds what an LRU of its capacity holds", arguments: [1, 7, 50])
    func shadowLRU(capacity: Int) {
        var random = SplitMix64(seed: UInt64(capacity))
        var shadow = ShadowLRU(capacity: capacity)
        var model: [UInt32] = []  // least recently used first
        var modelCapacity = capacity
        var hits = 0
        for step in 0 ..< 20_000 {
            let hash = UInt32(random.below(3 * capacity + 3))
            switch random.below(20) {
            case 0:
                shadow.remove(hash)
                model.removeAll { $0 == hash }
            case 1:
                let keep = random.below(capacity + 2)
                shadow.removeLeastRecent(keeping: keep)
                if model.count > keep { model.removeFirst(model.count - keep) }
            case 2:
                modelCapacity = 1 + random.below(2 * capacity)
                shadow.capacity = modelCapacity
            default:
                let hit = model.contains(hash)
                if hit {
                    hits += 1
                    model.removeAll { $0 == hash }
                } else {
                    while model.count >= modelCapacity { model.removeFirst() }
                }
                model.append(hash)
                guard shadow.access(hash) == hit else {
                    Issue.record("step \(step): access(\(hash)) hit \(!hit), expected \(hit)")
                    return
                }
            }
            guard shadow.hashesInOrder() == model && shadow.count == model.count else {
                Issue.record("step \(step): \(shadow.hashesInOrder()), expected \(model)")
                return
            }
        }
        #expect(hits > 500)
    }

    @Test("A hit writes the clock into a window entry's stamp, and nothing into a main entry once its count is full; it moves nothing")
    func hitWritesStamp() throws {
        let cache = try MemoryCache<Int, Int>(countLimit: 100, policy: .tinyLFU)
        for i in 0 ..< 10 { try cache.store(i, forKey: i) }
        let before = cache.keys()
        func link(_ key: Int) -> EvictionLink {
            cache.state.withLock { state in state.storage.nodes.first { $0.key == key }!.evictionLink }
        }
        // The newest entry is in the window (its share is one entry here), the others in probation.
        #expect(link(9).queue == EvictionOrder.window)
        #expect(link(3).queue == EvictionOrder.probation)
        #expect(cache.value(forKey: 9) == 9)
        let clock = cache.state.withLock { $0.storage.order.clock }
        #expect(clock == 11)  // ten insertions and one hit
        #expect(UInt64(link(9).stamp) == clock)
        // A main entry: its count and bit change until the count is full, its stamp never.
        let stamp = link(3).stamp
        for _ in 0 ..< 20 { #expect(cache.value(forKey: 3) == 3) }
        #expect(link(3).stamp == stamp)
        #expect(link(3).marks & EvictionOrder.referenced != 0)
        #expect(link(3).marks >> 4 == 15)
        let full = link(3)
        #expect(cache.value(forKey: 3) == 3)
        #expect(link(3).marks == full.marks && link(3).stamp == full.stamp)
        #expect(cache.keys() == before)
    }
}
