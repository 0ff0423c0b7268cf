import LarderTestSupport
import Testing
@testable import Larder

/// The adaptive policy's state as the index image stores it: saved, encoded, decoded and
/// restored, it decides as the policy it was saved from; a section that is damaged or does not
/// fit is refused, never trusted.
@Suite struct StoredPolicyTests {
    static let capacity = 200_000

    /// Drives `mirror` with seeded stores of new keys (sizes from 100 bytes to 40 KB) and uses of
    /// held ones, skewed towards the first keys.
    /// - Returns: The keys evicted, step by step.
    @discardableResult
    static func drive(_ mirror: inout AdaptivePolicyMirror, seed: UInt64, steps: Int, keyOffset: Int) -> [[String]] {
        var random = SplitMix64(seed: seed)
        var nextKey = keyOffset
        var evicted: [[String]] = []
        for _ in 0 ..< steps {
            let held = mirror.ids.keys.sorted()
            if random.below(2) == 0, !held.isEmpty {
                mirror.access(held[min(random.below(held.count), random.below(held.count))])
                evicted.append([])
            } else {
                let size = random.below(8) == 0 ? 10_000 + random.below(30_000) : 100 + random.below(4_000)
                evicted.append(mirror.insert("k\(nextKey)", size: size))
                nextKey += 1
            }
        }
        return evicted
    }

    /// The mirror's policy restored from `stored` under new ids (the saved ids reversed), as an
    /// index restores it from its image; the positions are the saved ids.
    static func restored(_ stored: StoredPolicy, from mirror: AdaptivePolicyMirror) -> AdaptivePolicyMirror? {
        var copy = AdaptivePolicyMirror(capacity: capacity)
        let last = mirror.nextID
        guard
            let policy = DiskAdaptivePolicy(
                restoring: stored, capacity: capacity,
                record: { position in
                    guard let key = mirror.keys[Int32(position)], mirror.ids[key] == Int32(position) else { return nil }
                    return (last - Int32(position), mirror.policy.queues.size(of: Int32(position)), AdaptivePolicyMirror.hash(key))
                })
        else { return nil }
        copy.policy = policy
        for (key, id) in mirror.ids {
            copy.ids[key] = last - id
            copy.keys[last - id] = key
        }
        copy.nextID = last + 1
        return copy
    }

    @Test(arguments: [1 as UInt64, 2, 3])
    func aRestoredPolicyEvictsAsTheOneItWasSavedFrom(seed: UInt64) throws {
        var original = AdaptivePolicyMirror(capacity: Self.capacity)
        Self.drive(&original, seed: seed, steps: 3_000, keyOffset: 0)
        let stored = original.storedPolicy()
        // What it stores is all there: every record, the sketch, the sampled LRU.
        #expect(stored.queues.map(\.count).reduce(0, +) == original.policy.count)
        #expect(stored.probationDraws.count == stored.queues[1].count)
        #expect(!stored.sketch.isEmpty && !stored.shadow.isEmpty)
        let encoded = IndexSnapshot.encodePolicy(stored)
        let decoded = try #require(encoded.withUnsafeBytes { IndexSnapshot.decodePolicy($0) })
        #expect(decoded == stored)
        var copy = try #require(Self.restored(decoded, from: original))
        // Saved again, under the new ids named by the old ones, it is the same state.
        let ids = copy.ids
        let oldID = Dictionary(uniqueKeysWithValues: original.ids.map { (ids[$0.key]!, $0.value) })
        #expect(copy.policy.stored(position: { UInt32(oldID[$0]!) }, hash: { AdaptivePolicyMirror.hash(copy.keys[$0]!) }) == stored)
        let expected = Self.drive(&original, seed: seed + 100, steps: 3_000, keyOffset: 1_000_000)
        let actual = Self.drive(&copy, seed: seed + 100, steps: 3_000, keyOffset: 1_000_000)
        #expect(expected.joined().count > 100)
        #expect(actual == expected)
    }

    /// The layout docs/FORMAT.md gives: the magic, the version, 216 bytes before the lists,
    /// 8 a record, 4 a probation record more, 12 a shadow key, 8 a sketch word, 4 of CRC.
    @Test func theSectionsLayout() throws {
        #expect(IndexSnapshot.encodePolicy(StoredPolicy()).count == 216 + 4)
        var mirror = AdaptivePolicyMirror(capacity: 20_000)
        Self.drive(&mirror, seed: 5, steps: 200, keyOffset: 0)
        let stored = mirror.storedPolicy()
        let encoded = IndexSnapshot.encodePolicy(stored)
        #expect(Array(encoded.prefix(8)) == Array("LRDP".utf8) + [1, 0, 0, 0])
        let records = stored.queues.map(\.count).reduce(0, +)
        #expect(
            encoded.count
                == 216 + 8 * records + 4 * stored.queues[1].count + 12 * stored.shadow.count + 8 * stored.sketch.count + 4)
        // The capacity is the first scalar after the version.
        #expect(encoded[8 ..< 16].reversed().reduce(0) { $0 << 8 | Int($1) } == 20_000)
    }

    /// Every byte flipped, and every shorter length, is refused by the section's checksum or
    /// its structure; nothing traps.
    @Test func aDamagedSectionIsRefused() {
        var mirror = AdaptivePolicyMirror(capacity: 20_000)
        Self.drive(&mirror, seed: 5, steps: 200, keyOffset: 0)
        let encoded = IndexSnapshot.encodePolicy(mirror.storedPolicy())
        #expect(encoded.withUnsafeBytes { IndexSnapshot.decodePolicy($0) } != nil)
        for i in encoded.indices {
            var damaged = encoded
            damaged[i] ^= 0x01
            #expect(damaged.withUnsafeBytes { IndexSnapshot.decodePolicy($0) } == nil, "byte \(i)")
        }
        for length in 0 ..< encoded.count {
            #expect(Array(encoded.prefix(length)).withUnsafeBytes { IndexSnapshot.decodePolicy($0) } == nil, "length \(length)")
        }
    }

    /// A state that does not fit the capacity or the records it is restored over is refused.
    @Test(arguments: Array(0 ..< 13))
    func restoringRefusesWhatDoesNotFit(change: Int) throws {
        var mirror = AdaptivePolicyMirror(capacity: Self.capacity)
        Self.drive(&mirror, seed: 7, steps: 3_000, keyOffset: 0)
        var stored = mirror.storedPolicy()
        #expect(Self.restored(stored, from: mirror) != nil)
        let queue = try #require(stored.queues.firstIndex { $0.count >= 2 })
        switch change {
        case 0: stored.capacity += 1
        case 1: stored.queues[queue][0].hash &+= 1
        case 2: stored.queues[queue][1].position = stored.queues[queue][0].position
        case 3: stored.queues[queue][0].position = UInt32(mirror.nextID)
        case 4: stored.probationDraws[0] = stored.probationDraws[1]
        case 5: stored.probationDraws.removeLast()
        case 6: stored.windowShare = .nan
        case 7: stored.periodBytes = -1
        case 8: stored.sampleMask = 2
        case 9: stored.sketch.removeLast()
        case 10: stored.shadow.append(StoredPolicy.ShadowKey(hash: stored.shadow[0].hash, size: 1))
        case 11: stored.queueBytes[queue] += 1
        default: stored.climbDirection = 0.5
        }
        #expect(Self.restored(stored, from: mirror) == nil)
    }
}
