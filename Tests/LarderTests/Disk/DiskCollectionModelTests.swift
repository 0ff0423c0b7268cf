import Foundation
import Testing
@testable import Larder

/// A naive reference of the disk cache's visible behaviour: records in a dictionary, recency as
/// a counter, collection and trimming by sorting.
struct ReferenceDiskCache {
    struct Entry {
        var size: Int
        var ttl: UInt64
        var lockCount: Int
        var updateTime: UInt64
        var lastUse: Int
        var version: Int
    }
    var entries: [String: Entry] = [:]
    var useCounter = 0
    let defaultExpiration: Double
    let sizeLimit: Int
    let countLimit: Int

    mutating func nextUse() -> Int {
        useCounter += 1
        return useCounter
    }

    func isExpired(_ e: Entry, now: Double) -> Bool {
        guard e.lockCount == 0 else { return false }
        let threshold = e.ttl > 0 ? Double(e.ttl) : defaultExpiration
        return now.rounded(.down) - Double(e.updateTime) > threshold
    }

    var keysLeastRecentFirst: [String] { entries.sorted { $0.value.lastUse < $1.value.lastUse }.map(\.key) }

    var totalSize: Int { entries.values.reduce(0) { $0 + $1.size } }

    var lockedSize: Int { entries.values.filter { $0.lockCount > 0 }.reduce(0) { $0 + $1.size } }

    /// Removes least recently used records until within limits: unlocked first, then locked ones
    /// while locked records alone exceed the size limit.
    mutating func trim(excluding: String?) {
        let size = sizeLimit > 0 ? sizeLimit : Int.max
        for locked in [false, true] {
            let candidates = entries.filter { $0.key != excluding && ($0.value.lockCount > 0) == locked }
                .sorted { $0.value.lastUse < $1.value.lastUse }
            for (key, _) in candidates {
                let overSize = (locked ? lockedSize : totalSize) > size
                let overCount = !locked && countLimit > 0 && entries.count > countLimit
                guard overSize || overCount else { break }
                entries[key] = nil
            }
        }
    }

    mutating func collect(now: Double) {
        entries = entries.filter { !isExpired($0.value, now: now) }
        trim(excluding: nil)
    }
}

@Suite struct DiskCollectionModelTests {
    static func payload(key: String, version: Int, size: Int) -> Data {
        var data = Data("\(key):\(version):".utf8)
        data.append(contentsOf: (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &+ version) })
        return data
    }

    /// Seeds with a size limit that binds before the count limit, and the other way round.
    @Test(arguments: [
        (11 as UInt64, 16 * 4096, 30, EvictionReason.sizeLimit), (22, 20 * 4096, 30, .sizeLimit),
        (33, 100 * 4096, 10, .countLimit), (44, 100 * 4096, 12, .countLimit),
    ])
    func randomOperationsMatchTheReference(seed: UInt64, sizeLimit: Int, countLimit: Int, binding: EvictionReason) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 2_000_000)
        var options = testOptions(dir.url, clock: clock)
        options.defaultExpiration = 50
        options.sizeLimit = sizeLimit
        options.countLimit = countLimit
        options.policy = .lru
        let cache = try DiskCache(options: options)
        let block = cache.blockSize
        var model = ReferenceDiskCache(defaultExpiration: 50, sizeLimit: options.sizeLimit, countLimit: options.countLimit)
        var random = SplitMix64(seed: seed)
        let keys = (0 ..< 40).map { "key-\($0)" }
        var versions: [String: Int] = [:]

        for step in 0 ..< 2_500 {
            let key = keys[random.below(keys.count)]
            let now = clock.now
            switch random.below(100) {
            case 0 ..< 30:
                let version = (versions[key] ?? 0) + 1
                versions[key] = version
                let data = Self.payload(key: key, version: version, size: random.below(3) == 0 ? 5000 : random.below(600))
                let ttl = [0, 0, 20, 90][random.below(4)]
                let locked = random.below(10) == 0
                try cache.store(data, forKey: key, expiry: ttl == 0 ? .default : .seconds(TimeInterval(ttl)), locked: locked)
                let fileSize = 64 + key.utf8.count + data.count
                model.entries[key] = .init(
                    size: (fileSize + block - 1) / block * block, ttl: UInt64(ttl), lockCount: locked ? 1 : 0,
                    updateTime: UInt64(now), lastUse: model.nextUse(), version: version)
                model.trim(excluding: key)
            case 30 ..< 60:
                let loaded = try cache.record(forKey: key)
                if var entry = model.entries[key], !model.isExpired(entry, now: now) {
                    #expect(
                        loaded?.data
                            == Self.payload(
                                key: key, version: entry.version,
                                size: loaded.map { $0.data.count - "\(key):\(entry.version):".utf8.count } ?? 0), "step \(step)")
                    entry.lastUse = model.nextUse()
                    if entry.ttl == 0 { entry.updateTime = UInt64(now) }
                    model.entries[key] = entry
                } else {
                    #expect(loaded == nil, "step \(step): \(key) should be absent")
                    model.entries[key] = nil
                }
            case 60 ..< 67:
                let locked = try cache.lock(forKeys: [key])
                if var entry = model.entries[key], !model.isExpired(entry, now: now) {
                    #expect(locked == [key])
                    entry.lockCount += 1
                    model.entries[key] = entry
                } else {
                    #expect(locked.isEmpty)
                }
            case 67 ..< 74:
                let unlocked = try cache.unlock(forKeys: [key])
                if var entry = model.entries[key], entry.lockCount > 0 {
                    #expect(unlocked == [key])
                    entry.lockCount -= 1
                    model.entries[key] = entry
                } else {
                    #expect(unlocked.isEmpty)
                }
            case 74 ..< 80:
                // Only a live record counts as removed.
                let live = model.entries[key].map { !model.isExpired($0, now: now) } ?? false
                #expect(try cache.remove(forKeys: [key]) == (live ? [key] : []), "step \(step)")
                model.entries[key] = nil
            case 80 ..< 93:
                clock.advance(by: Double(random.below(15)))
            default:
                let report = try cache.collectGarbage()
                model.collect(now: clock.now)
                let survivors = try cache.keys(withPrefix: "")
                // Least recently used first.
                #expect(survivors == model.keysLeastRecentFirst, "step \(step)")
                #expect(report.remainingCount == model.entries.count)
                #expect(cache.totalSize == model.totalSize)
                #expect(cache.lockedSize == model.entries.values.filter { $0.lockCount > 0 }.reduce(0) { $0 + $1.size })
                cache.state.withLock { $0.index._checkInvariants() }
            }
        }
        _ = try cache.collectGarbage()
        model.collect(now: clock.now)
        #expect(try cache.keys(withPrefix: "") == model.keysLeastRecentFirst)
        #expect(recordFiles(in: dir.url).count == model.entries.count)
        // The run exercised expiry and the limit meant to bind.
        let evictions = cache.statistics.evictions
        #expect(evictions[.expired, default: 0] > 0 && evictions[binding, default: 0] > 0, "\(evictions)")
    }
}
