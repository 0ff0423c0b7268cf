@testable import Larder
import LarderTestSupport
import Testing

/// A naive reference of `MemoryCache<Int, Int>` under one eviction policy, which the randomized
/// model tests drive step by step beside the real cache.
protocol CacheModel {
    var keys: [Int] { get }
    var count: Int { get }
    var totalCost: Int { get }
    var statistics: CacheStatistics { get }
    /// The eviction events since the driver last compared them.
    var evicted: [EvictionRecorder<Int, Int>.Event] { get set }
    var countLimit: Int { get set }
    var totalCostLimit: Int { get set }

    mutating func value(forKey key: Int, now: Double) -> Int?
    /// A store; `false` when its expiry is rejected (zero seconds), which changes nothing.
    mutating func store(_ value: Int, forKey key: Int, cost: Int, seconds: Double?, now: Double) -> Bool
    /// Whether a live value is stored under `key`; not a use.
    func contains(_ key: Int, now: Double) -> Bool
    /// Whether a live value was removed.
    mutating func remove(forKey key: Int, now: Double) -> Bool
    mutating func removeExpired(now: Double)
    /// Evicts until the count and cost limits hold.
    mutating func enforceLimits()
    mutating func trim(count: Int?, cost: Int?, reason: EvictionReason)
    mutating func removeAll()
}

/// One kind of step of a randomized model test.
enum ModelOperation {
    case read
    /// A store of a random value, cost (0 ..< 12) and expiry (none, or 0 ..< 30 s; 0 is rejected).
    case store
    /// `contains(_:)`, then `remove(forKey:)`.
    case containsThenRemove
    /// The clock moves 0 ..< 4 seconds.
    case advanceClock
    case trimToCount(Range<Int>)
    case trimToCost(Range<Int>)
    case setCountLimit(Range<Int>)
    case setCostLimit(Range<Int>)
    case removeExpired
    case pressureWarning
    case pressureCritical
    case removeAll
}

/// Runs `steps` random operations on `cache` and `model` and checks after each that they agree:
/// values read, stores accepted, keys in order, count, cost, eviction events and statistics.
/// Stops at the first disagreement, recorded as an issue.
///
/// - Parameters:
///   - operations: Each operation with its weight; a step draws one in proportion.
///   - nextKey: Draws the step's key.
///   - check: A further comparison after each step, given its number and the model; `false`
///     stops the run.
/// - Returns: How many stores the cache rejected (with `invalidArgument`, as the model did).
@discardableResult
func runModelComparison<Model: CacheModel>(
    cache: MemoryCache<Int, Int>, model: inout Model, clock: ManualClock, recorder: EvictionRecorder<Int, Int>,
    random: inout SplitMix64, steps: Int = 100_000, operations: [(weight: Int, operation: ModelOperation)],
    nextKey: (inout SplitMix64) -> Int, check: (_ step: Int, _ model: Model) -> Bool = { _, _ in true }
) throws -> Int {
    let totalWeight = operations.reduce(0) { $0 + $1.weight }
    var rejected = 0
    for step in 0 ..< steps {
        let key = nextKey(&random)
        let now = clock.now
        var roll = Int.random(in: 0 ..< totalWeight, using: &random)
        let operation = operations.first { entry in
            roll -= entry.weight
            return roll < 0
        }!.operation
        switch operation {
        case .read:
            #expect(cache.value(forKey: key) == model.value(forKey: key, now: now), "step \(step): value(forKey: \(key))")
        case .store:
            let value = Int.random(in: 0 ..< 1_000_000, using: &random)
            let cost = Int.random(in: 0 ..< 12, using: &random)
            // Seconds of 0 are drawn too: rejected with invalidArgument (they used to expire at once).
            let seconds: Double? = Bool.random(using: &random) ? Double(Int.random(in: 0 ..< 30, using: &random)) : nil
            let accepted = model.store(value, forKey: key, cost: cost, seconds: seconds, now: now)
            do {
                try cache.store(value, forKey: key, cost: cost, expiry: seconds.map { .seconds($0) } ?? .default)
                #expect(accepted, "step \(step): store with \(String(describing: seconds)) s was accepted")
            } catch {
                #expect(!accepted && error.code == .invalidArgument, "step \(step): store threw \(error)")
                rejected += 1
            }
        case .containsThenRemove:
            #expect(cache.contains(key) == model.contains(key, now: now), "step \(step): contains")
            #expect(cache.remove(forKey: key) == model.remove(forKey: key, now: now), "step \(step): remove")
        case .advanceClock:
            clock.advance(by: Double(Int.random(in: 0 ..< 4, using: &random)))
        case .trimToCount(let range):
            let count = Int.random(in: range, using: &random)
            try cache.trim(toCount: count)
            model.trim(count: count, cost: nil, reason: .trimmed)
        case .trimToCost(let range):
            let cost = Int.random(in: range, using: &random)
            try cache.trim(toCost: cost)
            model.trim(count: nil, cost: cost, reason: .trimmed)
        case .setCountLimit(let range):
            let limit = Int.random(in: range, using: &random)
            try cache.setCountLimit(limit)
            model.countLimit = limit
            model.enforceLimits()
        case .setCostLimit(let range):
            let limit = Int.random(in: range, using: &random)
            try cache.setTotalCostLimit(limit)
            model.totalCostLimit = limit
            model.enforceLimits()
        case .removeExpired:
            cache.collectGarbage()
            model.removeExpired(now: now)
        case .pressureWarning:
            let (count, cost) = (model.count / 2, model.totalCost / 2)
            cache.handleMemoryPressure(.warning)
            model.trim(count: count, cost: cost, reason: .memoryPressure)
        case .pressureCritical:
            cache.handleMemoryPressure(.critical)
            model.trim(count: 0, cost: nil, reason: .memoryPressure)
        case .removeAll:
            cache.removeAll()
            model.removeAll()
        }

        // Which keys survive, in which order, is the point; totals alone would hide a wrong victim.
        let keys = cache.keys()
        if keys != model.keys {
            Issue.record("step \(step) (\(operation), key \(key)): keys \(keys), expected \(model.keys)")
            return rejected
        }
        #expect(cache.count == model.count)
        #expect(cache.totalCost == model.totalCost)
        let events = recorder.drain()
        if events != model.evicted {
            Issue.record("step \(step): evicted \(events), expected \(model.evicted)")
            return rejected
        }
        model.evicted.removeAll()
        if cache.statistics != model.statistics {
            Issue.record("step \(step): statistics \(cache.statistics), expected \(model.statistics)")
            return rejected
        }
        guard check(step, model) else { return rejected }
    }
    return rejected
}
