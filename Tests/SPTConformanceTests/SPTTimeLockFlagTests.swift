import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCache's rules for time, locks and flags, read from its sources (upstream 1.2.0)
// rather than its tests: the current time rounded by `llrint` (SPTPersistentCache.m:249, 582,
// 628, 820), a lock refused once a record's time has run out whatever its lock count
// (SPTPersistentCache.m:316, `isDataExpiredWithHeader:` at 816), and `flags` never read
// (SPTPersistentCacheHeader.m:55-83).
@Suite("SPT time, lock and flag rules") struct SPTTimeLockFlagTests {
    static func makeCache(_ dir: TemporaryDirectory, clock: ManualClock, spt: Bool) throws -> DiskCache {
        var options = spt ? DiskCacheOptions.spt(directory: dir.url) : DiskCacheOptions(directory: dir.url)
        options.defaultExpiration = 600
        options.keyEncoding = .verbatim
        options.clock = clock
        return try DiskCache(options: options)
    }

    static func headerTime(_ dir: TemporaryDirectory, _ cache: DiskCache, _ key: String) throws -> UInt64 {
        let path = cache.layout.path(for: try cache.options.keyEncoding.fileName(for: key))
        return try #require(SPTHeader.read(atPath: path)).updateTimeSec
    }

    /// The example: stored at 1000.4, checked at 1600.6 with SPT's 600 s default.
    @Test(arguments: [true, false]) func expiryRoundsTheTimeAsThePresetSays(spt: Bool) throws {
        let dir = TemporaryDirectory("spt-time")
        defer { dir.remove() }
        let clock = ManualClock(now: 1000.4)
        let cache = try Self.makeCache(dir, clock: clock, spt: spt)
        defer { cache.close() }
        try cache.store(Data("a".utf8), forKey: "k")
        #expect(try Self.headerTime(dir, cache, "k") == 1000)
        clock.now = 1600.6
        // SPT: llrint(1600.6) - 1000 = 601 > 600, expired. Rounding down: 600, live.
        #expect((try cache.record(forKey: "k") == nil) == spt)
    }

    /// `llrint` rounds halves to even: 1000.5 is 1000, 1001.5 is 1002; rounding down gives 1001.
    @Test(arguments: [(1000.5, 1000 as UInt64, 1000 as UInt64), (1001.5, 1002, 1001), (1001.49, 1001, 1001), (1001.51, 1002, 1001)])
    func storesRoundHalvesToEvenUnderThePreset(time: Double, spt: UInt64, larder: UInt64) throws {
        for preset in [true, false] {
            let dir = TemporaryDirectory("spt-time")
            defer { dir.remove() }
            let cache = try Self.makeCache(dir, clock: ManualClock(now: time), spt: preset)
            defer { cache.close() }
            try cache.store(Data("a".utf8), forKey: "k")
            #expect(try Self.headerTime(dir, cache, "k") == (preset ? spt : larder), "preset \(preset)")
        }
    }

    /// A collection decides with the same rounding: at 1600.6 it removes the record stored at
    /// 1000 under the preset, and keeps it otherwise.
    @Test(arguments: [true, false]) func collectionRoundsTheTimeAsThePresetSays(spt: Bool) throws {
        let dir = TemporaryDirectory("spt-time")
        defer { dir.remove() }
        let clock = ManualClock(now: 1000.4)
        let cache = try Self.makeCache(dir, clock: clock, spt: spt)
        defer { cache.close() }
        try cache.store(Data("a".utf8), forKey: "k")
        clock.now = 1600.6
        let report = try cache.collectGarbage()
        #expect(report.removed.map(\.file) == (spt ? ["k"] : []))
        #expect(cache.contains("k") == !spt)
    }

    /// SPTPersistentCache.m:316: a locked record whose ttl has passed cannot be locked again
    /// under the preset (NotFound); by default a locked record never expires, so the lock is taken.
    @Test(arguments: [true, false]) func lockingALockedRecordWhoseTimeRanOut(spt: Bool) throws {
        let dir = TemporaryDirectory("spt-lock")
        defer { dir.remove() }
        let clock = ManualClock(now: 1000)
        let cache = try Self.makeCache(dir, clock: clock, spt: spt)
        defer { cache.close() }
        try cache.store(Data("a".utf8), forKey: "k", expiry: .seconds(60), locked: true)
        clock.now = 1061
        #expect(try cache.lock(forKeys: ["k"]) == (spt ? [] : ["k"]))
        // Still served: a locked record is live whatever its age, under both.
        #expect(try cache.record(forKey: "k")?.lockCount == (spt ? 1 : 2))
        // Within its time the lock is taken under both.
        clock.now = 1000
        #expect(try cache.lock(forKeys: ["k"]) == ["k"])
    }
}

/// A record whose header sets flags this version does not read: a miss, and left alone by every
/// read, lock, touch and collection, under every preset.
@Suite("Records with unknown flags") struct UnknownFlagTests {
    static let flagSets: [UInt32] = [1 << 20, 1 << 0]

    /// Stores `k`, then sets `flags` in its header (with a valid CRC), as a newer writer would.
    static func plant(_ dir: TemporaryDirectory, spt: Bool, flags: UInt32) throws -> String {
        let cache = try SPTTimeLockFlagTests.makeCache(dir, clock: ManualClock(now: 1000), spt: spt)
        try cache.store(Data("payload".utf8), forKey: "k")
        let path = cache.layout.path(for: "k")
        cache.close()
        var header = try #require(SPTHeader.read(atPath: path))
        header.flags |= flags
        header.crc = header.calculatedCRC
        try header.write(toFileAtPath: path)
        return path
    }

    @Test(arguments: [true, false], flagSets) func aRecordWithUnknownFlagsIsAMissAndStays(spt: Bool, flags: UInt32) throws {
        let dir = TemporaryDirectory("spt-flags")
        defer { dir.remove() }
        let path = try Self.plant(dir, spt: spt, flags: flags)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let events = EventLog()
        var options = spt ? DiskCacheOptions.spt(directory: dir.url) : DiskCacheOptions(directory: dir.url)
        options.keyEncoding = .verbatim
        options.clock = ManualClock(now: 1000 + 10 * 24 * 3600)
        options.eventHandler = events.handler
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        #expect(try cache.record(forKey: "k") == nil)
        #expect(try cache.lock(forKeys: ["k"]).isEmpty)
        #expect(try cache.touch(forKey: "k") == false)
        #expect(try cache.record(forKeyWithPrefix: "k", choosingKey: { $0.first }) == nil)
        _ = try cache.collectGarbage()
        try cache.removeAllUnlocked()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(events.corruptRemovals.isEmpty)

        let inspector = RecordInspector(
            layout: cache.layout, keyEncoding: .verbatim, defaultExpiration: 600, io: cache.io)
        let seen = try #require(inspector.inspect(name: "k", readPayload: true, now: 1000))
        #expect(seen.status == .unsupported)
    }
}
