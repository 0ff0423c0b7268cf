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
        options.memory.defaultExpiration = 10
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
        options.memory.countLimit = 2
        options.memory.totalCostLimit = 100
        options.memory.policy = .lru  // so that the survivors are the two most recent
        let cache = try HybridCache(options: options)
        #expect(cache.memory.countLimit == 2 && cache.memory.totalCostLimit == 100)
        for key in ["a", "b", "c"] { try cache.store(bytes(key), forKey: key) }
        #expect(cache.memory.keys() == ["b", "c"])
        #expect(try cache.value(forKey: "a") == bytes("a"))  // from disk
        options.memory.countLimit = -1
        #expect(cacheErrorCode { _ = try HybridCache(options: options) } == .invalidOptions)
    }

    @Test func wrapsExistingTiersAndForwardsClose() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock()
        let memory = try MemoryCache<String, Data>(clock: clock)
        let disk = try DiskCache(options: testOptions(dir.url, clock: clock))
        let cache = try HybridCache(memory: memory, disk: disk)
        #expect(cache.memory === memory && cache.disk === disk)
        try cache.store(bytes("x"), forKey: "k")
        #expect(memory.value(forKey: "k") == bytes("x"))
        cache.close()
        #expect(cacheErrorCode { try disk.store(bytes("y"), forKey: "k") } == .closed)
        #expect(cacheErrorCode { _ = try cache.value(forKey: "absent") } == .closed)
        // A negative expiry is an invalid argument (was invalidOptions for `ttl: -1`), checked before the closed cache.
        #expect(cacheErrorCode { try cache.store(bytes("x"), forKey: "k", expiry: .seconds(-1)) } == .invalidArgument)
    }

    // MARK: The unified API (issue 11)

    @Test func invalidExpiriesAreRejectedOnEveryPathAndBothTiersKeepTheirValues() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        try cache.store(bytes("old"), forKey: "k", expiry: .seconds(100))
        try cache.store(bytes("mem"), forKey: "m", in: .memory, expiry: .seconds(100))
        let before = cache.statistics
        for expiry in invalidExpiries {
            for tiers in [CacheTiers.all, .memory, .disk, []] {
                let error = #expect(throws: CacheError.self, "\(expiry) in \(tiers.rawValue)") {
                    try cache.store(bytes("new"), forKey: "k", in: tiers, expiry: expiry)
                }
                #expect(error?.code == .invalidArgument && error?.key == "k", "\(expiry) in \(tiers.rawValue)")
            }
            let typed = #expect(throws: CacheError.self, "\(expiry)") {
                try cache.store(Profile(name: "n", age: 1, tags: []), forKey: "m", expiry: expiry)
            }
            #expect(typed?.code == .invalidArgument, "\(expiry)")
            let called = awaitCallback {
                cache.store(bytes("new"), forKey: "k", expiry: expiry, queue: DispatchQueue(label: "t"), completion: $0)
            }
            #expect(called.response.error?.code == .invalidArgument, "\(expiry)")
        }
        #expect(cache.statistics == before)
        #expect(cache.memory.value(forKey: "k") == bytes("old"))
        #expect(cache.memory.value(forKey: "m") == bytes("mem"))
        let record = try #require(try cache.disk.record(forKey: "k"))
        #expect(record.data == bytes("old") && record.expiry == .seconds(100))
        #expect(!cache.disk.contains("m"))
        // The old values kept their old expiry in both tiers.
        clock.advance(by: 100)
        #expect(try cache.value(forKey: "m", from: .memory) == nil)
        clock.advance(by: 1)
        #expect(try cache.value(forKey: "k") == nil)
    }

    @Test func hugeExpiriesAreClampedInBothTiers() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        try cache.store(bytes("x"), forKey: "k", expiry: .seconds(1e30))
        try cache.store(bytes("m"), forKey: "m", in: .memory, expiry: .seconds(1e30))
        #expect(try cache.disk.record(forKey: "k")?.expiry == .seconds(Expiry.maximumSeconds))
        clock.advance(by: Expiry.maximumSeconds - 1)
        #expect(try cache.value(forKey: "k", from: .memory) == bytes("x"))
        #expect(try cache.value(forKey: "m", from: .memory) == bytes("m"))
        clock.advance(by: 1)
        #expect(try cache.value(forKey: "k", from: .memory) == nil)
        #expect(try cache.value(forKey: "m", from: .memory) == nil)
        #expect(try cache.value(forKey: "k", from: .disk) == bytes("x"))  // the disk's boundary is strict
        clock.advance(by: 1)
        #expect(try cache.value(forKey: "k") == nil)
    }

    @Test func removeSaysWhetherAnyTierHeldTheKey() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        _ = cache.disk.count
        try cache.store(bytes("b"), forKey: "both")
        try cache.store(bytes("m"), forKey: "mem", in: .memory)
        try cache.store(bytes("d"), forKey: "disk", in: .disk)
        try cache.store(bytes("s"), forKey: "stale", expiry: .seconds(1))
        clock.advance(by: 2)
        #expect(try cache.remove(forKey: "mem"))
        #expect(try cache.remove(forKey: "disk"))
        #expect(!(try cache.remove(forKey: "mem")))
        #expect(!(try cache.remove(forKey: "absent")))
        #expect(!(try cache.remove(forKey: "stale")))  // expired in both tiers: nothing live went
        try cache.store(bytes("m2"), forKey: "mem2", in: .memory)
        #expect(try cache.remove(forKeys: ["x", "both", "mem2", "both", "absent"]) == ["both", "mem2"])
        #expect(cache.memory.count == 0 && cache.disk.count == 0)
        #expect(try cache.remove(forKeys: []) == [])
        try cache.store(bytes("e"), forKey: "e")
        let removed = awaitCallback { cache.remove(forKeys: ["e", "f"], queue: DispatchQueue(label: "t"), completion: $0) }
        #expect(removed.response.value == ["e"])
    }

    @Test func containsIsNotAUseInEitherTier() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = hybridOptions(dir.url, clock: clock)
        options.memory.countLimit = 2
        options.memory.policy = .lru  // whose order shows whether contains counted as a use
        let cache = try HybridCache(options: options)
        _ = cache.disk.count
        try cache.store(bytes("a"), forKey: "a")
        clock.advance(by: 1)
        try cache.store(bytes("b"), forKey: "b")
        clock.advance(by: 1)
        try cache.store(bytes("d"), forKey: "d", in: .disk)
        clock.advance(by: 1)
        try cache.store(bytes("e"), forKey: "e", in: .disk)
        let before = cache.statistics
        // Asked most recent first, so that a contains that counted as a use would reverse the order.
        #expect(cache.contains("b") && cache.contains("a") && cache.contains("e") && cache.contains("d") && !cache.contains("z"))
        #expect(cache.statistics == before)
        #expect(cache.memory.keys() == ["a", "b"])
        #expect(!cache.memory.contains("d") && !cache.memory.contains("e"))  // not promoted
        #expect(try cache.disk.keys(withPrefix: "") == ["a", "b", "d", "e"])
        #expect(try cache.keys() == ["a", "b", "d", "e"])
        // "a" was not used by contains: it is the one memory evicts for a new entry.
        try cache.store(bytes("c"), forKey: "c")
        #expect(cache.memory.keys() == ["b", "c"])
        #expect(cache.statistics.memory.evictions == [.countLimit: 1])
    }

    @Test func statisticsSayWhichTierServedEachReadAndCombinedAddsUp() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let shipped = dir.appending("shipped")
        try FileManager.default.createDirectory(at: shipped, withIntermediateDirectories: true)
        try Data("from the app".utf8).write(to: shipped.appendingPathComponent("shipped"))
        var options = hybridOptions(dir.appending("cache"))
        options.preloaded = PreloadedEntries(directory: shipped, mode: .readThrough)
        let cache = try HybridCache(options: options)
        _ = cache.disk.count
        try cache.store(bytes("m"), forKey: "m")
        try cache.store(bytes("d"), forKey: "d", in: .disk)
        #expect(cache.statistics.memoryHits == 0 && cache.statistics.insertions == 2)
        #expect(try cache.value(forKey: "m") == bytes("m"))  // memory
        #expect(try cache.value(forKey: "d") == bytes("d"))  // disk, promoted
        #expect(try cache.value(forKey: "d") == bytes("d"))  // memory
        #expect(try cache.value(forKey: "shipped") == bytes("from the app"))  // preloaded, stored and promoted
        #expect(try cache.value(forKey: "shipped") == bytes("from the app"))  // memory
        #expect(try cache.value(forKey: "none") == nil)  // a miss in every tier
        #expect(try cache.value(forKey: "none", from: .memory) == nil)  // a miss in the tier asked
        #expect(try cache.value(forKey: "d", from: .disk) == bytes("d"))  // disk, memory not asked
        let stats = cache.statistics
        #expect(stats.memoryHits == 3 && stats.diskHits == 2 && stats.preloadedHits == 1 && stats.misses == 2, "\(stats)")
        #expect(stats.insertions == 2)
        // Each tier's own view: memory was asked 7 times, the disk 4.
        #expect(stats.memory.hits == 3 && stats.memory.misses == 4, "\(stats.memory)")
        #expect(stats.disk.hits == 2 && stats.disk.misses == 2, "\(stats.disk)")
        #expect(stats.disk.insertions == 3)  // "m", "d", and the preloaded entry kept on disk
        #expect(stats.memory.insertions == 3)  // "m", and the promotions of "d" and "shipped"
        // Combined: the hybrid as one cache, 8 reads.
        let combined = stats.combined
        #expect(combined.hits == stats.memoryHits + stats.diskHits + stats.preloadedHits)
        #expect(combined.hits == 6 && combined.misses == 2 && combined.lookups == 8 && combined.hitRate == 0.75)
        #expect(combined.insertions == 2)
        #expect(combined.expirations == stats.memory.expirations + stats.disk.expirations)
        #expect(combined.evictions == stats.memory.evictions.merging(stats.disk.evictions, uniquingKeysWith: +))
        #expect(combined.bytesRead == stats.disk.bytesRead && combined.bytesWritten == stats.disk.bytesWritten)
        #expect(combined.bytesWritten == 1 + 1 + 12)
    }

    @Test func oneEvictionReasonAcrossTiers() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let events = EventLog()
        var options = hybridOptions(dir.url, clock: clock)
        options.memory.countLimit = 1
        options.disk.eventHandler = events.handler
        let probeDir = TemporaryDirectory()
        defer { probeDir.remove() }
        let probe = try DiskCache(options: testOptions(probeDir.url))  // for the block size
        options.disk.sizeLimit = 2 * probe.blockSize
        probe.close()
        let cache = try HybridCache(options: options)
        _ = cache.disk.count
        for key in ["a", "b", "c"] {
            try cache.store(bytes(key), forKey: key)
            clock.advance(by: 1)
        }
        let stats = cache.statistics
        #expect(stats.memory.evictions == [.countLimit: 2])
        #expect(stats.disk.evictions == [.sizeLimit: 1])
        #expect(stats.combined.evictions == [.countLimit: 2, .sizeLimit: 1])
        #expect(stats.combined.totalEvictions == 3)
        #expect(
            events.all.contains { event in
                if case .recordEvicted("a", _, EvictionReason.sizeLimit) = event { return true }
                return false
            })
        #expect(cache.memory.keys() == ["c"])
        #expect(try cache.disk.keys(withPrefix: "") == ["b", "c"])
    }
}
