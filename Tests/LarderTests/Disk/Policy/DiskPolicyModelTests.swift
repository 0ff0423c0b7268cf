import LarderTestSupport
import Testing
@testable import Larder

/// What the model tests need of a disk policy.
protocol DiskPolicyUnderTest {
    var capacity: Int { get }
    var byteCount: Int { get }
    var count: Int { get }
    var evictionOrder: [Int32] { get }
    func contains(_ id: Int32) -> Bool
    mutating func access(_ id: Int32)
    mutating func insert(_ id: Int32, size: Int, hash: UInt32, evicting evict: (Int32) -> Void) -> Bool
    mutating func remove(_ id: Int32)
}

extension DiskLRUPolicy: DiskPolicyUnderTest {
    mutating func insert(_ id: Int32, size: Int, hash: UInt32, evicting evict: (Int32) -> Void) -> Bool {
        insert(id, size: size, evicting: evict)
    }
}

/// A ``DiskAdaptivePolicy`` with the hash each id was inserted with kept beside it, as the disk
/// index computes them from its records' names.
struct HashedAdaptivePolicy: DiskPolicyUnderTest {
    var policy: DiskAdaptivePolicy
    var hashes: [Int32: UInt32] = [:]

    init(capacity: Int, seed: UInt64 = 0) {
        policy = DiskAdaptivePolicy(capacity: capacity, seed: seed)
    }

    var capacity: Int { policy.capacity }
    var byteCount: Int { policy.byteCount }
    var count: Int { policy.count }
    var evictionOrder: [Int32] { policy.evictionOrder }
    func contains(_ id: Int32) -> Bool { policy.contains(id) }

    mutating func access(_ id: Int32) {
        policy.access(id, hash: hashes[id] ?? 0)
    }

    @discardableResult
    mutating func insert(_ id: Int32, size: Int, hash: UInt32, evicting evict: (Int32) -> Void) -> Bool {
        hashes[id] = hash
        let hashes = hashes
        return policy.insert(id, size: size, hash: hash, hashOf: { hashes[$0]! }, evicting: evict)
    }

    mutating func remove(_ id: Int32) {
        policy.remove(id, hash: hashes[id] ?? 0)
    }
}

/// The disk tier's policies against a naive model (the ids held and their sizes, and for LRU
/// their order), under random uses, insertions (some larger than the whole capacity) and
/// removals, checked after every step.
@Suite struct DiskPolicyModelTests {
    /// Drives `policy` with `steps` random operations from `seed`; `lruOrder` also checks that
    /// the victims are the least recently used and the order matches the model's.
    static func run<P: DiskPolicyUnderTest>(_ policy: inout P, seed: UInt64, steps: Int, lruOrder: Bool) {
        var random = SplitMix64(seed: seed)
        var held: [Int32: Int] = [:]
        var recency: [Int32] = []  // least recent first
        var removed: Set<Int32> = []
        var nextID: Int32 = 0
        // Keys come back after removal or eviction under a new id, as the index reuses no key's
        // slot while the record is gone; the sketch still knows them by hash.
        for step in 0 ..< steps {
            let roll = random.below(10)
            if roll < 4, !recency.isEmpty {
                let id = recency[random.below(recency.count)]
                policy.access(id)
                recency.removeAll { $0 == id }
                recency.append(id)
            } else if roll < 5, !recency.isEmpty {
                let id = recency[random.below(recency.count)]
                policy.remove(id)
                held[id] = nil
                recency.removeAll { $0 == id }
                removed.insert(id)
            } else {
                let id = nextID
                nextID += 1
                // Mostly small, a few large, one in fifty larger than the capacity.
                let size =
                    random.below(50) == 0 ? policy.capacity + 1 + random.below(100) : 1 + random.below(random.below(8) == 0 ? 4_000 : 400)
                let hash = UInt32(random.below(300))
                var victims: [Int32] = []
                let admitted = policy.insert(id, size: size, hash: hash) { victims.append($0) }
                for victim in victims {
                    #expect(held[victim] != nil, "step \(step): victim \(victim) is not held")
                    #expect(!removed.contains(victim), "step \(step): removed \(victim) came back as a victim")
                    held[victim] = nil
                }
                if lruOrder {
                    #expect(victims == Array(recency.prefix(victims.count)), "step \(step): LRU evicted out of order")
                }
                recency.removeAll { victims.contains($0) }
                if size > policy.capacity {
                    #expect(!admitted && victims.isEmpty, "step \(step): a record larger than the capacity was admitted")
                }
                #expect(admitted == policy.contains(id))
                if admitted {
                    held[id] = size
                    recency.append(id)
                }
            }
            #expect(policy.byteCount <= policy.capacity, "step \(step): \(policy.byteCount) bytes over \(policy.capacity)")
            #expect(policy.byteCount == held.values.reduce(0, +), "step \(step)")
            #expect(policy.count == held.count, "step \(step)")
            for id in removed { #expect(!policy.contains(id), "step \(step): removed \(id) came back") }
            let order = policy.evictionOrder
            #expect(Set(order) == Set(held.keys) && order.count == held.count, "step \(step): the eviction order is not the records held")
            if lruOrder { #expect(order == recency, "step \(step)") }
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func lruMatchesTheModel(seed: UInt64) {
        var policy = DiskLRUPolicy(capacity: 20_000)
        Self.run(&policy, seed: seed, steps: 3_000, lruOrder: true)
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func adaptivePolicyKeepsItsLimits(seed: UInt64) {
        var policy = HashedAdaptivePolicy(capacity: 20_000)
        Self.run(&policy, seed: seed, steps: 3_000, lruOrder: false)
    }

    @Test func aZeroCapacityAdmitsNothing() {
        var lru = DiskLRUPolicy(capacity: 0)
        var adaptive = HashedAdaptivePolicy(capacity: 0)
        #expect(!lru.insert(0, size: 1) { _ in Issue.record("nothing to evict") })
        #expect(!adaptive.insert(0, size: 1, hash: 0) { _ in Issue.record("nothing to evict") })
        #expect(lru.count == 0 && adaptive.count == 0)
    }

    /// A record used often keeps its place against a stream of records used once: the contest
    /// refuses newcomers used less often than the victims they would displace.
    @Test func aOneOffScanDoesNotFlushFrequentRecords() {
        var policy = HashedAdaptivePolicy(capacity: 10_000)
        var id: Int32 = 0
        var hot: [Int32] = []
        for i in 0 ..< 50 {
            policy.insert(id, size: 100, hash: UInt32(i)) { _ in }
            hot.append(id)
            id += 1
        }
        for _ in 0 ..< 5 { for record in hot { policy.access(record) } }
        for i in 0 ..< 2_000 {
            guard policy.insert(id, size: 100, hash: UInt32(1_000 + i), evicting: { _ in }) else {
                id += 1
                continue
            }
            id += 1
        }
        let kept = hot.filter { policy.contains($0) }.count
        #expect(kept >= 45, "only \(kept) of 50 frequent records survived a scan of 2,000 one-off records")
    }

    /// Of records used as often, the bigger go first: small records inserted before big ones
    /// outlast them when newcomers used more often take their bytes (oldest first would
    /// evict the small ones).
    @Test func smallRecordsOutlastBigOnesUsedAsOften() {
        var policy = HashedAdaptivePolicy(capacity: 100_000)
        var id: Int32 = 0
        var small: [Int32] = []
        var big: [Int32] = []
        for i in 0 ..< 40 {
            policy.insert(id, size: 1_000, hash: UInt32(i)) { _ in }
            small.append(id)
            id += 1
        }
        for i in 0 ..< 11 {
            policy.insert(id, size: 5_000, hash: UInt32(100 + i)) { _ in }
            big.append(id)
            id += 1
        }
        // Newcomers, each requested (so counted) until it is admitted.
        var victims: [Int32] = []
        for i in 0 ..< 20 {
            while !policy.insert(id, size: 1_000, hash: UInt32(1_000 + i), evicting: { victims.append($0) }) { id += 1 }
            id += 1
        }
        let smallLost = small.filter { !policy.contains($0) }.count
        let bigLost = big.filter { !policy.contains($0) }.count
        #expect(smallLost <= 2, "\(smallLost) small and \(bigLost) big records were evicted")
        #expect(bigLost >= 3, "\(smallLost) small and \(bigLost) big records were evicted")
    }

    /// The policy is a value: a copy given the same requests evicts the same records, so a
    /// policy restored from its stored properties decides as the saved one would have (the
    /// victims' random draws included).
    @Test func aCopyDecidesAsTheOriginal() {
        var original = HashedAdaptivePolicy(capacity: 50_000)
        var random = SplitMix64(seed: 7)
        var held: [Int32] = []
        var id: Int32 = 0
        func step(_ policy: inout HashedAdaptivePolicy, _ random: inout SplitMix64, _ held: inout [Int32], _ id: inout Int32) -> [Int32] {
            var victims: [Int32] = []
            if random.below(3) == 0, !held.isEmpty {
                policy.access(held[random.below(held.count)])
            } else {
                let size = 100 + random.below(random.below(4) == 0 ? 5_000 : 900)
                if policy.insert(id, size: size, hash: UInt32(random.below(400)), evicting: { victims.append($0) }) { held.append(id) }
                id += 1
                held.removeAll { victims.contains($0) }
            }
            return victims
        }
        for _ in 0 ..< 3_000 { _ = step(&original, &random, &held, &id) }
        var copy = original
        var (copyRandom, copyHeld, copyID) = (random, held, id)
        var evictions = 0
        for index in 0 ..< 3_000 {
            let victims = step(&original, &random, &held, &id)
            let copyVictims = step(&copy, &copyRandom, &copyHeld, &copyID)
            evictions += victims.count
            #expect(victims == copyVictims, "step \(index): the copy evicted \(copyVictims), the original \(victims)")
        }
        #expect(evictions > 100)
        #expect(original.evictionOrder == copy.evictionOrder)
    }

    /// The seed chooses the victims' draws: a policy given the same requests under the same
    /// seed evicts the same records, and under another seed other records. The cache holds
    /// about two thousand records, so that probation holds many more than a contest draws.
    @Test func theSeedChoosesTheDraws() {
        func victims(seed: UInt64) -> [Int32] {
            var policy = HashedAdaptivePolicy(capacity: 2_000_000, seed: seed)
            var random = SplitMix64(seed: 7)
            var held: [Int32] = []
            var evicted: [Int32] = []
            for id in 0 ..< 10_000 as Range<Int32> {
                if random.below(3) == 0, !held.isEmpty { policy.access(held[random.below(held.count)]) }
                let size = 100 + random.below(random.below(4) == 0 ? 5_000 : 900)
                var victims: [Int32] = []
                if policy.insert(id, size: size, hash: UInt32(random.below(400)), evicting: { victims.append($0) }) {
                    held.append(id)
                }
                held.removeAll { victims.contains($0) }
                evicted += victims
            }
            return evicted
        }
        let first = victims(seed: 1)
        #expect(first.count > 1_000)
        #expect(victims(seed: 1) == first)
        #expect(victims(seed: 2) != first)
    }
}
