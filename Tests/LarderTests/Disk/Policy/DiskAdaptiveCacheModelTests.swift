import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// The disk tier's rules under ``DiskEvictionPolicy/adaptive``, against a model of what it holds
/// under random stores (some locked, some with short expiries), loads, locks, unlocks, removals,
/// time passing and collections: after every step it holds exactly the model's records (those
/// stored and neither removed, expired nor reported evicted), and after every store and
/// collection it is within its limits; an eviction takes an expired record before a live one
/// and a locked record only once no unlocked one is left.
@Suite struct DiskAdaptiveCacheModelTests {
    struct Record {
        var size: Int
        var ttl: Double
        var updateTime: Double
        var lockCount: Int
    }

    static func isExpired(_ record: Record, now: Double, defaultExpiration: Double) -> Bool {
        record.lockCount == 0 && now.rounded(.down) - record.updateTime > (record.ttl > 0 ? record.ttl : defaultExpiration)
    }

    @Test(arguments: [
        (11 as UInt64, 16 * 4096, 0), (22, 24 * 4096, 0), (33, 40 * 4096, 12), (44, 20 * 4096, 30),
    ])
    func randomOperationsKeepTheRules(seed: UInt64, sizeLimit: Int, countLimit: Int) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 2_000_000)
        let events = EventLog()
        var options = testOptions(dir.url, clock: clock)
        options.policy = .adaptive
        options.defaultExpiration = 50
        options.sizeLimit = sizeLimit
        options.countLimit = countLimit
        options.eventHandler = events.handler
        let cache = try DiskCache(options: options)
        let block = cache.blockSize
        var model: [String: Record] = [:]
        var random = SplitMix64(seed: seed)
        let keys = (0 ..< 60).map { "key-\($0)" }
        var evictedLive = 0

        for step in 0 ..< 2_500 {
            let key = keys[random.below(keys.count)]
            let now = clock.now
            let before = model
            var stored: String?
            var trims = false
            switch random.below(100) {
            case 0 ..< 35:
                let size = random.below(4) == 0 ? 2 * block + random.below(3 * block) : random.below(block / 2)
                let ttl = [0, 0, 20, 90][random.below(4)]
                let locked = random.below(12) == 0
                try cache.store(
                    Data(repeating: 1, count: size), forKey: key, expiry: ttl == 0 ? .default : .seconds(TimeInterval(ttl)), locked: locked)
                let fileSize = 64 + key.utf8.count + size
                model[key] = Record(
                    size: (fileSize + block - 1) / block * block, ttl: Double(ttl), updateTime: now.rounded(.down),
                    lockCount: locked ? 1 : 0)
                stored = key
                trims = true
            case 35 ..< 60:
                let loaded = try cache.value(forKey: key)
                if let record = model[key], !Self.isExpired(record, now: now, defaultExpiration: 50) {
                    #expect(loaded != nil, "step \(step): \(key) should be held")
                    if record.ttl == 0 { model[key]!.updateTime = now.rounded(.down) }
                } else {
                    #expect(loaded == nil, "step \(step): \(key) should be absent")
                    model[key] = nil
                }
            case 60 ..< 67:
                let locked = try cache.lock(forKeys: [key])
                if let record = model[key], !Self.isExpired(record, now: now, defaultExpiration: 50) {
                    #expect(locked == [key])
                    model[key]!.lockCount += 1
                } else {
                    #expect(locked.isEmpty)
                }
            case 67 ..< 76:
                let unlocked = try cache.unlock(forKeys: [key])
                if let record = model[key], record.lockCount > 0 {
                    #expect(unlocked == [key])
                    model[key]!.lockCount -= 1
                } else {
                    #expect(unlocked.isEmpty)
                }
            case 76 ..< 80:
                let live = model[key].map { !Self.isExpired($0, now: now, defaultExpiration: 50) } ?? false
                #expect(try cache.remove(forKeys: [key]) == (live ? [key] : []), "step \(step)")
                model[key] = nil
            case 80 ..< 94:
                clock.advance(by: Double(random.below(15)))
            default:
                try cache.collectGarbage()
                model = model.filter { !Self.isExpired($0.value, now: clock.now, defaultExpiration: 50) }
                trims = true
            }
            // What the cache reported evicted leaves the model: expired records by their reason,
            // the others checked against the rules.
            var evicted: [String] = []
            for event in events.drain() {
                guard case .recordEvicted(let evictedKey?, _, let reason) = event else { continue }
                let record = model[evictedKey] ?? before[evictedKey]
                #expect(record != nil, "step \(step): \(evictedKey) evicted but not held")
                if reason == .expired {
                    #expect(record.map { Self.isExpired($0, now: clock.now, defaultExpiration: 50) } == true, "step \(step)")
                } else {
                    evicted.append(evictedKey)
                }
                model[evictedKey] = nil
            }
            if !evicted.isEmpty {
                #expect(trims, "step \(step): evicted \(evicted) outside a store or collection")
                // Expired records go first.
                #expect(
                    !model.values.contains { Self.isExpired($0, now: clock.now, defaultExpiration: 50) },
                    "step \(step): live records evicted while expired ones remain")
                // Locked records last.
                let lockedVictims = evicted.filter { (before[$0]?.lockCount ?? model[$0]?.lockCount ?? 0) > 0 }
                if !lockedVictims.isEmpty {
                    #expect(
                        !model.contains { $0.key != stored && $0.value.lockCount == 0 },
                        "step \(step): locked \(lockedVictims) evicted while an unlocked record remains")
                }
                evictedLive += evicted.count
            }
            // Exactly the model's records, live or expired but not yet collected.
            let held = cache.state.withLock { s in
                var names: Set<String> = []
                s.index.forEachLeastRecentFirst { entry in
                    names.insert(entry.key ?? entry.name)
                    return true
                }
                return names
            }
            #expect(held == Set(model.keys), "step \(step)")
            if trims {
                let unlockedOthers = model.contains { $0.key != stored && $0.value.lockCount == 0 }
                let total = model.values.reduce(0) { $0 + $1.size }
                #expect(total == cache.totalSize)
                #expect(total <= sizeLimit || !unlockedOthers, "step \(step): \(total) bytes over the limit \(sizeLimit)")
                #expect(countLimit == 0 || model.count <= countLimit || !unlockedOthers, "step \(step)")
                cache.state.withLock { $0.index._checkInvariants() }
            }
        }
        // The run trimmed live records, not only expired ones.
        #expect(evictedLive > 20, "\(evictedLive)")
    }
}
