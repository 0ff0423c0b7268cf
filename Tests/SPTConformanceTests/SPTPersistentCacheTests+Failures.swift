#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCacheTests.m:1245-1688: the tests that swizzle Foundation, mock NSFileManager or
// SPT's POSIX wrapper, or call with nil callbacks. Their Swift meaning: failures injected
// through Larder's system-call seam (`FaultInjector`), and the non-optional completions of
// the callback forms.
extension SPTPersistentCacheTests {
    /// The key whose record file's path ends a path the fault filters see.
    static func isRecord(_ key: String) -> @Sendable (String) -> Bool { { $0.hasSuffix("/" + key) } }

    /// A cache on `folder` at `kTestEpochTime` with SPT's default expiration: SPT's `self.cache`.
    static func setUpCache(
        _ folder: SPTImageFolder, clock: ManualClock = ManualClock(now: SPTTestData.testEpochTime), events: EventLog? = nil,
        faults: FaultInjector? = nil, configure: (inout DiskCacheOptions) -> Void = { _ in }
    ) throws -> DiskCache {
        let cache = try folder.makeCache(clock: clock, events: events, systemCalls: faults?.calls ?? .live, configure: configure)
        _ = cache.count  // the index is built: faults armed from here hit the calls under test only
        return cache
    }

    /// SPTPersistentCacheTests.m:1245. SPT swaps `+[NSFileManager defaultManager]` for `nil`, so
    /// the folder cannot be made, and `initWithOptions:` returns `nil`; Larder's initializer throws.
    @Test func testInitNilWhenCannotCreateCacheDirectory() throws {
        let directory = TemporaryDirectory("spt-conformance")
        defer { directory.remove() }
        var options = DiskCacheOptions.spt(directory: directory.appending("com.spotify.temppersistent.image.cache"))
        options.name = "test"
        let faults = FaultInjector()
        faults.arm(every: .mkdir, .fail(EACCES))
        do {
            _ = try DiskCache(options: options, systemCalls: faults.calls)
            Issue.record("The cache should not open if it could not create the directory")
        } catch {
            #expect(error.code == .ioFailure && error.errno == EACCES)
        }
        #expect(!FileManager.default.fileExists(atPath: options.directory.path))
        // SPT's `createCacheDirectory` also refuses a file where the folder should be.
        #expect(FileManager.default.createFile(atPath: options.directory.path, contents: Data("file".utf8)))
        do {
            _ = try DiskCache(options: options)
            Issue.record("The cache should not open on a file")
        } catch {
            #expect(error.code == .ioFailure)
        }
    }

    /// SPTPersistentCacheTests.m:1263. Objective-C plumbing: SPT refuses a load with a `nil`
    /// callback or queue (returns `NO`). A Swift completion cannot be absent, and the queue
    /// defaults to the main queue; a load that wants no callback is the synchronous or `async`
    /// form, which answers `nil` for the absent key.
    @Test func testFailToLoadDataWhenCallbackAbsent() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        #expect(try { () throws(CacheError) in try cache.value(forKey: "Thing") }() == nil)
        #expect(try await cache.record(forKey: "Thing") == nil)
        #expect(cache.statistics.misses == 2)
    }

    /// SPTPersistentCacheTests.m:1269. Objective-C plumbing, as `testFailToLoadDataWhenCallbackAbsent`:
    /// the prefix load without a callback is the synchronous or `async` form.
    @Test func testFailToLoadDataForKeysWithPrefixWhenCallbackAbsent() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let asked = Box(false)
        let synchronous = try { () throws(CacheError) in
            try cache.record(forKeyWithPrefix: "T") { _ in
                asked.value = true
                return nil
            }
        }()
        #expect(synchronous == nil)
        #expect(
            try await cache.record(forKeyWithPrefix: "T") { _ in
                asked.value = true
                return nil
            } == nil)
        #expect(!asked.value)
    }

    /// SPTPersistentCacheTests.m:1275. SPT's mock file manager cannot list the folder, and the
    /// prefix load reports an error. Difference: Larder's prefix load asks its index, built when
    /// the cache opened; a folder it could not list then holds no keys for it, and the prefix load
    /// finds none (a load by key still goes to the file).
    @Test func testFailToRetrieveDirectoryContents() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        // As SPT's folder, without Larder's index snapshot: its folder stamps would vouch for
        // the shard folders and spare their listing (a real `chmod` would change their stamps).
        unlink(folder.path + "/.larder-index")
        let faults = FaultInjector()
        // The shard folders (two-letter names) cannot be listed; the root can.
        faults.arm(every: .listDirectory, .fail(EACCES), onlyPaths: { lastPathComponent($0).count == 2 })
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime), systemCalls: faults.calls)
        defer { cache.close() }
        #expect(cache.count == 0)
        #expect(faults.fired > 0)
        let key = folder.imageNames[SPTTestData.params.firstIndex { $0.corruption == nil }!]
        let response = await callback { queue, completion in
            cache.record(forKeyWithPrefix: String(key.prefix(2)), choosingKey: { $0.first }, queue: queue, completion: completion)
        }
        guard case .notFound = response else {
            Issue.record("expected NotFound, got \(response)")
            return
        }
        #expect(try await cache.value(forKey: key) == (try SPTTestData.imageData(key)))
    }

    /// SPTPersistentCacheTests.m:1294
    @Test func testNotFoundIfCacheDirectoryIsDeleted() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        try FileManager.default.removeItem(atPath: folder.path)
        for prefix in ["T", String(folder.imageNames[0].prefix(2))] {
            let response = await callback { queue, completion in
                cache.record(forKeyWithPrefix: prefix, choosingKey: { $0.first }, queue: queue, completion: completion)
            }
            // The index still offers the second prefix's keys; the chosen file is gone.
            guard case .notFound = response else {
                Issue.record("expected NotFound for \(prefix), got \(response)")
                continue
            }
        }
    }

    /// SPTPersistentCacheTests.m:1307
    @Test func testNoValidKeys() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let asked = Box(false)
        let response = await callback { queue, completion in
            cache.record(
                forKeyWithPrefix: "T",
                choosingKey: { keys in
                    asked.value = true
                    return keys.first
                }, queue: queue, completion: completion)
        }
        guard case .notFound = response else {
            Issue.record("expected NotFound, got \(response)")
            return
        }
        #expect(!asked.value, "the chooser is not asked to choose among no keys")
    }

    /// SPTPersistentCacheTests.m:1319 (`DISABLED_testTouchDataWithExpiredHeader`, disabled in
    /// SPT; ported and enabled). SPT takes the first record with a ttl; at `kTestEpochTime * 100`
    /// it has expired unless it is the kTTL2 one (a week), so this port touches every record
    /// with a ttl and expects NotFound exactly for the expired ones.
    @Test func testTouchDataWithExpiredHeader() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let clock = ManualClock(now: SPTTestData.testEpochTime)
        let cache = try Self.setUpCache(folder, clock: clock)
        defer { cache.close() }
        let withTTL = folder.imageNames.indices.filter { SPTTestData.params[$0].ttl != 0 }
        #expect(
            try await cache.unlock(forKeys: withTTL.map { folder.imageNames[$0] }).count == withTTL.count { SPTTestData.params[$0].locked })
        clock.now = SPTTestData.testEpochTime * 100
        for i in withTTL {
            let expired = clock.now - SPTTestData.testEpochTime > Double(SPTTestData.params[i].ttl)
            let response = await callback { cache.touch(forKey: folder.imageNames[i], queue: $0, completion: $1) }
            #expect((response.value == false) == expired)
        }
    }

    /// SPTPersistentCacheTests.m:1340. As the test above: every record with a ttl, unlocked, then
    /// locked at `kTestEpochTime * 100`; an expired record cannot be locked (Req.#1.2).
    @Test func testLockDataWithExpiredHeader() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let clock = ManualClock(now: SPTTestData.testEpochTime)
        let cache = try Self.setUpCache(folder, clock: clock)
        defer { cache.close() }
        let withTTL = folder.imageNames.indices.filter { SPTTestData.params[$0].ttl != 0 }
        _ = try await cache.unlock(forKeys: withTTL.map { folder.imageNames[$0] })
        clock.now = SPTTestData.testEpochTime * 100
        for i in withTTL {
            let expired = clock.now - SPTTestData.testEpochTime > Double(SPTTestData.params[i].ttl)
            let response = await callback { cache.lock(forKeys: [folder.imageNames[i]], queue: $0, completion: $1) }
            // SPT: NotFound for the expired key. Larder answers with the keys it locked.
            #expect(response.value == (expired ? [] : [folder.imageNames[i]]))
            #expect(SPTHeader.read(atPath: folder.path(forKey: folder.imageNames[i]))?.refCount == (expired ? 0 : 1))
        }
    }

    /// SPTPersistentCacheTests.m:1361. Unlocking more often than locking: the lock count stops
    /// at 0, and no response reaches the caller except through the queue it gave.
    @Test func testUnlockDataMoreTimesThanLocked() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let index = try #require(folder.imageNames.indices.first { SPTTestData.params[$0].ttl != 0 })
        let key = folder.imageNames[index]
        let delivery = DispatchQueue(label: "spt-conformance.unlock")
        delivery.suspend()
        let called = Box(false)
        let responses = Box<[[String]?]>([])
        await withCheckedContinuation { (all: CheckedContinuation<Void, Never>) in
            for _ in 0 ..< 50 {
                cache.unlock(forKeys: [key], queue: delivery) { response in
                    called.value = true
                    if responses.update({
                        $0.append(response.value)
                        return $0.count
                    }) == 50 {
                        all.resume()
                    }
                }
            }
            #expect(!called.value)
            delivery.resume()
        }
        #expect(responses.value.allSatisfy { $0 != nil })
        #expect(responses.value.count { $0 == [key] } == (SPTTestData.params[index].locked ? 1 : 0))
        #expect(SPTHeader.read(atPath: folder.path(forKey: key))?.refCount == 0)
    }

    /// SPTPersistentCacheTests.m:1379. `currentDateTimeInterval` is the wall clock: Larder's
    /// `SystemClock`, the preset's clock, which moves on. SPT sleeps a beat between its two
    /// readings; here the clock is read until it changes (a bounded number of times), and the
    /// later reading is greater, as SPT asserts.
    @Test func testCurrentDataTimeInterval() {
        let options = DiskCacheOptions.spt(directory: URL(fileURLWithPath: "/tmp/unused"))
        #expect(options.clock is SystemClock)
        let before = Date().timeIntervalSince1970
        let first = options.clock.now
        var second = options.clock.now
        var readings = 0
        while second == first, readings < 100_000_000 {
            second = options.clock.now
            readings += 1
        }
        let after = Date().timeIntervalSince1970
        #expect(second > first)
        #expect(before <= first && second <= after)
    }

    /// SPTPersistentCacheTests.m:1390. SPT refuses an unlock of no keys (returns `NO`, no
    /// callback). Difference: Larder unlocks nothing, and says so: an empty list of keys.
    @Test func testUnlockDataWithNoKeys() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        #expect(try { () throws(CacheError) in try cache.unlock(forKeys: []) }() == [])
        #expect(await callback { cache.unlock(forKeys: [], queue: $0, completion: $1) }.value == [])
    }

    /// SPTPersistentCacheTests.m:1396. SPT's `lockedItemsSizeInBytes` is 0 when no file's
    /// attributes can be read; Larder's `lockedSize` is 0 when no shard folder could be listed
    /// when the index was built.
    @Test func testLockedItemSizeInBytesWithInvalidDirectoryAttributes() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        // As SPT's folder, without Larder's index snapshot, whose folder stamps would spare the
        // listing of unchanged shard folders (and then their locked sizes count).
        unlink(folder.path + "/.larder-index")
        let faults = FaultInjector()
        faults.arm(every: .listDirectory, .fail(EIO), onlyPaths: { lastPathComponent($0).count == 2 })
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime), systemCalls: faults.calls)
        defer { cache.close() }
        #expect(cache.lockedSize == 0)
        #expect(faults.fired > 0)
    }

    /// SPTPersistentCacheTests.m:1409. SPT's read of the file fails (swizzled
    /// `dataWithContentsOfFile:`): an error response. Larder's `pread` fails.
    @Test func testErrorWhenCannotReadFile() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let cache = try Self.setUpCache(folder, faults: faults)
        defer { cache.close() }
        let key = folder.imageNames[0]
        faults.arm(every: .pread, .fail(EIO), onlyPaths: Self.isRecord(key))
        let response = await callback { cache.record(forKey: key, queue: $0, completion: $1) }
        #expect(response.error?.code == .ioFailure && response.error?.errno == EIO)
        faults.disarm()
        #expect(try await cache.value(forKey: key) == (try SPTTestData.imageData(key)), "a failed read removes nothing")
    }

    /// SPTPersistentCacheTests.m:1427. As `testUnlockDataWithNoKeys`, for locks.
    @Test func testLockDataWithNoKeys() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        #expect(try { () throws(CacheError) in try cache.lock(forKeys: []) }() == [])
        #expect(await callback { cache.lock(forKeys: [], queue: $0, completion: $1) }.value == [])
    }

    /// SPTPersistentCacheTests.m:1433. SPT's write-back of a ttl-0 record's new access time
    /// fails during a load, and the load still succeeds. Difference: a Larder load writes
    /// nothing; the access time reaches the header at the next collection, whose failure is
    /// reported as an `ioError` event.
    @Test func testWriteToHeaderFailed() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let events = EventLog()
        // One second after the stores, so that the access moves the record's update time.
        let cache = try Self.setUpCache(folder, clock: ManualClock(now: SPTTestData.testEpochTime + 1), events: events, faults: faults)
        defer { cache.close() }
        let key = folder.imageNames[0]
        faults.arm(every: .pwrite, .fail(EIO), onlyPaths: Self.isRecord(key))
        let response = await callback { cache.record(forKey: key, queue: $0, completion: $1) }
        try folder.checkRecord(response, index: 0)
        #expect(faults.fired == 0)
        _ = try await cache.collectGarbage()
        #expect(faults.fired > 0)
        #expect(events.ioErrors.contains { $0.operation == "write-back" && $0.path.hasSuffix("/" + key) })
    }

    /// SPTPersistentCacheTests.m:1451. SPT's write of a new record fails: an error response.
    /// Difference: SPT then removes the key (SPTPersistentCache.m:636-639); Larder writes a
    /// temporary file and renames it, so a failed store leaves the previous record intact.
    @Test func testWriteFailedOnStoreData() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let cache = try Self.setUpCache(folder, faults: faults)
        defer { cache.close() }
        faults.arm(every: .write, .fail(EIO))
        let response = await callback { cache.store(Data("TEST".utf8), forKey: "TEST", queue: $0, completion: $1) }
        #expect(response.error?.code == .ioFailure && response.error?.errno == EIO)
        let key = folder.imageNames[2]
        let overwrite = await callback { cache.store(Data("TEST".utf8), forKey: key, queue: $0, completion: $1) }
        #expect(overwrite.error?.code == .ioFailure)
        faults.disarm()
        #expect(try await cache.value(forKey: "TEST") == nil)
        #expect(try await cache.value(forKey: key) == (try SPTTestData.imageData(key)))
    }

    /// SPTPersistentCacheTests.m:1469. SPT's record vanishes between `fileExistsAtPath:` and
    /// `open`, and the touch reports an error. Larder opens the file without asking first: an
    /// open that fails is an error, and a vanished file is simply absent.
    @Test func testOpenFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let cache = try Self.setUpCache(folder, faults: faults)
        defer { cache.close() }
        let key = folder.imageNames[0]
        faults.arm(every: .open, .fail(EACCES), onlyPaths: Self.isRecord(key))
        let failed = await callback { cache.touch(forKey: key, queue: $0, completion: $1) }
        #expect(failed.error?.code == .ioFailure && failed.error?.errno == EACCES)
        faults.disarm()
        try FileManager.default.removeItem(atPath: folder.path(forKey: key))
        let vanished = await callback { cache.touch(forKey: key, queue: $0, completion: $1) }
        #expect(vanished.value == false)
    }

    /// SPTPersistentCacheTests.m:1486. SPT reports `close` failing after a touch as an error.
    /// Difference: Larder ignores what `close` reports (on Linux the descriptor is released
    /// either way, and a touch wrote nothing through it), so the touch succeeds.
    @Test func testCloseFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let cache = try Self.setUpCache(folder, faults: faults)
        defer { cache.close() }
        let key = folder.imageNames[0]
        faults.arm(every: .close, .fail(EIO), onlyPaths: Self.isRecord(key))
        let response = await callback { cache.touch(forKey: key, queue: $0, completion: $1) }
        #expect(faults.fired > 0)
        #expect(response.value == true)
    }

    /// SPTPersistentCacheTests.m:1499. A touch whose header read fails reports an error.
    @Test func testReadFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let cache = try Self.setUpCache(folder, faults: faults)
        defer { cache.close() }
        let key = folder.imageNames[0]
        faults.arm(every: .pread, .fail(EIO), onlyPaths: Self.isRecord(key))
        let response = await callback { cache.touch(forKey: key, queue: $0, completion: $1) }
        #expect(response.error?.code == .ioFailure && response.error?.errno == EIO)
    }

    /// SPTPersistentCacheTests.m:1513. SPT's `lseek` before rewriting the touched header fails:
    /// an error response. Larder never seeks (`pread`/`pwrite` at an offset), and a touch writes
    /// nothing (Difference: access times are written back in batches); the header write's
    /// failure, at the next collection, is reported as an `ioError` event.
    @Test func testlseekFailure() async throws {
        try await Self.headerWriteBackFails(.fail(EIO))
    }

    /// SPTPersistentCacheTests.m:1529. As `testlseekFailure`, with the header write writing nothing.
    @Test func testWriteFailure() async throws {
        try await Self.headerWriteBackFails(.transferNothing)
    }

    /// A touch at `kTestEpochTime * 10`, whose header write-back then fails with `fault`.
    static func headerWriteBackFails(_ fault: FaultInjector.Fault) async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let events = EventLog()
        let cache = try setUpCache(folder, clock: ManualClock(now: SPTTestData.testEpochTime * 10), events: events, faults: faults)
        defer { cache.close() }
        let key = folder.imageNames[0]  // kParams[0]: ttl 0, locked, so the touch moves its update time
        faults.arm(every: .pwrite, fault, onlyPaths: isRecord(key))
        let response = await callback { cache.touch(forKey: key, queue: $0, completion: $1) }
        #expect(response.value == true)
        _ = try await cache.collectGarbage()
        #expect(faults.fired > 0)
        #expect(events.ioErrors.contains { $0.operation == "write-back" && $0.path.hasSuffix("/" + key) })
    }

    /// SPTPersistentCacheTests.m:1545. SPT's `fsync` after rewriting the touched header fails:
    /// an error response. Difference: Larder's access-time write-back never syncs (losing one
    /// to a crash costs a place in the LRU order, not data), so the touch succeeds; a header
    /// change that matters, a lock, syncs under `Durability.fsync`, and fails as SPT's touch
    /// does, leaving the lock count as it was.
    @Test func testFsyncFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let cache = try Self.setUpCache(folder, clock: ManualClock(now: SPTTestData.testEpochTime * 10), faults: faults) {
            $0.durability = .fsync
        }
        defer { cache.close() }
        let key = folder.imageNames[0]
        faults.arm(every: .fsync, .fail(EIO), onlyPaths: Self.isRecord(key))
        #expect(await callback { cache.touch(forKey: key, queue: $0, completion: $1) }.value == true)
        let locked = await callback { cache.lock(forKeys: [key], queue: $0, completion: $1) }
        #expect(locked.error?.code == .ioFailure && locked.error?.errno == EIO)
        #expect(faults.fired > 0)
        #expect(SPTHeader.read(atPath: folder.path(forKey: key))?.refCount == 1)
    }

    /// SPTPersistentCacheTests.m:1562. SPT stores a ttl of 124 days and warns, through
    /// `debugOutput`, on the touch that reads it ("TTL seems too big", above 62 days,
    /// SPTPersistentCache.m:823). Difference: Larder takes any ttl up to 100 years as it is,
    /// without a warning (longer ones are clamped to 100 years).
    @Test func testStoreLargeTTL() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let events = EventLog()
        let cache = try Self.setUpCache(folder, events: events)
        defer { cache.close() }
        let ttl: UInt64 = 86400 * 31 * 2 * 2
        let stored = await callback {
            cache.store(Data("TEST".utf8), forKey: "TEST", expiry: .seconds(Double(ttl)), queue: $0, completion: $1)
        }
        #expect(stored.value != nil)
        #expect(await callback { cache.touch(forKey: "TEST", queue: $0, completion: $1) }.value == true)
        #expect(try await cache.record(forKey: "TEST")?.expiry == .seconds(Double(ttl)))
        #expect(SPTHeader.read(atPath: folder.path(forKey: "TEST"))?.ttl == ttl)
        #expect(!events.all.contains { if case .ioError = $0 { true } else { false } })
    }

    /// SPTPersistentCacheTests.m:1586. SPT's `collectGarbageForceExpire:YES forceLocked:YES`
    /// (behind `prune`) logs through `debugOutput`; Larder's wipe is `removeAll()`, which removes
    /// every record, locked and corrupt ones too, and has nothing to report when all goes well.
    @Test func testWipeAllFiles() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let events = EventLog()
        let cache = try Self.setUpCache(folder, events: events)
        defer { cache.close() }
        try await cache.removeAll()
        // Difference: the two files left without the record magic are no records (foreign), and stay.
        #expect(sptFileCount(atPath: folder.path) == SPTTestData.foreignFilesNumber)
        #expect(cache.count == 0 && cache.totalSize == 0)
        #expect(events.ioErrors.isEmpty)
    }

    /// SPTPersistentCacheTests.m:1596. The wipe cannot tell files from folders (swizzled
    /// `getResourceValue:forKey:error:`), and says so through `debugOutput`. Larder's wipe lists
    /// the folders; a listing that fails is reported as an `ioError` event. Difference: the
    /// records the index knows are removed all the same, and the wipe then throws `ioFailure`,
    /// since records it could not list may remain.
    @Test func testURLAttributeFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let events = EventLog()
        let cache = try Self.setUpCache(folder, events: events, faults: faults)
        defer { cache.close() }
        #expect(cache.count > 0)
        faults.arm(every: .listDirectory, .fail(EIO))
        await #expect(throws: CacheError.self) { try await cache.removeAll() }
        #expect(faults.fired > 0)
        #expect(events.ioErrors.contains { $0.operation == "list" })
        #expect(cache.count == 0)
    }

    /// SPTPersistentCacheTests.m:1613. Without a size limit SPT's `pruneBySize` does nothing
    /// (returns `NO`). Larder's collection has no size limit to enforce either, and the preset's
    /// 10 % free-space floor, which needs a size limit, is not even looked up.
    @Test func testPruneBySizeOnUnconstrainedCache() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let cache = try Self.setUpCache(folder, faults: faults)
        defer { cache.close() }
        faults.arm(every: .statvfs, .fail(EIO))
        let report = try await cache.collectGarbage()
        #expect(report.effectiveSizeLimit == 0)
        #expect(report.count(for: .sizeLimit) == 0)
        #expect(faults.fired == 0)
    }

    /// A cache over `folder` whose size limit is what it holds, so that one more record puts it
    /// over: the Swift meaning of SPT setting `sizeConstraintBytes = 1` on a live cache.
    static func cacheAtItsSizeLimit(
        _ folder: SPTImageFolder, events: EventLog, faults: FaultInjector
    ) throws -> (cache: DiskCache, limit: Int) {
        let probe = try setUpCache(folder)
        let limit = probe.totalSize
        probe.close()
        let cache = try setUpCache(folder, events: events, faults: faults) { $0.sizeLimit = limit }
        #expect(cache.statistics.evictions.isEmpty)
        return (cache, limit)
    }

    /// SPTPersistentCacheTests.m:1619. Removing a record over the size limit fails, and SPT
    /// says so through `debugOutput`; Larder reports an `ioError` event and keeps the record.
    @Test func testPruneBySizeRemoveFileFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let events = EventLog()
        let (cache, _) = try Self.cacheAtItsSizeLimit(folder, events: events, faults: faults)
        defer { cache.close() }
        faults.arm(every: .unlink, .fail(EACCES), onlyPaths: { !$0.contains("/.larder") })
        let stored = await callback { cache.store(Data("TEST".utf8), forKey: "TEST", locked: true, queue: $0, completion: $1) }
        #expect(stored.value != nil)
        #expect(faults.fired > 0)
        #expect(events.ioErrors.contains { $0.operation == "evict" })
        faults.disarm()
        for (i, key) in folder.imageNames.enumerated() where SPTTestData.params[i].corruption == nil {
            #expect(try await cache.value(forKey: key) != nil)
        }
    }

    /// SPTPersistentCacheTests.m:1640. SPT's `stat` of a record fails while pruning by size, and
    /// SPT says so through `debugOutput` and skips the file; Larder reports an `ioError` event and
    /// keeps the record. SPT's `stat` takes a path: Larder's `fstatat` (`.lstat`) is the same fault.
    @Test func testStatFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let events = EventLog()
        let (cache, _) = try Self.cacheAtItsSizeLimit(folder, events: events, faults: faults)
        defer { cache.close() }
        faults.arm(every: .lstat, .fail(EIO), onlyPaths: { !$0.contains("/.larder") })
        let stored = await callback { cache.store(Data("TEST".utf8), forKey: "TEST", locked: true, queue: $0, completion: $1) }
        #expect(stored.value != nil)
        #expect(faults.fired > 0)
        #expect(events.ioErrors.contains { $0.operation == "evict" })
        faults.disarm()
        #expect(cache.statistics.evictions.isEmpty)
        for (i, key) in folder.imageNames.enumerated() where SPTTestData.params[i].corruption == nil {
            #expect(try await cache.value(forKey: key) != nil)
        }
    }

    /// SPTPersistentCacheTests.m:1661. SPT's size pruning enumerates the folder, and reports
    /// that it cannot tell files from folders. Larder's size pruning walks its index, not the
    /// folder: with every listing failing, it still brings the cache within its limit.
    @Test func testResourceInfoURLFailure() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let faults = FaultInjector()
        let events = EventLog()
        let (cache, limit) = try Self.cacheAtItsSizeLimit(folder, events: events, faults: faults)
        defer { cache.close() }
        faults.arm(every: .listDirectory, .fail(EIO))
        let stored = await callback { cache.store(Data("TEST".utf8), forKey: "TEST", locked: true, queue: $0, completion: $1) }
        #expect(stored.value != nil)
        #expect(cache.totalSize <= limit)
        #expect(try await cache.value(forKey: "TEST") == Data("TEST".utf8))
        #expect(faults.fired == 0)
    }

    /// SPTPersistentCacheTests.m:1679. SPT refuses a store with a callback and no queue
    /// (returns `NO`). Swift's queue cannot be `nil`: left out, it is the main queue, where the
    /// response arrives.
    @Test func testStoreDataWithCallbackAndNoQueue() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let mainKey = DispatchSpecificKey<Int>()
        DispatchQueue.main.setSpecific(key: mainKey, value: 1)
        defer { DispatchQueue.main.setSpecific(key: mainKey, value: nil) }
        let (response, onMain): (CacheResponse<Void>, Bool) = await withCheckedContinuation { continuation in
            cache.store(Data(), forKey: "TEST", locked: false) { response in
                continuation.resume(returning: (response, DispatchQueue.getSpecific(key: mainKey) == 1))
            }
        }
        #expect(response.value != nil)
        #expect(onMain)
        #expect(try await cache.value(forKey: "TEST") == Data())
    }
}
