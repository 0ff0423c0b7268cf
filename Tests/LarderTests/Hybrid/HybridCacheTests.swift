import Foundation
import Testing
@testable import Larder

@Suite struct HybridCacheTests {
    @Test func diskHitIsPromotedWhenMemoryIsAsked() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.disk.store(bytes("hello"), forKey: "a")
        try cache.disk.store(bytes("world!"), forKey: "b")
        #expect(cache.memory.count == 0)

        #expect(try cache.value(forKey: "b", from: .disk) == bytes("world!"))
        #expect(cache.memory.count == 0)  // not asked: not promoted

        #expect(try cache.value(forKey: "a") == bytes("hello"))
        #expect(cache.memory.value(forKey: "a") == bytes("hello"))
        #expect(cache.memory.totalCost == 5)  // cost = byte count
        // Now served from memory even when the disk record goes away behind the cache's back.
        try cache.disk.remove(forKeys: ["a"])
        #expect(try cache.value(forKey: "a", from: .memory) == bytes("hello"))
    }

    @Test func aDiskReadCountsOneMemoryMissAndThenAHit() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.disk.store(bytes("hello"), forKey: "a")
        #expect(try cache.value(forKey: "a") == bytes("hello"))  // memory miss, disk hit, promotion
        #expect(try cache.value(forKey: "a") == bytes("hello"))  // memory hit
        #expect(try cache.value(forKey: "nothing") == nil)
        let memory = cache.memory.statistics
        #expect(memory.misses == 2 && memory.hits == 1, "\(memory)")
        #expect(cache.disk.statistics.hits == 1 && cache.disk.statistics.misses == 1)
    }

    @Test func storeWritesThroughToBothTiers() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.store(bytes("v1"), forKey: "k", expiry: .seconds(100))
        #expect(cache.memory.value(forKey: "k") == bytes("v1"))
        let record = try #require(try cache.disk.record(forKey: "k"))
        #expect(record.data == bytes("v1") && record.expiry == .seconds(100))
        try cache.store(bytes("v2"), forKey: "k")
        #expect(try cache.value(forKey: "k", from: .memory) == bytes("v2"))
        #expect(try cache.value(forKey: "k", from: .disk) == bytes("v2"))
    }

    @Test func tierSelectionNeverLeavesTheOtherTierServingTheReplacedValue() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.store(bytes("v1"), forKey: "k")

        try cache.store(bytes("v2"), forKey: "k", in: .disk)
        #expect(cache.memory.value(forKey: "k") == nil)
        #expect(try cache.value(forKey: "k", from: .memory) == nil)
        #expect(try cache.value(forKey: "k") == bytes("v2"))  // promoted
        #expect(try cache.value(forKey: "k", from: .memory) == bytes("v2"))

        try cache.store(bytes("v3"), forKey: "k", in: .memory)
        #expect(!cache.disk.contains("k"))
        #expect(try cache.value(forKey: "k", from: .disk) == nil)
        #expect(try cache.value(forKey: "k", from: .memory) == bytes("v3"))
        #expect(try cache.value(forKey: "k") == bytes("v3"))

        #expect(try cache.value(forKey: "k", from: []) == nil)
    }

    @Test func removeClearsEveryTier() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.store(bytes("x"), forKey: "k")
        try cache.store(bytes("y"), forKey: "other")
        #expect(try cache.remove(forKey: "k"))
        #expect(cache.memory.value(forKey: "k") == nil)
        #expect(try cache.disk.record(forKey: "k") == nil)
        #expect(try cache.value(forKey: "k") == nil)
        #expect(try cache.value(forKey: "other") == bytes("y"))
        #expect(!(try cache.remove(forKey: "absent")))  // not an error

        try cache.removeAll()
        #expect(cache.memory.count == 0 && cache.disk.count == 0)
        #expect(try cache.value(forKey: "other") == nil)
    }

    @Test func explicitTTLExpiresFromBothTiers() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        try cache.store(bytes("x"), forKey: "k", expiry: .seconds(60))
        clock.advance(by: 59)
        #expect(try cache.value(forKey: "k", from: .memory) == bytes("x"))
        clock.advance(by: 2)
        #expect(try cache.value(forKey: "k", from: .memory) == nil)
        #expect(try cache.value(forKey: "k") == nil)
        #expect(try cache.disk.record(forKey: "k") == nil)
    }

    // A record that has 50 s left on disk must not live 100 s in memory.
    @Test func promotionGivesMemoryTheTimeLeftOnDisk() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        try cache.disk.store(bytes("x"), forKey: "k", expiry: .seconds(100))
        clock.advance(by: 50)
        #expect(try cache.value(forKey: "k") == bytes("x"))
        #expect(cache.memory.value(forKey: "k") == bytes("x"))
        clock.advance(by: 49)
        #expect(try cache.value(forKey: "k", from: .memory) == bytes("x"))
        clock.advance(by: 2)  // 101 s after the store: expired on disk
        #expect(try cache.value(forKey: "k", from: .memory) == nil)
        #expect(try cache.value(forKey: "k") == nil)
    }

    // The documented promise: memory hits do not slide a ttl-0 entry's disk expiry; touch does.
    @Test func memoryHitsDoNotSlideTheDiskExpiryButTouchDoes() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))  // default expiration 600
        try cache.store(bytes("served"), forKey: "a")
        try cache.store(bytes("touched"), forKey: "b")
        clock.advance(by: 500)
        #expect(try cache.value(forKey: "a") == bytes("served"))  // a memory hit
        #expect(cache.memory.value(forKey: "a") != nil)
        #expect(try cache.touch(forKey: "b"))
        #expect(cache.memory.value(forKey: "b") == nil)  // dropped; comes back with the new expiry
        clock.advance(by: 101)  // 601 s after the stores
        #expect(try cache.value(forKey: "a") == nil)
        #expect(try cache.value(forKey: "b") == bytes("touched"))
        #expect(!(try cache.touch(forKey: "a")))
    }

    @Test func lockedEntriesOutliveTheirTTLInBothTiersUntilUnlocked() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        try cache.store(bytes("pinned"), forKey: "p", expiry: .seconds(60), locked: true)
        try cache.store(bytes("later"), forKey: "q", expiry: .seconds(60))
        #expect(try cache.lock(forKeys: ["q", "absent"]) == ["q"])
        clock.advance(by: 1_000)
        #expect(try cache.value(forKey: "p", from: .memory) == bytes("pinned"))
        #expect(try cache.value(forKey: "p") == bytes("pinned"))
        #expect(try cache.value(forKey: "q") == bytes("later"))
        #expect(try cache.unlock(forKeys: ["p", "q"]) == ["p", "q"])
        #expect(cache.memory.value(forKey: "p") == nil)
        #expect(try cache.value(forKey: "p") == nil)  // unlocked and long expired
        #expect(try cache.value(forKey: "q") == nil)
    }

    @Test func memoryDefaultExpirationCapsTheMemoryCopy() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = hybridOptions(dir.url, clock: clock)
        options.memoryDefaultExpiration = 10
        let cache = try HybridCache(options: options)
        try cache.store(bytes("x"), forKey: "k", expiry: .seconds(100))
        clock.advance(by: 11)
        #expect(try cache.value(forKey: "k", from: .memory) == nil)
        #expect(try cache.value(forKey: "k") == bytes("x"))  // still on disk, promoted again
        #expect(try cache.value(forKey: "k", from: .memory) == bytes("x"))
    }

    @Test func recordsTheDiskEvictsLeaveMemoryToo() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = hybridOptions(dir.url)
        options.disk.countLimit = 1
        let cache = try HybridCache(options: options)
        _ = cache.disk.count  // wait for the index, so that limits apply
        try cache.store(bytes("a"), forKey: "a")
        try cache.store(bytes("b"), forKey: "b")
        #expect(cache.disk.count == 1)
        #expect(try cache.value(forKey: "a", from: .memory) == nil)
        #expect(try cache.value(forKey: "b", from: .memory) == bytes("b"))
    }

    @Test func memoryLimitsComeFromTheOptions() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = hybridOptions(dir.url)
        options.countLimit = 2
        options.totalCostLimit = 100
        let cache = try HybridCache(options: options)
        #expect(cache.memory.countLimit == 2 && cache.memory.totalCostLimit == 100)
        for key in ["a", "b", "c"] { try cache.store(bytes(key), forKey: key) }
        #expect(cache.memory.keys() == ["b", "c"])
        #expect(try cache.value(forKey: "a") == bytes("a"))  // from disk
        options.countLimit = -1
        #expect(cacheErrorCode { _ = try HybridCache(options: options) } == .invalidOptions)
    }

    @Test func wrapsExistingTiersAndForwardsClose() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        let memory = MemoryCache<String, Data>(clock: clock)
        let disk = try DiskCache(options: testOptions(dir.url, clock: clock))
        let cache = HybridCache(memory: memory, disk: disk)
        #expect(cache.memory === memory && cache.disk === disk)
        try cache.store(bytes("x"), forKey: "k")
        #expect(memory.value(forKey: "k") == bytes("x"))
        cache.close()
        #expect(cacheErrorCode { try disk.store(bytes("y"), forKey: "k") } == .closed)
        #expect(cacheErrorCode { _ = try cache.value(forKey: "absent") } == .closed)
        // A negative expiry is an invalid argument (was invalidOptions for `ttl: -1`), checked before the closed cache.
        #expect(cacheErrorCode { try cache.store(bytes("x"), forKey: "k", expiry: .seconds(-1)) } == .invalidArgument)
    }
}
