import Testing
@testable import Larder

/// ``SlotTable`` against a dictionary, with hashes made to crowd a few buckets: low 32 bits
/// (which pick the bucket) from a few small values (one probe sequence) and tags that repeat, so
/// that probes pass many other slots, some with the tag they look for.
@Suite struct SlotTableTests {
    /// A key's hash: 32 low bits from a few small values (crowded buckets), 8 top bits from a
    /// few values (tags that collide), the rest from the key.
    static func hash(_ key: Int) -> Int {
        let low = (key % 5) * 3
        let top = (key % 7) << (Int.bitWidth - 8)
        return top | (key & 0xFFFF) << 32 | low
    }

    /// Tagged (the key table) and untagged (the name table): the same answers; only the tagged
    /// table spares `matches` the slots with another tag.
    @Test(arguments: [true, false])
    func findsWhatTheModelHoldsAndAsksOnlySlotsWithTheTag(tagged: Bool) {
        var random = SplitMix64(seed: 18)
        var table = SlotTable(capacity: SlotTable.capacity(for: 400), tagged: tagged)
        var model: [Int: Int32] = [:]
        // Slot numbers stand for keys: the owner's `matches` compares the key of a slot.
        var keyOfSlot: [Int32: Int] = [:]
        var nextSlot: Int32 = 0
        var askedWithOtherTag = 0
        var mismatches = 0
        func find(_ key: Int) -> SlotTable.Probe {
            let hash = Self.hash(key)
            return table.find(hash: hash) { slot in
                if SlotTable.tag(Self.hash(keyOfSlot[slot]!)) != SlotTable.tag(hash) { askedWithOtherTag += 1 }
                return keyOfSlot[slot] == key
            }
        }
        for _ in 0 ..< 20_000 {
            let key = Int(random.next() % 600)
            let probe = find(key)
            if probe.slot != model[key] { mismatches += 1 }
            switch random.next() % 3 {
            case 0, 1:
                // Insert when absent and the table has room (the owner grows it before 3/4).
                guard probe.slot == nil, !table.needsGrowth else { continue }
                #expect(probe.tag == SlotTable.tag(Self.hash(key)))
                keyOfSlot[nextSlot] = key
                table.insert(nextSlot, at: probe)
                model[key] = nextSlot
                nextSlot += 1
            default:
                guard probe.slot != nil else { continue }
                table.remove(at: probe.bucket)
                model[key] = nil
            }
        }
        #expect(mismatches == 0)
        if tagged { #expect(askedWithOtherTag == 0) } else { #expect(askedWithOtherTag > 0) }
        #expect(table.count == model.count)
        #expect(Set(table.slots) == Set(model.values))
        // Rebuilt without tombstones, the same slots are found by the same hashes.
        var rebuilt = SlotTable(capacity: SlotTable.capacity(for: model.count), tagged: tagged)
        for slot in table.slots { rebuilt.insertNew(slot, hash: Self.hash(keyOfSlot[slot]!)) }
        for (key, slot) in model {
            #expect(rebuilt.find(hash: Self.hash(key)) { keyOfSlot[$0] == key }.slot == slot)
        }
    }

    /// A table is sized to what it holds, not to a power of two: built for *n* entries it takes
    /// one more within its 3/4 load limit and has at most 4*n*/3 + 9 buckets; grown, half as
    /// many again. Every bucket is reachable: hashes over the whole 32 bits fill the last one.
    @Test(arguments: [0, 1, 7, 100, 100_000, 1_000_000])
    func aTableIsSizedToWhatItHolds(count: Int) {
        let capacity = SlotTable.capacity(for: count)
        #expect(capacity % 8 == 0)
        #expect(capacity / 4 * 3 >= count + 1)
        #expect(capacity <= max(8, (count + 1) * 4 / 3 + 8))
        let grown = SlotTable.grownCapacity(for: count)
        #expect(grown >= SlotTable.capacity(for: count + count / 2))
        #expect(SlotTable.home(0, capacity) == 0)
        #expect(SlotTable.home(Int(UInt32.max), capacity) == capacity - 1)
        // The top 32 bits (the tag's among them) do not move the bucket.
        #expect(SlotTable.home(Int(bitPattern: UInt(0xFF00_0000_8000_0000)), capacity) == SlotTable.home(1 << 31, capacity))
    }

    /// At 100,000 and 1,000,000 entries a table built for them is about 3/4 full (powers of two
    /// would be 38 % and 48 % full).
    @Test func tablesAtTheMeasuredSizesAreAboutThreeQuartersFull() {
        for count in [100_000, 1_000_000] {
            let fill = Double(count) / Double(SlotTable.capacity(for: count))
            #expect(fill > 0.74 && fill <= 0.75)
        }
    }
}
