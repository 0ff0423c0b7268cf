@testable import Larder
import LarderTestSupport
import Testing

/// A deliberately naive LRU cache: an array in recency order, linear scans everywhere. It spells
/// out the semantics `MemoryCache` must match exactly.
private struct ReferenceLRU: CacheModel {
    struct Entry {
        var key: Int
        var value: Int
        var cost: Int
        var deadline: Double
    }

    var entries: [Entry] = []  // least recently used first
    var countLimit: Int
    var totalCostLimit: Int
    var defaultExpiration: Double?
    var statistics = CacheStatistics()
    var evicted: [EvictionRecorder<Int, Int>.Event] = []

    var keys: [Int] { entries.map(\.key) }
    var count: Int { entries.count }
    var totalCost: Int { entries.reduce(0) { $0 + $1.cost } }

    mutating func value(forKey key: Int, now: Double) -> Int? {
        guard let i = entries.firstIndex(where: { $0.key == key }) else {
            statistics.misses += 1
            return nil
        }
        if now >= entries[i].deadline {
            let entry = entries.remove(at: i)
            statistics.expirations += 1
            statistics.misses += 1
            evicted.append(.init(key: key, value: entry.value, reason: .expired))
            return nil
        }
        let entry = entries.remove(at: i)
        entries.append(entry)
        statistics.hits += 1
        return entry.value
    }

    mutating func store(_ value: Int, forKey key: Int, cost: Int, seconds: Double?, now: Double) -> Bool {
        if let seconds, !(seconds.isFinite && seconds > 0) { return false }
        let deadline = (seconds ?? defaultExpiration).map { now + $0 } ?? .infinity
        entries.removeAll { $0.key == key }
        if totalCostLimit > 0 && cost > totalCostLimit { return true }
        entries.append(Entry(key: key, value: value, cost: cost, deadline: deadline))
        statistics.insertions += 1
        enforceLimits()
        return true
    }

    func contains(_ key: Int, now: Double) -> Bool {
        entries.contains { $0.key == key && now < $0.deadline }
    }

    mutating func remove(forKey key: Int, now: Double) -> Bool {
        guard let i = entries.firstIndex(where: { $0.key == key }) else { return false }
        let entry = entries.remove(at: i)
        if now >= entry.deadline {
            statistics.expirations += 1
            evicted.append(.init(key: key, value: entry.value, reason: .expired))
            return false
        }
        return true
    }

    mutating func removeExpired(now: Double) {
        for entry in entries where now >= entry.deadline {
            statistics.expirations += 1
            statistics.evictions[.expired, default: 0] += 1
            evicted.append(.init(key: entry.key, value: entry.value, reason: .expired))
        }
        entries.removeAll { now >= $0.deadline }
    }

    mutating func evictFirst(_ reason: EvictionReason) {
        let entry = entries.removeFirst()
        statistics.evictions[reason, default: 0] += 1
        evicted.append(.init(key: entry.key, value: entry.value, reason: reason))
    }

    mutating func enforceLimits() {
        while countLimit > 0 && entries.count > countLimit { evictFirst(.countLimit) }
        while totalCostLimit > 0 && totalCost > totalCostLimit { evictFirst(.costLimit) }
    }

    mutating func trim(count: Int?, cost: Int?, reason: EvictionReason) {
        while entries.count > (count ?? .max) || totalCost > (cost ?? .max) { evictFirst(reason) }
    }

    mutating func removeAll() {
        entries.removeAll()
    }
}

@Suite("MemoryCache against a reference LRU")
struct MemoryCacheModelTests {
    @Test("100,000 random operations match the reference after every step", arguments: [1, 2, 3, 0xDEAD_BEEF] as [UInt64])
    func randomOperations(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let clock = ManualClock(now: 1_000)
        let defaultExpiration: Double? = seed % 2 == 0 ? 20 : nil
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(
            countLimit: 8, totalCostLimit: 40, defaultExpiration: defaultExpiration, clock: clock,
            evictionHandler: recorder.handler
        )
        var model = ReferenceLRU(countLimit: 8, totalCostLimit: 40, defaultExpiration: defaultExpiration)
        let rejected = try runModelComparison(
            cache: cache, model: &model, clock: clock, recorder: recorder, random: &random,
            operations: [
                (350, .read), (350, .store), (80, .containsThenRemove), (70, .advanceClock),
                (20, .trimToCount(0 ..< 10)), (20, .trimToCost(0 ..< 40)), (30, .setCountLimit(0 ..< 14)),
                (30, .setCostLimit(0 ..< 60)), (20, .removeExpired), (20, .pressureWarning), (5, .pressureCritical),
                (5, .removeAll),
            ],
            nextKey: { Int.random(in: 0 ..< 24, using: &$0) }
        )
        // The run must have exercised the interesting paths, or the comparison proves little.
        #expect(model.statistics.hits > 1_000)
        #expect(model.statistics.totalEvictions > 1_000)
        #expect(model.statistics.expirations > 100 || defaultExpiration == nil)
        #expect(rejected > 100)
    }

    @Test("Growing and shrinking through thousands of keys keeps every lookup right", arguments: [7, 8] as [UInt64])
    func largeKeySpace(seed: UInt64) throws {
        // The reference LRU is too slow for thousands of entries; a dictionary checks membership
        // and values while the index grows and its probe runs shift on removal.
        var random = SplitMix64(seed: seed)
        let cache = try MemoryCache<Int, Int>()
        var reference: [Int: Int] = [:]
        for step in 0 ..< 100_000 {
            let key = Int.random(in: 0 ..< 6_000, using: &random)
            switch Int.random(in: 0 ..< 10, using: &random) {
            case 0 ..< 4:
                let value = Int.random(in: 0 ..< 1_000, using: &random)
                try cache.store(value, forKey: key)
                reference[key] = value
            case 4 ..< 7:
                // remove(forKey:) reports only whether a value went; its value is checked first.
                let expected = reference.removeValue(forKey: key)
                #expect(cache.value(forKey: key) == expected, "step \(step)")
                #expect(cache.remove(forKey: key) == (expected != nil), "step \(step)")
            default:
                #expect(cache.value(forKey: key) == reference[key], "step \(step)")
            }
            if step % 10_000 == 0 {
                #expect(cache.count == reference.count)
                #expect(Set(cache.keys()) == Set(reference.keys))
            }
        }
        #expect(cache.count == reference.count)
        #expect(reference.keys.allSatisfy { cache.value(forKey: $0) == reference[$0] })
    }
}
