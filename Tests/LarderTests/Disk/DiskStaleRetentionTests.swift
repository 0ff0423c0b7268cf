import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// A naive reference of which records a disk cache with a stale retention holds: expired records
/// stay for reads within the retention and go at a collection past it.
struct ReferenceStaleDisk {
    struct Entry {
        var version: Int
        var ttl: UInt64
        var lockCount: Int
        var updateTime: UInt64
    }
    var entries: [String: Entry] = [:]
    let defaultExpiration: Double
    let retention: Double

    func threshold(_ e: Entry) -> Double { e.ttl > 0 ? Double(e.ttl) : defaultExpiration }

    func isExpired(_ e: Entry, now: Double) -> Bool {
        e.lockCount == 0 && now.rounded(.down) - Double(e.updateTime) > threshold(e)
    }

    /// How long ago an expired entry expired.
    func expiredFor(_ e: Entry, now: Double) -> Double { now - (Double(e.updateTime) + threshold(e)) }

    /// What a stale read within `window` returns: the version of an entry that expired less than
    /// `window` ago.
    func staleVersion(_ key: String, within window: Double, now: Double) -> Int? {
        guard let e = entries[key], isExpired(e, now: now), expiredFor(e, now: now) < window else { return nil }
        return e.version
    }

    /// A plain read: a live entry is returned (a `.default` one slides); an expired one is a miss,
    /// and goes unless it expired less than the retention ago.
    mutating func read(_ key: String, now: Double) -> Int? {
        guard var e = entries[key] else { return nil }
        if !isExpired(e, now: now) {
            if e.ttl == 0 { e.updateTime = max(e.updateTime, UInt64(now.rounded(.down))) }
            entries[key] = e
            return e.version
        }
        if !(expiredFor(e, now: now) < retention) { entries[key] = nil }
        return nil
    }

    /// A collection: entries expired longer ago than the retention go.
    mutating func collect(now: Double) {
        entries = entries.filter { !isExpired($0.value, now: now - retention) }
    }
}

/// `DiskCacheOptions.staleRetention`: what reads, collections, removals and stores do to an
/// expired record the retention keeps.
@Suite struct DiskStaleRetentionTests {
    static func payload(_ key: String, _ version: Int) -> Data { Data("\(key):\(version)".utf8) }

    func makeCache(_ temporary: TemporaryDirectory, retention: Double) throws -> (DiskCache, ManualClock) {
        let clock = ManualClock(now: 1_700_000_000)
        var options = testOptions(temporary.url, clock: clock)
        options.staleRetention = retention
        return (try DiskCache(options: options), clock)
    }

    /// Seeded random stores, reads, stale reads, locks, removals, clock moves and collections,
    /// compared step by step with `ReferenceStaleDisk`: which keys are on disk, what each read
    /// and stale read returns. Retention 0 is the behaviour without one (a read removes).
    @Test(arguments: [(1 as UInt64, 0.0), (2, 0), (3, 12), (4, 12.5), (5, 30)])
    func randomOperationsMatchTheReference(seed: UInt64, retention: Double) throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = testOptions(temporary.url, clock: clock)
        options.defaultExpiration = 25
        options.staleRetention = retention
        let cache = try DiskCache(options: options)
        #expect(cache.staleRetention == retention)
        var model = ReferenceStaleDisk(defaultExpiration: 25, retention: retention)
        var random = SplitMix64(seed: seed)
        let keys = (0 ..< 12).map { "key-\($0)" }
        var nextVersion = 0
        var staleServed = 0
        var retainedReads = 0

        for step in 0 ..< 3_000 {
            let key = keys[random.below(keys.count)]
            let now = clock.now
            switch random.below(100) {
            case 0 ..< 20:
                nextVersion += 1
                let ttl = [0, 10, 20][random.below(3)]
                let locked = random.below(12) == 0
                try cache.store(
                    Self.payload(key, nextVersion), forKey: key, expiry: ttl == 0 ? .default : .seconds(Double(ttl)), locked: locked)
                model.entries[key] = .init(version: nextVersion, ttl: UInt64(ttl), lockCount: locked ? 1 : 0, updateTime: UInt64(now))
            case 20 ..< 45:
                let wasThere = model.entries[key] != nil
                let expected = model.read(key, now: now)
                #expect(try cache.record(forKey: key)?.data == expected.map { Self.payload(key, $0) }, "step \(step): read \(key)")
                if wasThere, expected == nil, model.entries[key] != nil { retainedReads += 1 }
            case 45 ..< 55:
                let window = Double(random.below(Int(max(retention, 10) * 2) + 2))
                let expected = model.staleVersion(key, within: window, now: now)
                let stale = try cache.staleRecord(forKey: key, within: window)
                #expect(stale?.data == expected.map { Self.payload(key, $0) }, "step \(step): stale read of \(key) within \(window)")
                if expected != nil { staleServed += 1 }
            case 55 ..< 60:
                let locked = try cache.lock(forKeys: [key])
                if var e = model.entries[key], !model.isExpired(e, now: now) {
                    #expect(locked == [key], "step \(step)")
                    e.lockCount += 1
                    model.entries[key] = e
                } else {
                    #expect(locked.isEmpty, "step \(step)")
                }
            case 60 ..< 65:
                let unlocked = try cache.unlock(forKeys: [key])
                if var e = model.entries[key], e.lockCount > 0 {
                    #expect(unlocked == [key], "step \(step)")
                    e.lockCount -= 1
                    model.entries[key] = e
                } else {
                    #expect(unlocked.isEmpty, "step \(step)")
                }
            case 65 ..< 70:
                let live = model.entries[key].map { !model.isExpired($0, now: now) } ?? false
                #expect(try cache.remove(forKey: key) == live, "step \(step): remove \(key)")
                model.entries[key] = nil
            case 70 ..< 90:
                clock.advance(by: Double(random.below(13)) / 2)
            case 90 ..< 99:
                _ = try cache.collectGarbage()
                model.collect(now: clock.now)
                cache.state.withLock { $0.index._checkInvariants() }
            default:
                try cache.removeAll()
                model.entries = [:]
            }
            // Which records are on disk, expired or not, and which of them a plain read would return.
            let held = try cache.keys(withPrefix: "", includingExpired: true).sorted()
            #expect(held == model.entries.keys.sorted(), "step \(step)")
            let live = model.entries[key].map { !model.isExpired($0, now: clock.now) } ?? false
            #expect(cache.contains(key) == live, "step \(step): contains \(key)")
        }
        // The run met stale reads and, with a retention, reads that kept an expired record.
        #expect(staleServed > 0 && (retention == 0) == (retainedReads == 0), "\(staleServed) stale, \(retainedReads) kept")
    }

    @Test func aReadWithinTheRetentionIsAMissThatKeepsTheRecord() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let (disk, clock) = try makeCache(temporary, retention: 30)
        try disk.store(Data("v1".utf8), forKey: "k", expiry: .seconds(60))
        clock.advance(by: 70)  // expired 10 s ago
        #expect(try disk.record(forKey: "k") == nil)
        #expect(try disk.value(forKey: "k") == nil)
        #expect(try !disk.touch(forKey: "k"))
        // A miss each, and no expiration: nothing was dropped.
        #expect(disk.statistics.misses == 2 && disk.statistics.expirations == 0)
        #expect(!disk.contains("k") && disk.count == 1 && recordFiles(in: temporary.url).count == 1)
        #expect(try disk.keys(withPrefix: "").isEmpty && disk.keys(withPrefix: "", includingExpired: true) == ["k"])
        // The touch did not slide it: still 10 s stale.
        #expect(try disk.staleRecord(forKey: "k", within: 30)?.data == Data("v1".utf8))
        #expect(try disk.staleRecord(forKey: "k", within: 10) == nil)
        // Past the retention (expired 30 s ago, not less), a read removes it, as without one.
        clock.advance(by: 20)
        #expect(try disk.record(forKey: "k") == nil)
        #expect(disk.count == 0 && recordFiles(in: temporary.url).isEmpty && disk.statistics.expirations == 1)
    }

    @Test func aCollectionInsideTheRetentionKeepsTheRecordAndOnePastItRemovesIt() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let (disk, clock) = try makeCache(temporary, retention: 30)
        // "a" expires at +60, "b" at +80, "c" (the test disk's sliding 600 s) at +600.
        try disk.store(Data("a".utf8), forKey: "a", expiry: .seconds(60))
        try disk.store(Data("b".utf8), forKey: "b", expiry: .seconds(80))
        try disk.store(Data("c".utf8), forKey: "c")
        clock.advance(by: 89)  // "a" expired 29 s ago, "b" 9 s ago
        #expect(try disk.collectGarbage().removed.isEmpty)
        #expect(try disk.keys(withPrefix: "", includingExpired: true).sorted() == ["a", "b", "c"])
        clock.advance(by: 2)  // "a" expired 31 s ago
        #expect(try disk.collectGarbage().removed.map(\.key) == ["a"])
        #expect(try disk.staleRecord(forKey: "b", within: 30)?.data == Data("b".utf8))
        clock.advance(by: 30)  // "b" expired 41 s ago
        let report = try disk.collectGarbage()
        #expect(report.removed.map(\.key) == ["b"] && report.removed.allSatisfy { $0.reason == .expired })
        #expect(try disk.keys(withPrefix: "", includingExpired: true) == ["c"])
        #expect(disk.statistics.evictions[.expired] == 2)
    }

    @Test func aRemovalAStoreAndRemoveAllEndARetainedRecordAtOnce() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let (disk, clock) = try makeCache(temporary, retention: 1_000)
        for key in ["removed", "replaced", "wiped"] { try disk.store(Data("v1".utf8), forKey: key, expiry: .seconds(60)) }
        clock.advance(by: 70)
        for key in ["removed", "replaced", "wiped"] { #expect(try disk.record(forKey: key) == nil) }
        #expect(disk.count == 3)
        // Expired: not a live record removed, but gone all the same.
        #expect(try !disk.remove(forKey: "removed"))
        #expect(try disk.staleRecord(forKey: "removed", within: 1_000) == nil)
        try disk.store(Data("v2".utf8), forKey: "replaced", expiry: .seconds(5))
        clock.advance(by: 10)
        #expect(try disk.staleRecord(forKey: "replaced", within: 1_000)?.data == Data("v2".utf8))
        #expect(try disk.staleRecord(forKey: "wiped", within: 1_000)?.data == Data("v1".utf8))
        try disk.removeAll()
        #expect(try disk.staleRecord(forKey: "wiped", within: 1_000) == nil && disk.count == 0)
    }

    @Test(arguments: [-1, -0.5, Double.nan, .infinity, -.infinity])
    func aRetentionOutOfRangeIsInvalidOptions(retention: Double) {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        var options = testOptions(temporary.url)
        options.staleRetention = retention
        let error = InvalidSettingsTests.thrown { () throws(CacheError) in _ = try DiskCache(options: options) }
        #expect(error?.code == .invalidOptions)
        #expect(error?.message == "staleRetention must be 0 or a positive number of seconds, not \(retention)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: temporary.url.path))?.isEmpty == true)
    }

    @Test func theDefaultAndTheSPTPresetRetainNothing() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        #expect(DiskCacheOptions(directory: temporary.url).staleRetention == 0)
        #expect(DiskCacheOptions.spt(directory: temporary.url).staleRetention == 0)
        var options = DiskCacheOptions.spt(directory: temporary.url)
        let clock = ManualClock(now: 1_700_000_000)
        options.clock = clock
        let disk = try DiskCache(options: options)
        try disk.store(Data("v1".utf8), forKey: "k", expiry: .seconds(60))
        clock.advance(by: 70)
        #expect(try disk.record(forKey: "k") == nil)
        #expect(disk.count == 0 && disk.statistics.expirations == 1 && disk.staleRetention == 0)
    }
}
