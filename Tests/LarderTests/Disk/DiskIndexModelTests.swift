import LarderTestSupport
import Testing
@testable import Larder

/// The compact index against a naive model (an array in least-recently-used order): random
/// upserts, uses, keyed and keyless entries, repeated keys, removals and replacements in place,
/// over hex (packed) and other names, checked after every step; and the snapshot of the result.
@Suite struct DiskIndexModelTests {
    /// A name from a small pool, so that operations meet present names: half of them 64 hex
    /// digits (kept packed), the others short, uppercase hex (not packed) or 64 digits with a `g`.
    static func name(_ i: Int) -> String {
        switch i % 4 {
        case 0, 1: SHA256Hash.hex(of: "n\(i)")
        case 2: "name-\(i)"
        default: i % 8 == 3 ? SHA256Hash.hex(of: "n\(i)").uppercased() : String(SHA256Hash.hex(of: "n\(i)").dropLast()) + "g"
        }
    }

    static func key(_ random: inout SplitMix64, name: String) -> String? {
        switch random.below(5) {
        case 0: nil
        case 1: name  // the key is the name (verbatim)
        case 2: "shared-\(random.below(4))"  // claimed by several entries
        case 3: ""
        default: "key-\(random.below(1000))-ключ"
        }
    }

    @Test(arguments: [1, 2])
    func randomOperationsMatchTheModel(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        var index = DiskIndex()
        var model: [IndexEntry] = []  // least recently used first
        for step in 0 ..< 1_500 {
            let name = Self.name(random.below(300))
            var entry = IndexEntry(
                name: name, key: Self.key(&random, name: name), diskSize: 4096 * (1 + random.below(4)), fileSize: random.below(2) * 100,
                updateTime: UInt64(random.below(1 << 20)), lastAccessMs: UInt64(step), ttl: UInt64(random.below(3)),
                lockCount: UInt32(random.below(3)), isAccessDirty: random.below(2) == 0)
            let at = model.firstIndex { $0.name == name }
            switch random.below(6) {
            case 0, 1:
                index.upsert(entry)
                if let at { model.remove(at: at) }
                model.append(entry)
            case 2:
                #expect(index.remove(name)?.name == (at.map { model[$0].name }))
                if let at { model.remove(at: at) }
            case 3:
                index.replaceKeepingPosition(entry)
                if let at { model[at] = entry } else { model.insert(entry, at: 0) }
            case 4:
                guard let at, let slot = index.slot(of: name) else { continue }
                let old = model[at]
                if old.key != nil { entry.key = old.key }
                let becameDirty = index.recordUse(slot: slot, from: entry, fileSize: { $0 + 1 }, marksAccessDirty: true)
                #expect(becameDirty == !old.isAccessDirty)
                entry.fileSize = old.fileSize + 1
                entry.isAccessDirty = true
                model.remove(at: at)
                model.append(entry)
            default:
                let lockCount = UInt32(random.below(3))
                index.setLockCount(name, lockCount)
                if let at { model[at].lockCount = lockCount }
            }
            index._checkInvariants()
            try Self.expectSame(index, model)
        }
        // The snapshot keeps every persisted field and the order; file sizes and flags are not kept.
        let reloaded = try #require(IndexSnapshot.decodeIndex(IndexSnapshot.encode(index), keyEncoding: .custom(name: "any") { "x" + $0 }))
        reloaded._checkInvariants()
        #expect(reloaded.count == model.filter { $0.key == nil }.count, "keys that do not map to their names are dropped")
        let decoded = try #require(IndexSnapshot.decode(IndexSnapshot.encode(index)))
        #expect(decoded.map(\.name) == model.map(\.name))
        #expect(decoded.map(\.key) == model.map(\.key))
        #expect(decoded.map(\.lockCount) == model.map(\.lockCount))
        #expect(decoded.map(\.diskSize) == model.map(\.diskSize))
    }

    static func expectSame(_ index: DiskIndex, _ model: [IndexEntry]) throws {
        let entries = index.entriesLeastRecentFirst
        try #require(entries.count == model.count)
        for (got, want) in zip(entries, model) {
            try #require(got.name == want.name && got.key == want.key, "entry \(want.name)")
            try #require(got.diskSize == want.diskSize && got.fileSize == want.fileSize && got.lockCount == want.lockCount)
            try #require(got.updateTime == want.updateTime && got.lastAccessMs == want.lastAccessMs && got.ttl == want.ttl)
            try #require(got.isAccessDirty == want.isAccessDirty)
        }
        #expect(index.totalSize == model.reduce(0) { $0 + $1.diskSize })
        #expect(index.lockedSize == model.filter { $0.lockCount > 0 }.reduce(0) { $0 + $1.diskSize })
        // A key answers with the first-mapped entry that holds it; every entry's name answers.
        for entry in model {
            #expect(index[entry.name]?.name == entry.name)
            if let key = entry.key, let slot = index.slot(forKey: key) { #expect(index.key(atSlot: slot) == key) }
        }
        let keyed = Set(model.compactMap(\.key))
        #expect(index.unmappedCount >= model.count - keyed.count)
    }
}
