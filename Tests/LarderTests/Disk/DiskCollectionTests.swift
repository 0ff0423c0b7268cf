#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
@testable import Larder

@Suite struct DiskCollectionTests {
    func makeCache(
        _ dir: TemporaryDirectory, clock: ManualClock, sizeLimit: Int = 0, configure: (inout DiskCacheOptions) -> Void = { _ in }
    ) throws -> DiskCache {
        var options = testOptions(dir.url, clock: clock)
        options.sizeLimit = sizeLimit
        configure(&options)
        return try DiskCache(options: options)
    }

    /// Sets the lock count in the header of `key`'s record to 1 in place, as another program
    /// (SPTPersistentCache) locks a record: the file's folder does not change.
    func lockInPlace(_ key: String, in dir: TemporaryDirectory) throws {
        let path = DiskLayout(root: dir.path).path(for: SHA256Hash.hex(of: key))
        let file = try #require(FileHandle(forUpdatingAtPath: path))
        var header = try RecordHeader.decode(Array(try #require(try file.read(upToCount: RecordHeader.size))))
        header.refCount = 1
        try file.seek(toOffset: 0)
        try file.write(contentsOf: header.encoded())
        try file.close()
    }

    @Test func expiryCollectionAtTheStrictBoundary() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock)
        try cache.store(Data("a".utf8), forKey: "ttl60", expiry: .seconds(60))
        try cache.store(Data("b".utf8), forKey: "default")  // 600
        try cache.store(Data("c".utf8), forKey: "locked", expiry: .seconds(1), locked: true)
        clock.advance(by: 60)
        #expect(try cache.collectGarbage().removed.isEmpty)
        clock.advance(by: 1)
        let report = try cache.collectGarbage()
        #expect(report.removed.map(\.key) == ["ttl60"] && report.removed.first?.reason == .expired)
        #expect(report.bytesFreed == cache.blockSize)
        clock.advance(by: 540)  // default: 601 s since its store
        #expect(try cache.collectGarbage().removed.map(\.key) == ["default"])
        #expect(try cache.keys(withPrefix: "") == ["locked"])
        #expect(cache.statistics.collections == 3 && cache.statistics.evictions[.expired] == 2)
        #expect(cache.statistics.expirations == 2)
    }

    @Test func sizePruningTakesUnlockedLeastRecentFirstAndLockedOnlyPastTheLimit() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock)
        let block = cache.blockSize
        for key in ["l1", "u1", "l2", "u2", "u3"] {
            try cache.store(Data(repeating: 1, count: 100), forKey: key, locked: key.hasPrefix("l"))
            clock.advance(by: 1)
        }
        _ = try cache.record(forKey: "u1")  // u1 becomes the most recent unlocked
        cache.close()
        // Reopen with a limit of three records: the index build enforces it at once. u2 and u3
        // go (the oldest unlocked); locked ones stay.
        let events = EventLog()
        let limited = try makeCache(dir, clock: clock, sizeLimit: 3 * block) { $0.eventHandler = events.handler }
        #expect(try limited.keys(withPrefix: "") == ["l1", "l2", "u1"])
        #expect(limited.statistics.evictions[.sizeLimit] == 2)
        limited.close()
        // A limit of one record: u1 goes, then the least recently used locked record, l1.
        let tight = try makeCache(dir, clock: clock, sizeLimit: block) { $0.eventHandler = events.handler }
        #expect(try tight.keys(withPrefix: "") == ["l2"])
        #expect(try tight.collectGarbage().removed.isEmpty)
        let evicted = events.all.compactMap { event -> String? in
            if case .recordEvicted(let key, _, let reason) = event, reason == .sizeLimit { return key }
            return nil
        }
        #expect(evicted == ["u2", "u3", "u1", "l1"])
    }

    @Test func reopeningOverTheLimitRemovesExpiredRecordsFirst() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock)
        try cache.store(Data("old".utf8), forKey: "live-old")
        clock.advance(by: 1)
        try cache.store(Data("exp".utf8), forKey: "expiring", expiry: .seconds(5))
        clock.advance(by: 1)
        try cache.store(Data("new".utf8), forKey: "live-new")
        cache.close()
        clock.advance(by: 10)
        // Room for two records: the expired one goes, not the least recently used live one.
        let reopened = try makeCache(dir, clock: clock, sizeLimit: 2 * cache.blockSize)
        #expect(try reopened.keys(withPrefix: "").sorted() == ["live-new", "live-old"])
        #expect(reopened.statistics.evictions == [.expired: 1])
    }

    @Test func storeOverTheLimitTrimsAtOnceAndKeepsTheNewRecord() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock) { $0.countLimit = 3 }
        for i in 0 ..< 10 { try cache.store(Data([UInt8(i)]), forKey: "k\(i)") }
        // Read first, so that a failure shows the keys kept, and every eviction with its reason.
        let keys = try cache.keys(withPrefix: "")
        #expect(keys == ["k7", "k8", "k9"], "evictions: \(cache.statistics.evictions)")
        #expect(cache.statistics.evictions[.countLimit] == 7)
    }

    @Test func theThreeWipesAndTotals() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock)
        let block = cache.blockSize
        try cache.store(Data(repeating: 1, count: 10), forKey: "u1")
        try cache.store(Data(repeating: 1, count: block), forKey: "u2")  // header pushes it to two blocks
        try cache.store(Data(repeating: 1, count: 10), forKey: "l1", locked: true)
        #expect(cache.count == 3 && cache.totalSize == 4 * block && cache.lockedSize == block)
        try cache.removeAllUnlocked()
        #expect(try cache.keys(withPrefix: "") == ["l1"] && cache.totalSize == block)
        try cache.store(Data(repeating: 1, count: 10), forKey: "u3")
        try cache.removeAllLocked()
        #expect(try cache.keys(withPrefix: "") == ["u3"] && cache.lockedSize == 0)
        // removeAll takes corrupt records too (a torn header after the magic), but not a file
        // that never was a record.
        try cache.store(Data(repeating: 1, count: 10), forKey: "l2", locked: true)
        try FileManager.default.createDirectory(at: dir.appending("ab"), withIntermediateDirectories: true)
        try Data("SPTFtorn".utf8).write(to: dir.url.appendingPathComponent("ab/abtorn"))
        try Data("garbage".utf8).write(to: dir.url.appendingPathComponent("ab/abjunk"))
        try cache.removeAll()
        #expect(recordFiles(in: dir.url) == ["ab/abjunk"] && cache.count == 0 && cache.totalSize == 0)
    }

    @Test func minimumFreeSpaceShrinksTheLimit() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        // A volume of 1000 blocks with 10 free, and a floor of 12 blocks: the cache gives up 2.
        var calls = SystemCalls.live
        calls.statvfs = { _, buf in
            buf.pointee = StatVFS()
            buf.pointee.f_frsize = 4096
            buf.pointee.f_blocks = 1000
            buf.pointee.f_bavail = 10
            return 0
        }
        var options = testOptions(dir.url, clock: clock)
        options.minimumFreeDiskSpace = .bytes(12 * 4096)
        let cache = try DiskCache(options: options, systemCalls: calls)
        for i in 0 ..< 5 {
            try cache.store(Data(repeating: 1, count: 100), forKey: "k\(i)")
            clock.advance(by: 2)  // past the one-second free-space cache
        }
        // Each store over the floor gives up two blocks, least recently used first.
        #expect(try cache.keys(withPrefix: "").count < 5)
        let report = try cache.collectGarbage()
        #expect(report.effectiveSizeLimit < 5 * cache.blockSize)
        options.minimumFreeDiskSpace = .fraction(1.5)
        #expect { try DiskCache(options: options) } throws: { ($0 as? CacheError)?.code == .invalidOptions }
    }

    @Test func restartKeepsIndexTotalsAndLRUOrder() throws {
        for withSnapshot in [true, false] {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let clock = ManualClock(now: 100_000)
            var cache = try makeCache(dir, clock: clock)
            for i in 0 ..< 8 {
                try cache.store(Data(repeating: UInt8(i), count: 100 * i), forKey: "k\(i)")
                clock.advance(by: 1)
            }
            // Reads reorder: k0 and k3 become the most recent (their access times live in the index).
            _ = try cache.record(forKey: "k0")
            clock.advance(by: 1)
            _ = try cache.record(forKey: "k3")
            let totals = (cache.count, cache.totalSize)
            cache.close()
            if !withSnapshot { try FileManager.default.removeItem(at: dir.url.appendingPathComponent(".larder-index")) }
            cache = try makeCache(dir, clock: clock)
            #expect((cache.count, cache.totalSize) == totals, "snapshot: \(withSnapshot)")
            let order = cache.state.withLock { $0.index.entriesLeastRecentFirst.map { $0.key ?? "" } }
            #expect(order == ["k1", "k2", "k4", "k5", "k6", "k7", "k0", "k3"], "snapshot: \(withSnapshot)")
            cache.close()
        }
    }

    /// The index image on disk (base and journal, read as a reopened cache reads them) is exact
    /// after a collection and absent from the first change on.
    @Test func snapshotIsWrittenByCollectionAndWithdrawnByTheNextChange() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock)
        try cache.store(Data("a".utf8), forKey: "a")
        #expect(DiskAudit.imageFacts(cache) == nil)
        try cache.collectGarbage()
        #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache))
        _ = try cache.record(forKey: "a")  // a read changes no record: the image stays
        #expect(DiskAudit.imageFacts(cache)?.map(\.key) == ["a"])
        // A read-only reader (what another process would see after a crash now) trusts it.
        var readOnly = testOptions(dir.url, clock: clock)
        readOnly.isReadOnly = true
        #expect(try DiskCache(options: readOnly).keys(withPrefix: "") == ["a"])
        try cache.store(Data("b".utf8), forKey: "b")
        #expect(DiskAudit.imageFacts(cache) == nil, "a store withdraws the image before it writes")
        try cache.collectGarbage()
        #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache))
        #expect(DiskAudit.imageFacts(cache)?.map(\.key) == ["a", "b"])
        try cache.lock(forKeys: ["a"])
        #expect(DiskAudit.imageFacts(cache) == nil, "so does a lock")
        try cache.collectGarbage()
        #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache))
        #expect(DiskAudit.imageFacts(cache)?.first?.lockCount == 1)
        try cache.remove(forKeys: ["b"])
        #expect(DiskAudit.imageFacts(cache) == nil, "and a remove")
        cache.close()
        #expect(DiskAudit.imageFacts(cache)?.map(\.key) == ["a"])
    }

    @Test func restartSeesFilesAddedAndDeletedBehindItsBack() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        var cache = try makeCache(dir, clock: clock)
        for i in 0 ..< 5 { try cache.store(Data([UInt8(i)]), forKey: "k\(i)") }
        cache.close()
        // Another writer (a second Larder instance, later closed) adds one record...
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let other = try makeCache(scratch, clock: clock)
        try other.store(Data("new".utf8), forKey: "added")
        other.close()
        let addedFile = try #require(recordFiles(in: scratch.url).first)
        try FileManager.default.createDirectory(
            at: dir.url.appendingPathComponent(String(addedFile.prefix(2))), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: scratch.url.appendingPathComponent(addedFile), to: dir.url.appendingPathComponent(addedFile))
        // ...and one is deleted by hand.
        let victim = DiskLayout(root: dir.path).path(for: SHA256Hash.hex(of: "k2"))
        try FileManager.default.removeItem(atPath: victim)
        cache = try makeCache(dir, clock: clock)
        #expect(try cache.keys(withPrefix: "").sorted() == ["added", "k0", "k1", "k3", "k4"])
        #expect(cache.totalSize == 5 * cache.blockSize)
        #expect(try cache.record(forKey: "added")?.data == Data("new".utf8))
    }

    @Test func accessTimesAreWrittenBackToHeaders() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock, configure: { $0.keyEncoding = .verbatim })
        try cache.store(Data("x".utf8), forKey: "slides")
        try cache.store(Data("y".utf8), forKey: "fixed", expiry: .seconds(1000))
        clock.advance(by: 30.5)
        _ = try cache.record(forKey: "slides")
        _ = try cache.record(forKey: "fixed")
        func header(_ name: String) throws -> RecordHeader {
            try RecordHeader.decode(Array(try Data(contentsOf: dir.url.appendingPathComponent(name))))
        }
        // A load writes nothing...
        #expect(try header("sl/slides").updateTimeSec == 100_000)
        // ...until a collection writes the batch back.
        _ = try cache.collectGarbage()
        #expect(try header("sl/slides").updateTimeSec == 100_030)
        #expect(try header("sl/slides").lastAccessMilliseconds == 100_030_500)
        #expect(try header("fi/fixed").updateTimeSec == 100_000)
        #expect(try header("fi/fixed").lastAccessMilliseconds == 100_030_500)
    }

    @Test func storeThatHitsENOSPCFreesRoomAndRetriesOnce() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let failures = LarderMutex(0)
        var calls = SystemCalls.live
        calls.write = { fd, buffer, count in
            let fail = failures.withLock { n -> Bool in
                guard n > 0 else { return false }
                n -= 1
                return true
            }
            if fail {
                errno = ENOSPC
                return -1
            }
            return SystemCalls.live.write(fd, buffer, count)
        }
        var options = testOptions(dir.url, clock: clock)
        options.keyEncoding = .verbatim
        let cache = try DiskCache(options: options, systemCalls: calls)
        for key in ["old", "locked", "newer"] {
            try cache.store(Data(key.utf8), forKey: key, locked: key == "locked")
            clock.advance(by: 1)
        }
        try cache.store(Data("v1".utf8), forKey: "target")
        failures.withLock { $0 = 1 }
        try cache.store(Data("v2".utf8), forKey: "target")
        #expect(try cache.record(forKey: "target")?.data == Data("v2".utf8))
        #expect(try cache.record(forKey: "old") == nil)  // the least recently used unlocked record made room
        #expect(try cache.record(forKey: "locked") != nil)
        #expect(cache.statistics.evictions[.diskFull] == 1)
        failures.withLock { $0 = 2 }
        #expect { try cache.store(Data("v3".utf8), forKey: "target") } throws: { ($0 as? CacheError)?.code == .diskFull }
        #expect(try cache.record(forKey: "target")?.data == Data("v2".utf8))
        #expect((try? FileManager.default.contentsOfDirectory(atPath: dir.url.appendingPathComponent(".larder-tmp").path))?.isEmpty == true)
    }

    @Test func scheduledCollectionRunsAndStops() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let finished = DispatchSemaphore(value: 0)
        let cache = try makeCache(dir, clock: clock) { options in
            options.garbageCollectionInterval = 0.05
            options.eventHandler = { event in
                if case .collectionFinished = event { finished.signal() }
            }
        }
        try cache.store(Data("x".utf8), forKey: "k", expiry: .seconds(1))
        clock.advance(by: 5)
        cache.scheduleGarbageCollection()
        cache.scheduleGarbageCollection()
        #expect(cache.isGarbageCollectionScheduled)
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(!cache.contains("k"))
        cache.unscheduleGarbageCollection()
        #expect(!cache.isGarbageCollectionScheduled)
    }

    @Test func collectionConcurrentWithLoadsAndStores() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try makeCache(dir, clock: clock, sizeLimit: 40 * 4096) { $0.keyEncoding = .sha256 }
        for i in 0 ..< 30 { try cache.store(Data(repeating: 9, count: 10), forKey: "pinned\(i)", locked: i < 5) }
        let wrongBytes = LarderMutex(0)
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            for i in 0 ..< 300 {
                if worker == 0 {
                    if i % 10 == 0 { _ = try? cache.collectGarbage() }
                    clock.advance(by: 0.5)
                } else {
                    let key = "w\(worker)-\(i % 50)"
                    let payload = Data("\(key)#\(i)".utf8)
                    try? cache.store(payload, forKey: key, expiry: i % 3 == 0 ? .default : .seconds(Double(i % 3) * 5))
                    if let loaded = try? cache.record(forKey: key), !String(decoding: loaded.data, as: UTF8.self).hasPrefix(key + "#") {
                        wrongBytes.withLock { $0 += 1 }
                    }
                }
            }
        }
        _ = try cache.collectGarbage()
        #expect(wrongBytes.withLock { $0 } == 0)
        // The index agrees with the disk, and the locked records all survived.
        #expect(try cache.keys(withPrefix: "").count == recordFiles(in: dir.url).count)
        #expect(cache.totalSize == recordFiles(in: dir.url).count * cache.blockSize)
        for i in 0 ..< 5 { #expect(cache.contains("pinned\(i)")) }
        cache.state.withLock { $0.index._checkInvariants() }
    }

    /// A collection removes a record on the index's word where the cache can vouch for its
    /// header: one it stored itself, or one its snapshot describes whose file has not changed
    /// since the snapshot was written. It opens none of them. A record another program changed
    /// in place has its header read first, so a lock written there keeps its record.
    @Test func collectionReadsOnlyTheHeadersItCannotVouchFor() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        // Opens of record files: the last component is a SHA-256 name.
        let opens = Atomic<Int>(0)
        let countsOpen: @Sendable (UnsafePointer<CChar>) -> Void = { path in
            let name = String(cString: path).split(separator: "/").last ?? ""
            if name.utf8.count == 64, name.utf8.allSatisfy({ (0x30 ... 0x39).contains($0) || (0x61 ... 0x66).contains($0) }) {
                opens.add(1, ordering: .relaxed)
            }
        }
        var calls = SystemCalls.live
        calls.openat = { directory, path, flags, mode in
            countsOpen(path)
            return SystemCalls.live.openat(directory, path, flags, mode)
        }
        calls.openBeneath = { directory, path, flags, mode in
            countsOpen(path)
            return SystemCalls.live.openBeneath(directory, path, flags, mode)
        }
        let probe = try makeCache(dir, clock: clock)
        let block = probe.blockSize
        probe.close()
        func open(limit: Int) throws -> DiskCache {
            var options = testOptions(dir.url, clock: clock)
            options.sizeLimit = limit * block
            options.policy = .lru
            return try DiskCache(options: options, systemCalls: calls)
        }
        // Stored by this instance: each store past the limit removes the oldest, unopened.
        var cache = try open(limit: 8)
        // The index build (a listing of the empty folder) ends before the stores: a build that
        // overlapped them would read their headers, which is not the collections' doing.
        #expect(try cache.keys().isEmpty)
        for i in 0 ..< 12 {
            try cache.store(Data(repeating: UInt8(i), count: 10), forKey: "k\(i)")
            clock.advance(by: 1)
        }
        #expect(try cache.keys().sorted() == (4 ..< 12).map { "k\($0)" }.sorted())
        #expect(opens.load(ordering: .relaxed) == 0, "the stores' collections opened a record")
        // Folder stamps vouch only for folders last changed a tick before the snapshot.
        try waitForFolderStampsToSettle(cache)
        cache.close()

        // From its own snapshot, every folder unchanged: the opening collection opens nothing.
        opens.store(0, ordering: .relaxed)
        cache = try open(limit: 6)
        #expect(try cache.keys() == (6 ..< 12).map { "k\($0)" })
        #expect(cache.statistics.evictions[.sizeLimit] == 2)
        #expect(opens.load(ordering: .relaxed) == 0, "a collection read headers its snapshot vouched for")
        try waitForFolderStampsToSettle(cache)
        cache.close()

        // Another program locks k6 (the least recently used) in place: its folder is unchanged.
        try lockInPlace("k6", in: dir)
        opens.store(0, ordering: .relaxed)
        cache = try open(limit: 4)
        defer { cache.close() }
        #expect(try cache.keys().sorted() == ["k10", "k11", "k6", "k9"], "the lock on disk kept k6; k7 and k8 went")
        #expect(opens.load(ordering: .relaxed) == 1, "only k6's header was read")
        #expect(try cache.record(forKey: "k6")?.isLocked == true)
        cache.state.withLock { $0.index._checkInvariants() }
    }

    /// A batch of ``DiskCache/twoLaneBatch`` victims or more is removed in two lanes at once; what
    /// they remove, report and emit comes out in the batch's order, least recently used (or
    /// soonest expired) first, and a record another program locked in place is still kept.
    @Test func largeBatchesAreRemovedInTwoLanesInTheirOrder() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        var cache = try makeCache(dir, clock: clock)
        let block = cache.blockSize
        // 120 records, every tenth locked; then every third read again, which makes it recent.
        let keys = (0 ..< 120).map { "record-\($0)" }
        for (i, key) in keys.enumerated() {
            try cache.store(Data(repeating: UInt8(i % 251), count: 200), forKey: key, locked: i % 10 == 0)
            clock.advance(by: 1)
        }
        var recency = keys  // least recent first
        for (i, key) in keys.enumerated() where i % 3 == 0 {
            #expect(try cache.record(forKey: key) != nil)
            recency.removeAll { $0 == key }
            recency.append(key)
        }
        let unlocked = recency.filter { !(keys.firstIndex(of: $0)! % 10 == 0) }
        cache.close()
        // Another program locks the fifth least recently used unlocked record in place.
        let lockedInPlace = unlocked[4]
        try lockInPlace(lockedInPlace, in: dir)

        // Reopened with room for 40: 13 locked records stay, and the 27 most recent unlocked.
        let events = EventLog()
        cache = try makeCache(dir, clock: clock, sizeLimit: 40 * block) {
            $0.eventHandler = events.handler
            $0.policy = .lru
        }
        let expectedEvictions = Array(unlocked.filter { $0 != lockedInPlace }.prefix(80))
        #expect(try cache.keys(withPrefix: "").count == 40)
        let evicted = events.all.compactMap { event -> String? in
            if case .recordEvicted(let key, _, .sizeLimit) = event { return key }
            return nil
        }
        #expect(evicted == expectedEvictions)
        #expect(try cache.keys(withPrefix: "") == recency.filter { !expectedEvictions.contains($0) })
        #expect(try cache.record(forKey: lockedInPlace)?.isLocked == true)
        #expect(recordFiles(in: dir.url).count == 40)

        // Expiry: 300 records expiring a second apart, every tenth locked; the collection removes
        // the unlocked ones in two batches (256 and the rest), soonest expired first.
        try cache.removeAll()
        cache.close()
        cache = try makeCache(dir, clock: clock)
        defer { cache.close() }
        let expiring = (0 ..< 300).map { "expiring-\($0)" }
        for (i, key) in expiring.enumerated() {
            try cache.store(Data(repeating: 7, count: 100), forKey: key, expiry: .seconds(1_000), locked: i % 10 == 0)
            clock.advance(by: 1)
        }
        clock.advance(by: 1_001)
        let report = try cache.collectGarbage()
        let expectedExpired = expiring.enumerated().filter { $0.offset % 10 != 0 }.map(\.element)
        #expect(report.removed.map(\.key) == expectedExpired)
        #expect(report.removed.allSatisfy { $0.reason == .expired && !$0.wasLocked })
        #expect(report.bytesFreed == 270 * block)
        #expect(try cache.keys(withPrefix: "").count == 30)
        #expect(recordFiles(in: dir.url).count == 30)
        cache.state.withLock { $0.index._checkInvariants() }
    }
}
