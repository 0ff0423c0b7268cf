import Foundation
import Larder
import Synchronization
import LarderTestSupport

// The memory suite: MemoryCache against the floor for a thread-safe hash cache (a dictionary
// behind a mutex) and against Foundation's NSCache, on the same keys, values and access order.
// `larder` is MemoryCache's default (exact LRU); `larder-recommended` uses
// `EvictionPolicy.recommended` (TinyLFU), as HybridCache's memory tier does.

/// A `Mutex<[String: Data]>`: no recency order, no limits, just the lock and the hash table.
private final class MutexDictionary: Sendable {
    private let storage = Mutex<[String: Data]>([:])

    func value(forKey key: String) -> Data? {
        storage.withLock { $0[key] }
    }

    func setValue(_ value: Data, forKey key: String) {
        storage.withLock { $0[key] = value }
    }
}

/// The operations a case needs, so that each case is written once for every implementation.
private struct MemoryImplementation {
    var name: String
    /// Makes an empty cache holding at most `countLimit` entries (0: no limit) and returns its
    /// get and set operations.
    var make: (_ countLimit: Int) -> (get: (Int) -> Int, set: (Int) -> Void)
}

func runMemorySuite(_ context: BenchContext) throws {
    let payload = Data(repeating: 0xA5, count: 64)
    let defaultN = context.quick ? 10_000 : 100_000
    let getHitSizes = context.quick ? [1_000, 10_000, 100_000] : [1_000, 100_000, 1_000_000]
    let iterations = context.quick ? 200_000 : 1_000_000
    let repeats = context.quick ? 3 : 5
    let largest = max(defaultN, getHitSizes.max()!)

    // Keys as the caller would hold them: Strings for the Swift caches, NSStrings for NSCache
    // (bridging on every call would charge NSCache for our choice of key type).
    let keys = (0 ..< largest).map { "key-\($0)" }
    let missKeys = (0 ..< defaultN).map { "miss-\($0)" }
    let nsKeys = keys.map { $0 as NSString }
    let nsMissKeys = missKeys.map { $0 as NSString }
    let nsPayload = payload as NSData

    // Each implementation's get takes a key number (negative: the miss key -1 - i) and returns
    // the value's size, which the loop adds up so the reads cannot be optimized away.
    let implementations = [
        MemoryImplementation(name: "larder") { countLimit in
            let cache = benchMemoryCache(countLimit: countLimit, policy: .lru) as MemoryCache<String, Data>
            return (
                { i in cache.value(forKey: i >= 0 ? keys[i] : missKeys[-1 - i])?.count ?? 0 },
                { i in try? cache.store(payload, forKey: keys[i]) }
            )
        },
        MemoryImplementation(name: "larder-recommended") { countLimit in
            let cache = benchMemoryCache(countLimit: countLimit, policy: .recommended) as MemoryCache<String, Data>
            return (
                { i in cache.value(forKey: i >= 0 ? keys[i] : missKeys[-1 - i])?.count ?? 0 },
                { i in try? cache.store(payload, forKey: keys[i]) }
            )
        },
        MemoryImplementation(name: "mutex-dictionary") { _ in
            let cache = MutexDictionary()
            return (
                { i in cache.value(forKey: i >= 0 ? keys[i] : missKeys[-1 - i])?.count ?? 0 },
                { i in cache.setValue(payload, forKey: keys[i]) }
            )
        },
        MemoryImplementation(name: "nscache") { countLimit in
            let cache = NSCache<NSString, NSData>()
            cache.countLimit = countLimit
            return (
                { i in cache.object(forKey: i >= 0 ? nsKeys[i] : nsMissKeys[-1 - i])?.length ?? 0 },
                { i in cache.setObject(nsPayload, forKey: nsKeys[i]) }
            )
        },
    ]

    var random = SplitMix64(seed: 42)

    /// Reads `iterations` keys, cycling through a random order of `probes`.
    func readLoop(_ get: (Int) -> Int, probes: [Int]) -> Double {
        context.measure(iterations: iterations, repeats: repeats) {
            var total = 0
            var k = 0
            for _ in 0 ..< iterations {
                total &+= get(probes[k])
                k += 1
                if k == probes.count { k = 0 }
            }
            blackHole(total)
        }
    }

    for n in getHitSizes {
        let probes = Array(0 ..< n).shuffled(using: &random)
        for implementation in implementations {
            let cache = implementation.make(0)
            for i in 0 ..< n { cache.set(i) }
            let nsPerOp = readLoop(cache.get, probes: probes)
            context.report(suite: "memory", case: "get-hit", impl: implementation.name, n: n, bytes: payload.count, nsPerOp: nsPerOp)
        }
    }

    let missProbes = (0 ..< defaultN).map { -1 - $0 }.shuffled(using: &random)
    for implementation in implementations {
        let cache = implementation.make(0)
        for i in 0 ..< defaultN { cache.set(i) }
        let nsPerOp = readLoop(cache.get, probes: missProbes)
        context.report(suite: "memory", case: "get-miss", impl: implementation.name, n: defaultN, bytes: payload.count, nsPerOp: nsPerOp)
    }

    // n distinct keys cycling through a cache that holds n/2: every set inserts and evicts (the
    // dictionary, which has no limit, overwrites instead: a plain insert).
    for implementation in implementations {
        let cache = implementation.make(defaultN / 2)
        var k = 0
        let nsPerOp = context.measure(iterations: iterations, repeats: repeats) {
            for _ in 0 ..< iterations {
                cache.set(k)
                k += 1
                if k == defaultN { k = 0 }
            }
        }
        context.report(suite: "memory", case: "set-evict", impl: implementation.name, n: defaultN, bytes: payload.count, nsPerOp: nsPerOp)
    }
}

/// A memory cache of `countLimit` entries for a benchmark, whose limits the suite computes:
/// one the cache rejects is a bug in the suite, so it ends the run.
func benchMemoryCache<Key: Hashable & Sendable, Value: Sendable>(countLimit: Int, policy: EvictionPolicy) -> MemoryCache<Key, Value> {
    do {
        return try MemoryCache(countLimit: countLimit, policy: policy)
    } catch {
        fatalError("a memory cache of \(countLimit) entries: \(error)")
    }
}
