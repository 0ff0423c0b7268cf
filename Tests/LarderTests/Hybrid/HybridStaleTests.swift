import Foundation
import Testing
@testable import Larder

/// Stale-while-revalidate and stale-if-error, driven by a manual clock.
///
/// Every test stores `v1` for 60 s at `t0`; its record expires at `t0 + 60`, so advancing the
/// clock by 70 s leaves it expired for 10 s (a whole-second rule: SPT's `now - anchor > ttl`).
@Suite struct HybridStaleTests {
    let v1 = bytes("v1")
    let v2 = bytes("v2")

    /// A cache with `windows` as its default, `v1` stored under "k" for 60 s, and the clock moved
    /// `advance` seconds on.
    func makeCache(
        _ temporary: TemporaryDirectory, windows: StaleWindows = .none, log: LoadEventLog, advance: Double = 70,
        locked: Bool = false, in tiers: CacheTiers = .all, expiry: Expiry = .seconds(60)
    ) throws -> (HybridCache, ManualClock) {
        let clock = ManualClock(now: 1_700_000_000)
        var options = hybridOptions(temporary.url, clock: clock)
        options.staleWindows = windows
        options.loadEventHandler = log.handler
        let cache = try HybridCache(options: options)
        try cache.store(v1, forKey: "k", in: tiers, expiry: expiry, locked: locked)
        clock.advance(by: advance)
        return (cache, clock)
    }

    @Test func aValueWithinTheRevalidateWindowIsServedWhileOneLoadRefreshesIt() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 30), log: log)
        let gate = Gate()
        let loader = CountingLoader(gate: gate) { _ in bytes("v2") }
        // Served at once, while the refresh waits at the gate.
        let first = Task { try await cache.value(forKey: "k", expiry: .seconds(60), orLoad: loader.load) }
        await eventually("the stale value was served") { cache.statistics.staleServes == 1 }
        // A second caller during the refresh gets the same stale value, and no second load.
        let second = Task { try await cache.value(forKey: "k", expiry: .seconds(60), orLoad: loader.load) }
        await eventually("the second caller was served") { cache.statistics.staleServes == 2 }
        // The stale read was not a use: the record is still expired, not slid to fresh.
        #expect(!cache.contains("k") && recordFiles(in: temporary.url).count == 1)
        gate.open()
        #expect(try await first.value == v1)
        #expect(try await second.value == v1)
        await eventually("the refresh finished") { log.loadedKeys == ["k"] && cache.loads.count == 0 }
        #expect(loader.count == 1)
        // The next read gets the new value, from memory, with no further load.
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == v2)
        #expect(try await cache.value(forKey: "k") == v2)
        #expect(loader.count == 1)
        let stats = cache.statistics
        #expect(stats.loads == 1 && stats.staleServes == 2 && stats.coalescedWaits == 0 && stats.loaderFailures == 0)
        let serves = log.staleServes
        #expect(serves.count == 2 && serves.allSatisfy { $0.key == "k" && $0.expiredFor == 10 && $0.reason == .revalidating })
        #expect(try await cache.disk.record(forKey: "k")?.data == v2)
    }

    @Test func aValuePastTheRevalidateWindowWaitsForTheLoad() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 30), log: log, advance: 100)
        let loader = CountingLoader { _ in bytes("v2") }
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == v2)
        #expect(loader.count == 1 && cache.statistics.staleServes == 0 && log.staleServes.isEmpty)
    }

    @Test func withoutAWindowAnExpiredValueIsAMiss() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, log: log)
        let loader = CountingLoader { _ in bytes("v2") }
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == v2)
        #expect(loader.count == 1 && cache.statistics.staleServes == 0)
    }

    @Test func aWindowGivenByTheCallOverridesTheCaches() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, log: log)
        let gate = Gate()
        let loader = CountingLoader(gate: gate) { _ in bytes("v2") }
        let call = Task { try await cache.value(forKey: "k", staleWindows: StaleWindows(whileRevalidate: 11), orLoad: loader.load) }
        await eventually("the stale value was served") { cache.statistics.staleServes == 1 }
        gate.open()
        #expect(try await call.value == v1)
        await eventually("the refresh finished") { log.loadedKeys == ["k"] }
    }

    @Test func aFailedLoadServesAValueWithinTheErrorWindow() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, clock) = try makeCache(temporary, windows: StaleWindows(ifError: 30), log: log)
        let gate = Gate()
        let failing = CountingLoader(gate: gate, failure: LoaderFailure())
        // Every waiting caller gets the stale value instead of the error.
        let callers = (0 ..< 5).map { _ in Task { try await cache.value(forKey: "k", orLoad: failing.load) } }
        await eventually("five callers on one load") { failing.count == 1 && cache.statistics.coalescedWaits == 4 }
        gate.open()
        for caller in callers { #expect(try await caller.value == v1) }
        #expect(failing.count == 1)
        var stats = cache.statistics
        #expect(stats.loads == 1 && stats.loaderFailures == 1 && stats.staleServes == 5)
        let serves = log.staleServes
        #expect(serves.count == 5 && serves.allSatisfy { $0.expiredFor == 10 && $0.reason == .loadFailed })
        #expect(log.all.contains { if case .loadFailed("k", _) = $0 { true } else { false } })
        // The failure is not cached and the stale record stays: the next call loads again.
        #expect(recordFiles(in: temporary.url).count == 1)
        #expect(try await cache.value(forKey: "k", orLoad: failing.load) == v1)
        #expect(failing.count == 2)
        // Once the loader succeeds, the new value replaces the stale one.
        let loader = CountingLoader { _ in bytes("v2") }
        #expect(try await cache.value(forKey: "k", expiry: .seconds(60), orLoad: loader.load) == v2)
        #expect(try await cache.value(forKey: "k") == v2)
        stats = cache.statistics
        #expect(stats.loads == 3 && stats.loaderFailures == 2 && stats.staleServes == 6)
        // Past the window (v2 expired 40 s ago), the error comes through.
        clock.advance(by: 100)
        #expect(
            await asyncErrorCode { () async throws(CacheError) in try await cache.value(forKey: "k", orLoad: failing.load) }
                == .loadFailed)
    }

    @Test func aFailedLoadPastTheErrorWindowThrows() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 5, ifError: 10), log: log)
        let failing = CountingLoader(failure: LoaderFailure())
        // Expired 10 s ago: not less than either window.
        #expect(
            await asyncErrorCode { () async throws(CacheError) in try await cache.value(forKey: "k", orLoad: failing.load) }
                == .loadFailed)
        #expect(failing.count == 1 && cache.statistics.staleServes == 0 && log.staleServes.isEmpty)
    }

    @Test func aFailedRevalidationLeavesTheStaleValueForTheNextCall() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 30), log: log)
        let failing = CountingLoader(failure: LoaderFailure())
        #expect(try await cache.value(forKey: "k", orLoad: failing.load) == v1)
        await eventually("the refresh failed") { cache.statistics.loaderFailures == 1 && cache.loads.count == 0 }
        #expect(try await cache.value(forKey: "k", orLoad: failing.load) == v1)
        await eventually("the second refresh failed") { cache.statistics.loaderFailures == 2 && cache.loads.count == 0 }
        #expect(failing.count == 2 && log.staleServes.allSatisfy { $0.reason == .revalidating })
    }

    @Test(arguments: [CacheTiers.all, .disk])
    func lockedRecordsAreNeverStale(tiers: CacheTiers) async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(
            temporary, windows: StaleWindows(whileRevalidate: 1_000, ifError: 1_000), log: log, advance: 500, locked: true, in: tiers)
        let loader = CountingLoader { _ in bytes("v2") }
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == v1)
        #expect(loader.count == 0 && cache.statistics.staleServes == 0 && log.all.isEmpty)
    }

    @Test func aDefaultExpiryValueIsServedStaleWithoutSliding() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        // The test disk's default expiration is 600 s, sliding with each use.
        let (cache, _) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 30), log: log, advance: 610, expiry: .default)
        let gate = Gate()
        let loader = CountingLoader(gate: gate) { _ in bytes("v2") }
        let call = Task { try await cache.value(forKey: "k", orLoad: loader.load) }
        await eventually("the stale value was served") { cache.statistics.staleServes == 1 }
        #expect(!cache.contains("k"))
        gate.open()
        #expect(try await call.value == v1)
        await eventually("the refresh finished") { log.loadedKeys == ["k"] && cache.loads.count == 0 }
        #expect(try await cache.value(forKey: "k") == v2 && log.staleServes.first?.expiredFor == 10)
    }

    // MARK: - What keeps a stale value on disk

    /// A plain read of the expired record (memory, then disk; or the disk's own `record(forKey:)`)
    /// misses and leaves it, so the load-through read that follows serves it while its refresh
    /// still waits at the gate.
    @Test(arguments: [true, false])
    func aPlainReadAfterExpiryLeavesTheStaleValueForTheNextLoadThroughRead(throughTheDisk: Bool) async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 30), log: log)
        #expect(cache.disk.staleRetention == 30 && cache.disk.options.staleRetention == 30)
        if throughTheDisk {
            #expect(try await cache.disk.record(forKey: "k") == nil)
        } else {
            #expect(try await cache.value(forKey: "k") == nil)
        }
        #expect(!cache.contains("k") && recordFiles(in: temporary.url).count == 1)
        let gate = Gate()
        let loader = CountingLoader(gate: gate) { _ in bytes("v2") }
        // Returns while the loader is held at the gate: the stale value came first.
        #expect(try await cache.value(forKey: "k", expiry: .seconds(60), orLoad: loader.load) == v1)
        #expect(cache.statistics.staleServes == 1 && log.staleServes.first?.expiredFor == 10)
        gate.open()
        await eventually("the refresh finished") { log.loadedKeys == ["k"] && cache.loads.count == 0 }
        #expect(try await cache.value(forKey: "k") == v2 && loader.count == 1)
    }

    @Test func aCollectionInsideTheWindowKeepsTheStaleValueAndOnePastItRemovesIt() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, clock) = try makeCache(temporary, windows: StaleWindows(ifError: 30), log: log)
        let failing = CountingLoader(failure: LoaderFailure())
        // Expired 10 s ago: kept, and served in place of the loader's error.
        #expect(try await cache.collectGarbage().removed.isEmpty)
        #expect(try await cache.value(forKey: "k", orLoad: failing.load) == v1)
        // Expired 29 s ago: still inside the window.
        clock.advance(by: 19)
        #expect(try await cache.collectGarbage().removed.isEmpty)
        #expect(try await cache.value(forKey: "k", orLoad: failing.load) == v1)
        // Expired 31 s ago: past it, the collection removes the record, and the error comes through.
        clock.advance(by: 2)
        #expect(try await cache.collectGarbage().removed.map(\.key) == ["k"])
        #expect(recordFiles(in: temporary.url).isEmpty)
        #expect(
            await asyncErrorCode { () async throws(CacheError) in try await cache.value(forKey: "k", orLoad: failing.load) }
                == .loadFailed)
        #expect(failing.count == 3 && cache.statistics.staleServes == 2)
    }

    @Test func aRemovalOrAReplacementEndsAStaleValueAtOnce() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, clock) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 1_000, ifError: 1_000), log: log)
        try await cache.store(v1, forKey: "other", expiry: .seconds(1))
        clock.advance(by: 5)
        #expect(try await cache.value(forKey: "k") == nil)
        #expect(try await cache.value(forKey: "other") == nil)
        #expect(recordFiles(in: temporary.url).count == 2)
        try await cache.remove(forKey: "k")
        let loader = CountingLoader { _ in bytes("loaded") }
        // Removed: nothing stale; the caller waits for the load.
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == bytes("loaded") && loader.count == 1)
        // Replaced: the new value, with no load.
        try await cache.store(v2, forKey: "k", expiry: .seconds(60))
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == v2 && loader.count == 1)
        // removeAll ends the stale "other" too.
        try await cache.removeAll()
        #expect(try await cache.value(forKey: "other", orLoad: loader.load) == bytes("loaded") && loader.count == 2)
        #expect(cache.statistics.staleServes == 0 && log.staleServes.isEmpty)
    }

    /// A call's windows longer than the cache's read only what the disk still holds: the plain read
    /// removed the record once it had been expired as long as the cache's window (10 s, not less).
    @Test func aCallsLongerWindowCannotBringBackWhatTheCachesWindowLetGo() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        let (cache, _) = try makeCache(temporary, windows: StaleWindows(whileRevalidate: 10), log: log)
        #expect(try await cache.value(forKey: "k") == nil)
        #expect(recordFiles(in: temporary.url).isEmpty)
        let loader = CountingLoader { _ in bytes("v2") }
        let call = try await cache.value(forKey: "k", staleWindows: StaleWindows(whileRevalidate: 60), orLoad: loader.load)
        #expect(call == v2 && loader.count == 1 && cache.statistics.staleServes == 0)
    }

    /// A hybrid over an open disk raises the disk's retention to its longer window, and never
    /// lowers it; options' retention longer than the windows is kept.
    @Test func theHybridRaisesItsDisksRetentionToItsLongestWindow() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let disk = try DiskCache(options: testOptions(temporary.url, clock: clock))
        #expect(disk.staleRetention == 0)
        let memory = try MemoryCache<String, Data>(clock: clock)
        _ = try HybridCache(memory: memory, disk: disk, staleWindows: StaleWindows(whileRevalidate: 20, ifError: 50))
        #expect(disk.staleRetention == 50 && disk.options.staleRetention == 0)
        _ = try HybridCache(memory: memory, disk: disk, staleWindows: StaleWindows(whileRevalidate: 5))
        #expect(disk.staleRetention == 50)
        // The raised retention keeps an expired record from a read of the disk itself.
        try disk.store(v1, forKey: "k", expiry: .seconds(60))
        clock.advance(by: 100)
        #expect(try disk.record(forKey: "k") == nil && disk.count == 1)

        let other = TemporaryDirectory()
        defer { other.remove() }
        var options = hybridOptions(other.url)
        options.disk.staleRetention = 90
        options.staleWindows = StaleWindows(whileRevalidate: 30)
        #expect(try HybridCache(options: options).disk.staleRetention == 90)
    }
}
