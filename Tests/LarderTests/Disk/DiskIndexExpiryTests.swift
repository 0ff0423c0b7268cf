import LarderTestSupport
import Testing
@testable import Larder

/// The index's expiry order against a naive scan: after random stores, uses that slide update
/// times, lock changes, replacements and removals, the entries it takes as expired at a random
/// time are exactly those the rule finds expired among the model's, whatever the batch size;
/// entries taken and kept come back once queued again; and the queues stay bounded.
@Suite struct DiskIndexExpiryTests {
    static let rule = ExpiryRule(defaultExpiration: 100.5)

    static func expired(_ model: [String: IndexEntry], now: Double) -> Set<String> {
        Set(
            model.values.filter { rule.isExpired(lockCount: $0.lockCount, ttl: $0.ttl, anchor: $0.updateTime, now: now) }.map(\.name))
    }

    /// Takes every expired entry, `batch` at a time, as a collection does.
    static func takeAll(_ index: inout DiskIndex, now: Double, batch: Int) -> [IndexEntry] {
        var all: [IndexEntry] = []
        while true {
            let taken = index.takeExpired(by: rule, now: now, limit: batch)
            if taken.isEmpty { return all }
            all += taken
        }
    }

    @Test(arguments: [(1, 1), (2, 7), (3, 10_000)])
    func takenEntriesAreTheExpiredOnes(seed: UInt64, batch: Int) throws {
        var random = SplitMix64(seed: seed)
        var index = DiskIndex()
        var model: [String: IndexEntry] = [:]
        var checks = 0
        for step in 0 ..< 3_000 {
            let name = DiskIndexModelTests.name(random.below(200))
            let entry = IndexEntry(
                name: name, key: nil, diskSize: 4096, updateTime: UInt64(random.below(1_000)), lastAccessMs: UInt64(step),
                ttl: [0, 0, 1, 50, 300][random.below(5)], lockCount: random.below(4) == 0 ? 1 : 0)
            switch random.below(8) {
            case 0, 1, 2:
                index.upsert(entry)
                model[name] = entry
            case 3:
                index.remove(name)
                model[name] = nil
            case 4:
                // A use: the update time slides later (ttl 0) or stays.
                guard var used = model[name], let slot = index.slot(of: name) else { continue }
                if used.ttl == 0 { used.updateTime += UInt64(random.below(200)) }
                _ = index.recordUse(slot: slot, from: used, fileSize: { $0 }, marksAccessDirty: false)
                model[name] = used
            case 5:
                let lockCount = UInt32(random.below(2))
                index.setLockCount(name, lockCount)
                model[name]?.lockCount = lockCount
            case 6:
                index.replaceKeepingPosition(entry)
                model[name] = entry
            default:
                // A collection at some time: takes the expired entries, removes some, keeps the rest.
                let now = Double(random.below(1_400)) + 0.5
                let taken = Self.takeAll(&index, now: now, batch: batch)
                #expect(taken.count == Set(taken.map(\.name)).count, "an entry is taken once")
                try #require(Set(taken.map(\.name)) == Self.expired(model, now: now), "step \(step)")
                var kept: [String] = []
                for entry in taken {
                    if random.below(3) == 0 {
                        kept.append(entry.name)
                    } else {
                        index.remove(entry.name)
                        model[entry.name] = nil
                    }
                }
                #expect(Self.takeAll(&index, now: now, batch: batch).isEmpty, "taken entries wait in no queue until queued again")
                for name in kept { index.queueForExpiry(name) }
                #expect(Set(Self.takeAll(&index, now: now, batch: batch).map(\.name)) == Set(kept))
                for name in kept { index.queueForExpiry(name) }
                checks += 1
            }
            index._checkInvariants()
            #expect(index.expiry.count <= index.count + index.count / 4 + 1024)
        }
        #expect(checks > 100)
    }

    @Test func aLoadedIndexQueuesItsUnlockedEntries() throws {
        var index = DiskIndex()
        for i in 0 ..< 50 {
            index.upsert(
                IndexEntry(
                    name: DiskIndexModelTests.name(i), key: nil, diskSize: 4096, updateTime: UInt64(i), lastAccessMs: UInt64(i),
                    ttl: UInt64(i % 3), lockCount: i % 5 == 0 ? 1 : 0))
        }
        var reloaded = try #require(IndexSnapshot.decodeIndex(IndexSnapshot.encode(index), keyEncoding: .custom(name: "any") { "x" + $0 }))
        reloaded._checkInvariants()
        #expect(reloaded.expiry.count == 40, "the 40 unlocked entries, no stale element")
        let taken = Self.takeAll(&reloaded, now: 1_000, batch: 16)
        #expect(Set(taken.map(\.name)) == Set((0 ..< 50).filter { $0 % 5 != 0 }.map(DiskIndexModelTests.name)))
    }
}
