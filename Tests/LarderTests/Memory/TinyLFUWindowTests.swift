@testable import Larder
import LarderTestSupport
import Testing

/// TinyLFU's window keeps nearly LRU order although a hit only writes a stamp, and the window
/// grows quickly when the workload is all recency.
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
        let lru = try Self.misses(trace, cache: MemoryCache(countLimit: 550))
        let tiny = MemoryCache<Int, Int>(countLimit: 550, policy: .tinyLFU)
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
        let lru = try Self.misses(trace, cache: MemoryCache(countLimit: 550))
        let tiny = MemoryCache<Int, Int>(countLimit: 550, policy: .tinyLFU)
        let tinyMisses = try Self.misses(trace, cache: tiny)
        #expect(tiny.state.withLock { $0.storage.order.windowFraction } > 0.5)
        #expect(Double(tinyMisses) <= 1.05 * Double(lru), "TinyLFU \(tinyMisses) misses, LRU \(lru)")
    }

    @Test("A hit writes the clock into the entry's stamp; it moves nothing")
    func hitWritesStamp() throws {
        let cache = MemoryCache<Int, Int>(countLimit: 100, policy: .tinyLFU)
        for i in 0 ..< 10 { try cache.store(i, forKey: i) }
        let before = cache.keys()
        #expect(cache.value(forKey: 3) == 3)
        let (stamp, clock) = cache.state.withLock { state in
            (state.storage.nodes.first { $0.key == 3 }!.evictionLink.stamp, state.storage.order.clock)
        }
        #expect(clock == 11)  // ten insertions and one hit
        #expect(UInt64(stamp) == clock)
        #expect(cache.keys() == before)
    }
}
