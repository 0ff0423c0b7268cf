#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCache's `Tests/SPTPersistentCacheTests.m` (upstream 1.2.0), test by test, against
// `DiskCacheOptions.spt(directory:)`. Each test is named after the one it ports and cites its
// line. `SPTImageFolder.make()` is the suite's `setUp`; a `ManualClock` stands in for the
// `currentDateTimeInterval` override. Where Larder deliberately differs, the test asserts Larder's
// behaviour and says "Difference:"; every difference is a row of the table in
// `MigratingFromSPTPersistentCache.md`.
//
// Three differences recur, and are stated once here:
// - A corrupt record is a miss that removes the file and reports a `corruptRecordRemoved` event
//   with its reason (SPT: `SPTPersistentCacheResponseCodeOperationError` with the loading error,
//   the file left in place; SPTPersistentCache.m:519-542, 559-565).
// - Larder checks a record's length against its header whenever it reads the header, so the
//   `WrongPayloadSize` record is corrupt to every call; SPT checks the length only when it loads
//   the payload (SPTPersistentCache.m:559), so its header-only calls (lock, wipe, collect,
//   prefix listing) see a valid unlocked record.
// - setUp's cache closes before setUp corrupts the files, and leaves its index snapshot; a cache
//   opened next trusts it for every file still there, so it knows the corrupt records as what
//   they were until it reads their headers (a load, lock, touch, wipe or collection that
//   examines them). SPT keeps no index: every call looks at the files.
@Suite("SPTPersistentCacheTests") struct SPTPersistentCacheTests {
    /// `kTestEpochTime + SPTPersistentCacheDefaultExpirationTimeSec - 1`: the last second before
    /// ttl-0 records expire, the time most tests use.
    static let justBeforeDefaultExpiry = SPTTestData.testEpochTime + SPTTestData.defaultExpiration - 1

    /// Each corrupt image was reported removed with the reason SPT's error code names.
    static func expectCorruptionReported(_ folder: SPTImageFolder, _ events: EventLog, sourceLocation: SourceLocation = #_sourceLocation) {
        let removals = events.corruptRemovals
        for i in folder.corruptedIndexes {
            let expected = SPTTestData.larderReason(for: SPTTestData.params[i].corruption!)
            #expect(removals[folder.imageNames[i]] == expected, sourceLocation: sourceLocation)
        }
    }

    /// SPTPersistentCacheTests.m:250
    @Test func testCorrectWriteAndRead() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        // "No expiration": SPT passes `timeIntervalSinceReferenceDate` (~7.9e8 s) as both the time
        // and the default expiration, so ttl-0 records written at 1488 live; unlocked records
        // with a ttl (kTTL3, kTTL4) have expired, and SPT's test takes their NotFound.
        let reference = SPTTestData.referenceTime
        let events = EventLog()
        let cache = try folder.makeCache(clock: ManualClock(now: reference), expiration: reference, events: events)
        let tally = LoadTally(await folder.loadAll(cache))

        let expired = SPTTestData.params.indices.filter {
            SPTTestData.params[$0].corruption == nil && !SPTTestData.params[$0].locked && SPTTestData.params[$0].ttl > 0
        }
        #expect(expired.count == 2)
        #expect(tally.succeeded.count == folder.imageNames.count - SPTTestData.corruptedFilesNumber - expired.count)
        for i in tally.succeeded {
            try folder.checkRecord(await callback { cache.record(forKey: folder.imageNames[i], queue: $0, completion: $1) }, index: i)
        }
        // Difference: corrupt records are misses (SPT: errorCalls == params_GetCorruptedFilesNumber()).
        #expect(tally.failed.isEmpty)
        #expect(tally.notFound == (expired + folder.corruptedIndexes).sorted())
        Self.expectCorruptionReported(folder, events)

        // "Check that update time was modified when access cache": ttl > 0 records keep 1488.
        // Difference: reads slide a ttl-0 record's update time in the index, and the headers get
        // it in batches (at a collection, or at close); SPT rewrites the file on every read
        // (SPTPersistentCache.m:580-595). Difference: a read of an expired record removes it
        // (SPT leaves it for the collector).
        for i in SPTTestData.params.indices where SPTTestData.params[i].corruption == nil {
            let header = SPTHeader.read(atPath: folder.path(forKey: folder.imageNames[i]))
            if expired.contains(i) {
                #expect(header == nil)
            } else {
                #expect(header?.updateTimeSec == UInt64(SPTTestData.testEpochTime))
            }
        }
        cache.close()
        for i in SPTTestData.params.indices where SPTTestData.params[i].corruption == nil && !expired.contains(i) {
            let header = try #require(SPTHeader.read(atPath: folder.path(forKey: folder.imageNames[i])))
            if SPTTestData.params[i].ttl > 0 {
                #expect(header.updateTimeSec == UInt64(SPTTestData.testEpochTime), "Time must not be altered for records with TTL > 0")
            } else {
                // `llrint`: the nearest second, not the one below.
                #expect(
                    header.updateTimeSec == UInt64(reference.rounded(.toNearestOrEven)), "Time must be altered since cache was accessed")
            }
        }
    }

    /// SPTPersistentCacheTests.m:326. Run over several seeds: with the default one no corrupt
    /// record shares the tested prefix; with 11, 12, 18 and 88 one does, and the cache's index
    /// (from the snapshot of setUp's cache, taken before the corruption) still lists it.
    @Test(arguments: [SPTTestData.seed, 11, 12, 18, 88]) func testLoadWithPrefixesSuccess(seed: UInt64) async throws {
        let folder = try await SPTImageFolder.make(seed: seed)
        defer { folder.remove() }
        let reference = SPTTestData.referenceTime
        let cache = try folder.makeCache(clock: ManualClock(now: reference), expiration: reference)
        defer { cache.close() }
        // "That hardcode logic: 10th element should be safe to get" (ttl 0, unlocked).
        let prefix = String(folder.imageNames[10].prefix(2))
        let offered = Box<[String]>([])
        let response = await callback { queue, completion in
            cache.record(
                forKeyWithPrefix: prefix,
                choosingKey: { keys in
                    offered.value = keys
                    return keys.first
                }, queue: queue, completion: completion)
        }
        // The chooser sees every live record under the prefix, and nothing else: expired records
        // are left out, as SPT leaves them out (SPTPersistentCache.m:152-164), and so are corrupt
        // ones (SPT offers the WrongPayloadSize one: its header is valid).
        let live = folder.imageNames.indices.filter { i in
            let p = SPTTestData.params[i]
            return folder.imageNames[i].hasPrefix(prefix) && p.corruption == nil && (p.locked || p.ttl == 0)
        }
        #expect(Set(offered.value) == Set(live.map { folder.imageNames[$0] }))
        #expect(offered.value.allSatisfy { $0.hasPrefix(prefix) })
        let key = try #require(offered.value.first)
        try folder.checkRecord(response, index: try #require(folder.imageNames.firstIndex(of: key)))
    }

    /// SPTPersistentCacheTests.m:379
    @Test func testLoadWithPrefixesFail() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let reference = SPTTestData.referenceTime
        let cache = try folder.makeCache(clock: ManualClock(now: reference), expiration: reference)
        defer { cache.close() }
        let prefix = String(folder.imageNames[9].prefix(2))
        let offered = Box<[String]>([])
        let response = await callback { queue, completion in
            cache.record(
                forKeyWithPrefix: prefix,
                choosingKey: { keys in
                    offered.value = keys
                    return nil  // "Refuse to open"
                }, queue: queue, completion: completion)
        }
        #expect(offered.value.count >= 1 && offered.value.allSatisfy { $0.hasPrefix(prefix) })
        #expect(response.value == nil && response.error == nil)
        guard case .notFound = response else {
            Issue.record("expected NotFound, got \(response)")
            return
        }
    }

    /// SPTPersistentCacheTests.m:426
    @Test func testLockUnlock() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let events = EventLog()
        let cache = try folder.makeCache(clock: ManualClock(now: Self.justBeforeDefaultExpiry), events: events)
        defer { cache.close() }
        let toLock = folder.imageNames.indices.filter { !SPTTestData.params[$0].locked }.map { folder.imageNames[$0] }
        let toUnlock = folder.imageNames.indices.filter { SPTTestData.params[$0].locked }.map { folder.imageNames[$0] }
        async let locking = callback { cache.lock(forKeys: toLock, queue: $0, completion: $1) }
        async let unlocking = callback { cache.unlock(forKeys: toUnlock, queue: $0, completion: $1) }
        let (locked, unlocked) = await (locking, unlocking)
        // SPT answers once per key; Larder once per call, with the keys it changed: every record
        // but the corrupt ones (SPT: an error for each of those).
        #expect(locked.value == toLock.filter { folder.params(forKey: $0).corruption == nil })
        #expect(unlocked.value == toUnlock)
        Self.expectCorruptionReported(folder, events)

        // "updateTime is not altered by lock unlock calls".
        for i in SPTTestData.params.indices where SPTTestData.params[i].corruption == nil {
            #expect(SPTHeader.read(atPath: folder.path(forKey: folder.imageNames[i]))?.updateTimeSec == UInt64(SPTTestData.testEpochTime))
        }

        let responses = await folder.loadAll(cache)
        let tally = LoadTally(responses)
        #expect(tally.succeeded.count == folder.imageNames.count - SPTTestData.corruptedFilesNumber)
        for i in tally.succeeded { try folder.checkRecord(responses[i], index: i, locked: !SPTTestData.params[i].locked) }
        // Difference: corrupt records are misses (the lock call removed them).
        #expect(tally.notFound == folder.corruptedIndexes && tally.failed.isEmpty)
    }

    /// SPTPersistentCacheTests.m:524
    @Test func testRemoveItems() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try folder.makeCache(clock: ManualClock(now: Self.justBeforeDefaultExpiry))
        defer { cache.close() }
        let removed = await callback { cache.remove(forKeys: folder.imageNames, queue: $0, completion: $1) }
        // Larder answers with the keys whose files it removed: every one, corrupt ones too, but
        // not the two left without the record magic, which are no records (foreign) and stay.
        let foreign = Set(
            folder.imageNames.indices.filter { i in
                SPTTestData.params[i].corruption.map { SPTTestData.larderReason(for: $0) == nil } ?? false
            }
            .map { folder.imageNames[$0] })
        #expect(foreign.count == SPTTestData.foreignFilesNumber)
        #expect(Set(try #require(removed.value)) == Set(folder.imageNames).subtracting(foreign))
        let tally = LoadTally(await folder.loadAll(cache))
        #expect(tally.notFound.count == folder.imageNames.count, "We expect file wouldn't be found after removing")
        #expect(sptFileCount(atPath: folder.path) == SPTTestData.foreignFilesNumber, "Only the foreign files are left")
    }

    /// SPTPersistentCacheTests.m:576 (`pruneWithCallback:onQueue:` is `removeAll(queue:completion:)`)
    @Test func testPureCache() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try folder.makeCache(clock: ManualClock(now: Self.justBeforeDefaultExpiry))
        defer { cache.close() }
        let pruned = await callback { cache.removeAll(queue: $0, completion: $1) }
        #expect(pruned.value != nil)
        let tally = LoadTally(await folder.loadAll(cache))
        #expect(tally.notFound.count == folder.imageNames.count, "We expect file wouldn't be found after removing")
        // Difference: SPT's prune removes every file; the two without the record magic are no
        // records (foreign), and stay.
        #expect(sptFileCount(atPath: folder.path) == SPTTestData.foreignFilesNumber, "Only the foreign files are left")
        #expect(cache.count == 0 && cache.totalSize == 0)
    }

    /// SPTPersistentCacheTests.m:629 (`wipeLockedFilesWithCallback:onQueue:` is `removeAllLocked(queue:completion:)`)
    @Test func testWipeLocked() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        // "We consider that no expiration occurs in this test."
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime))
        defer { cache.close() }
        let wiped = await callback { cache.removeAllLocked(queue: $0, completion: $1) }
        #expect(wiped.value != nil)
        let reallyLocked = SPTTestData.filesNumber(locked: true)
        // As in SPT, the locked records are gone and the corrupt ones still there.
        #expect(sptFileCount(atPath: folder.path) == folder.imageNames.count - reallyLocked)

        let responses = await folder.loadAll(cache)
        let tally = LoadTally(responses)
        for i in tally.succeeded { try folder.checkRecord(responses[i], index: i) }
        let locked = SPTTestData.params.indices.filter { SPTTestData.params[$0].locked }
        #expect(locked.count == reallyLocked)
        #expect(
            tally.succeeded
                == SPTTestData.params.indices.filter { !SPTTestData.params[$0].locked && SPTTestData.params[$0].corruption == nil })
        // Difference: corrupt records are misses, and the loads removed them.
        #expect(tally.notFound == (locked + folder.corruptedIndexes).sorted() && tally.failed.isEmpty)
        // The foreign files (no magic) stay.
        #expect(
            sptFileCount(atPath: folder.path)
                == folder.imageNames.count - reallyLocked - SPTTestData.corruptedFilesNumber + SPTTestData.foreignFilesNumber)
    }

    /// SPTPersistentCacheTests.m:705 (`wipeNonLockedFilesWithCallback:onQueue:` is `removeAllUnlocked(queue:completion:)`)
    @Test func testWipeUnlocked() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let events = EventLog()
        let cache = try folder.makeCache(clock: ManualClock(now: Self.justBeforeDefaultExpiry), events: events)
        defer { cache.close() }
        let wiped = await callback { cache.removeAllUnlocked(queue: $0, completion: $1) }
        #expect(wiped.value != nil)
        // SPT wipes the unlocked records and the WrongPayloadSize one ("+1 ... since technically
        // it has a correct header"), and leaves the four whose header it cannot read.
        // Difference: the wipe reads each record's header, and removes (and reports) the corrupt
        // ones it meets; the corrupt records were stored unlocked, so it meets all five. The two
        // left without the record magic are no records (foreign): it leaves them.
        let reallyUnlocked = SPTTestData.filesNumber(locked: false)
        #expect(
            sptFileCount(atPath: folder.path)
                == folder.imageNames.count - reallyUnlocked - SPTTestData.corruptedFilesNumber + SPTTestData.foreignFilesNumber)
        Self.expectCorruptionReported(folder, events)

        let responses = await folder.loadAll(cache)
        let tally = LoadTally(responses)
        for i in tally.succeeded { try folder.checkRecord(responses[i], index: i) }
        #expect(tally.succeeded == SPTTestData.params.indices.filter { SPTTestData.params[$0].locked })
        #expect(tally.notFound.count == reallyUnlocked + SPTTestData.corruptedFilesNumber && tally.failed.isEmpty)
        #expect(sptFileCount(atPath: folder.path) == SPTTestData.filesNumber(locked: true) + SPTTestData.foreignFilesNumber)
    }

    /// The size one record occupies in Larder's totals: its length rounded up to the folder's
    /// block size (`st_blksize`, at least 512).
    static func blockRounded(_ length: Int, folder: String) -> Int {
        var info = stat()
        let block = stat(folder, &info) == 0 ? max(512, Int(info.st_blksize)) : 4096
        return (length + block - 1) / block * block
    }

    /// SPTPersistentCacheTests.m:781 (`totalUsedSizeInBytes` is `totalSize`)
    @Test func testUsedSize() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try folder.makeCache(clock: ManualClock(now: Self.justBeforeDefaultExpiry))
        defer { cache.close() }
        // SPT's `calculateExpectedSize`: every file's length as it is now, corrupt ones too
        // (kCorruptedFileSize for the truncated one), found by walking the folder.
        // Difference: Larder counts each record's length rounded up to the block size, as the
        // disk holds it, from its index. The index comes from the snapshot setUp's cache wrote
        // when it closed, which knows the five corrupted files by the length they had before
        // setUp changed them behind its back; a file is seen as it is when next read.
        var stored = 0
        var readable = 0
        for (i, name) in folder.imageNames.enumerated() {
            let size = Self.blockRounded(try SPTTestData.imageData(name).count + SPTHeader.size, folder: folder.path)
            stored += size
            if SPTTestData.params[i].corruption == nil { readable += size }
        }
        #expect(cache.totalSize == stored)
        #expect(cache.blockSize == Self.blockRounded(1, folder: folder.path))
        // Once read, a corrupt record is removed and no longer counted.
        _ = await folder.loadAll(cache)
        #expect(cache.totalSize == readable)
    }

    /// SPTPersistentCacheTests.m:798 (`lockedItemsSizeInBytes` is `lockedSize`)
    @Test func testLockedSize() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try folder.makeCache(clock: ManualClock(now: Self.justBeforeDefaultExpiry))
        defer { cache.close() }
        var expected = 0
        for (i, name) in folder.imageNames.enumerated() where SPTTestData.params[i].locked {
            // SPT: data length + SPTPersistentCacheRecordHeaderSize. Difference: rounded to blocks.
            expected += Self.blockRounded(try SPTTestData.imageData(name).count + SPTHeader.size, folder: folder.path)
        }
        #expect(cache.lockedSize == expected)
    }

    /// SPTPersistentCacheTests.m:822
    @Test func testScheduleGarbageCollection() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime + SPTTestData.defaultExpiration + 1))
        defer { cache.close() }
        #expect(!cache.isGarbageCollectionScheduled)
        cache.scheduleGarbageCollection()
        #expect(cache.isGarbageCollectionScheduled)
    }

    /// SPTPersistentCacheTests.m:838
    @Test func testUnscheduleGarbageCollection() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime + SPTTestData.defaultExpiration + 1))
        defer { cache.close() }
        #expect(!cache.isGarbageCollectionScheduled)
        cache.scheduleGarbageCollection()
        #expect(cache.isGarbageCollectionScheduled)
        cache.unscheduleGarbageCollection()
        #expect(!cache.isGarbageCollectionScheduled)
    }

    /// SPTPersistentCacheTests.m:861
    @Test func testExpirationWithDefaultTimeout() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        // "Exceed expiration interval by 1 sec".
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime + SPTTestData.defaultExpiration + 1))
        defer { cache.close() }
        let responses = await folder.loadAll(cache)
        let tally = LoadTally(responses)
        for i in tally.succeeded { try folder.checkRecord(responses[i], index: i) }
        let normalFilesCount = SPTTestData.defaultExpireFilesNumber
        let corrupted = SPTTestData.corruptedFilesNumber
        #expect(tally.succeeded.count == folder.imageNames.count - normalFilesCount - corrupted)
        // SPT: notFoundCalls - 1 == normalFilesCount (the expired WrongPayloadSize record) and
        // errorCalls == corrupted - 1. Difference: every corrupt record is a miss.
        #expect(tally.notFound.count == normalFilesCount + corrupted && tally.failed.isEmpty)
        // Difference: the loads removed the expired records (SPT leaves them for the collector).
        // A foreign file (no record magic) stays.
        for i in SPTTestData.params.indices where SPTTestData.params[i].ttl == 0 && !SPTTestData.params[i].locked {
            let isForeign = SPTTestData.params[i].corruption.map { SPTTestData.larderReason(for: $0) == nil } ?? false
            #expect(FileManager.default.fileExists(atPath: folder.path(forKey: folder.imageNames[i])) == isForeign)
        }
    }

    /// SPTPersistentCacheTests.m:925
    @Test func testExpirationWithTTL() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        // "Take largest TTL of non locked + 1 sec".
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime + Double(SPTTestData.ttl4) + 1))
        defer { cache.close() }
        let responses = await folder.loadAll(cache)
        let tally = LoadTally(responses)
        for i in tally.succeeded { try folder.checkRecord(responses[i], index: i) }
        #expect(tally.succeeded.count == SPTTestData.filesNumber(locked: true), "There should be exact number of locked files")
        // SPT: notFoundCalls - 1 == unlocked files, errorCalls == corrupted - 1. Difference:
        // every corrupt record is a miss.
        #expect(tally.notFound.count == SPTTestData.filesNumber(locked: false) + SPTTestData.corruptedFilesNumber)
        #expect(tally.failed.isEmpty)
    }

    /// SPTPersistentCacheTests.m:991
    @Test func testTouchOnlyRecordsWithDefaultExpiration() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let now = Self.justBeforeDefaultExpiry
        let cache = try folder.makeCache(clock: ManualClock(now: now))
        defer { cache.close() }
        var touched: [CacheResponse<Bool>] = []
        for key in folder.imageNames { touched.append(await callback { cache.touch(forKey: key, queue: $0, completion: $1) }) }
        // SPT's test ignores the responses; Larder's: a touch finds every record but the corrupt ones.
        for (i, response) in touched.enumerated() {
            #expect((response.value == true) == (SPTTestData.params[i].corruption == nil))
        }
        // Difference: a touch slides a ttl-0 record's update time in the index; the header gets
        // it at the next collection (or close). SPT writes the header at once (SPTPersistentCache.m:240-253).
        for i in SPTTestData.params.indices where SPTTestData.params[i].corruption == nil {
            #expect(SPTHeader.read(atPath: folder.path(forKey: folder.imageNames[i]))?.updateTimeSec == UInt64(SPTTestData.testEpochTime))
        }
        #expect(try await cache.collectGarbage().removed.isEmpty)
        for i in SPTTestData.params.indices where SPTTestData.params[i].corruption == nil {
            let header = try #require(SPTHeader.read(atPath: folder.path(forKey: folder.imageNames[i])))
            if SPTTestData.params[i].ttl == 0 {
                #expect(header.updateTimeSec == UInt64(now), "Time must not match for initial value i.e. touched")
            } else {
                #expect(header.updateTimeSec == UInt64(SPTTestData.testEpochTime), "Time must match for initial value i.e. not touched")
            }
        }
        // "Now do regular check of data integrity after touch".
        let responses = await folder.loadAll(cache)
        let tally = LoadTally(responses)
        for i in tally.succeeded { try folder.checkRecord(responses[i], index: i) }
        #expect(tally.succeeded.count == folder.imageNames.count - SPTTestData.corruptedFilesNumber)
        // SPT: no NotFound, an error per corrupt record. Difference: corrupt records are misses.
        #expect(tally.notFound == folder.corruptedIndexes && tally.failed.isEmpty)
    }

    /// SPTPersistentCacheTests.m:1079 (`runRegularGC` is `collectGarbage()`)
    @Test func testRegularGCWithTTL() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let events = EventLog()
        // "Take largest TTL4 of non locked": kTTL4 records are exactly at their limit, not past it.
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime + Double(SPTTestData.ttl4)), events: events)
        defer { cache.close() }
        let report = try await cache.collectGarbage()

        // "After GC we have to have only locked files and corrupted" (SPT cannot read the
        // corrupt ones' headers, so they count as removed).
        var lockedCount = 0
        var removedCount = 0
        for (i, name) in folder.imageNames.enumerated() {
            let opened = SPTHeader.read(atPath: folder.path(forKey: name)) != nil
            if SPTTestData.params[i].locked {
                lockedCount += 1
                #expect(opened, "Locked files expected to be at place")
            } else if SPTTestData.params[i].ttl == SPTTestData.ttl4 {
                #expect(opened, "TTL4 file expected to be at place")
            } else {
                removedCount += 1
                #expect(!opened, "Not locked files expected to removed thus unable to be opened")
            }
        }
        #expect(lockedCount == SPTTestData.filesNumber(locked: true))
        #expect(removedCount == SPTTestData.filesNumber(locked: false) + SPTTestData.corruptedFilesNumber - 1)
        let expired = SPTTestData.params.indices.filter { i in
            let p = SPTTestData.params[i]
            return p.corruption == nil && !p.locked && p.ttl != SPTTestData.ttl4
        }
        #expect(Set(report.removed.compactMap(\.key)) == Set(expired.map { folder.imageNames[$0] }))
        #expect(report.removed.allSatisfy { $0.reason == .expired && !$0.wasLocked })
        // Difference: the collection also removes the corrupt records, and counts them; SPT's
        // collector skips a file whose header it cannot read (SPTPersistentCache.m:867-886), so
        // four of them stay.
        // The two without the record magic are no records (foreign), and stay.
        #expect(cache.statistics.corruptRecordsRemoved == SPTTestData.corruptedFilesNumber - SPTTestData.foreignFilesNumber)
        Self.expectCorruptionReported(folder, events)
        #expect(sptFileCount(atPath: folder.path) == SPTTestData.filesNumber(locked: true) + 1 + SPTTestData.foreignFilesNumber)
    }

    /// SPTPersistentCacheTests.m:1119 (`pruneBySize` is the size step of `collectGarbage()`,
    /// which also runs when a cache opens over its limits). Run for the seeds SPT's tests keep
    /// as "Prune size failed" (SPTPersistentCacheTests.m:159).
    @Test(arguments: [1_417_004_677, 1_417_004_725, 1_417_003_704] as [UInt64])
    func testPruneWithSizeRestriction(seed: UInt64) async throws {
        let folder = try await SPTImageFolder.make(seed: seed)
        defer { folder.remove() }
        let count = folder.imageNames.count
        // "Alter update time for our data set so it monotonically increase from the past
        // starting at index 0 to count-1": SPT sets each file's modification time to
        // kTestEpochTime - 5 * (i + 1), so image 0 is the newest. Difference: Larder's least
        // recently used order is the last access it records (the header's reserved2), not the
        // modification time (SPTPersistentCache.m:1037); a touch at that time sets it.
        let clock = ManualClock(now: SPTTestData.testEpochTime)
        let ordering = try folder.makeCache(clock: clock)
        for i in (0 ..< count).reversed() where SPTTestData.params[i].corruption == nil {
            clock.now = SPTTestData.testEpochTime - 5 * Double(i + 1)
            #expect(try await ordering.touch(forKey: folder.imageNames[i]))
        }
        ordering.close()

        // "Take 6 first elements which are least oldest". SPT's test computes the limit as
        // `expectedSize -= size + header` from 0 in unsigned arithmetic, which wraps to nearly
        // 2^64 and leaves only the free-space floor to prune by; this port takes the limit it
        // means: the six newest records' size.
        let dropCount = 6
        var expectedSize = 0
        for i in 0 ..< dropCount { expectedSize += try SPTTestData.imageData(folder.imageNames[i]).count + SPTHeader.size }
        let savedItems = Array(folder.imageNames[0 ..< dropCount])

        clock.now = SPTTestData.testEpochTime
        let cache = try folder.makeCache(clock: clock) { options in
            options.name = "test"
            options.sizeLimit = expectedSize
        }
        defer { cache.close() }
        let report = try await cache.collectGarbage()
        let limit = report.effectiveSizeLimit
        #expect(limit > 0 && limit <= expectedSize)

        // "Check that size reached its required level".
        let realSize = cache.totalSize
        #expect(realSize <= limit, "real cache size has to be less or equal to what we expect")

        // The survivors, step by step: unlocked records go, least recently used first, while
        // the total is over the limit; then, while locked records alone exceed it, locked ones
        // (Difference: SPT never prunes a locked record, SPTPersistentCache.m:1008-1020, though
        // its README says that "even locked files can be subject to pruning").
        let live = (0 ..< count).filter { SPTTestData.params[$0].corruption == nil }.reversed()  // oldest first
        var size: [Int: Int] = [:]
        for i in live {
            size[i] = Self.blockRounded(try SPTTestData.imageData(folder.imageNames[i]).count + SPTHeader.size, folder: folder.path)
        }
        var survivors = Set(live)
        var total = live.reduce(0) { $0 + size[$1]! }
        for i in live where !SPTTestData.params[i].locked && total > limit {
            survivors.remove(i)
            total -= size[i]!
        }
        var lockedTotal = live.filter { SPTTestData.params[$0].locked }.reduce(0) { $0 + size[$1]! }
        for i in live where SPTTestData.params[i].locked && lockedTotal > limit {
            survivors.remove(i)
            lockedTotal -= size[i]!
        }
        #expect(Set(try await cache.keys(withPrefix: "")) == Set(survivors.map { folder.imageNames[$0] }))
        #expect(realSize == total)

        // "Check that files supposed to be deleted was actually removed": the saved locked
        // records are in place, unless locked records alone exceed the limit.
        for key in savedItems where folder.params(forKey: key).locked {
            let opened = SPTHeader.read(atPath: folder.path(forKey: key)) != nil
            #expect(opened == survivors.contains(folder.imageNames.firstIndex(of: key)!), "Saved files expected to be in place")
        }

        // "Call once more to make sure nothing will be dropped".
        #expect(try await cache.collectGarbage().removed.isEmpty)
        #expect(cache.totalSize == realSize)
    }

    /// SPTPersistentCacheTests.m:1195 (Req.#1.0: storing again replaces the lock state, it does
    /// not add to it)
    @Test func testSerialStoreWithLockDoesntIncrementRefCount() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime + 1))
        defer { cache.close() }
        // "Index of file to put. It should be file without any problems."
        let key = folder.imageNames[2]
        let data = try SPTTestData.imageData(key)
        let path = folder.path(forKey: key)
        for (ttl, locked, refCount) in [(SPTTestData.ttl1, true, 1), (SPTTestData.ttl2, true, 1), (SPTTestData.ttl1, false, 0)]
            as [(UInt64, Bool, UInt32)]
        {
            let stored = await callback {
                cache.store(data, forKey: key, expiry: .seconds(Double(ttl)), locked: locked, queue: $0, completion: $1)
            }
            #expect(stored.value != nil)
            let header = try #require(SPTHeader.read(atPath: path), "Expect valid record")
            #expect(header.ttl == ttl, "TTL must match")
            #expect(header.refCount == refCount, "refCount must match")
        }
    }
}
