import Foundation
import Synchronization
import Testing

@testable import Larder

/// The two layouts SPTPersistentCache writes (`useDirectorySeparation` YES and NO), SPT's shard
/// rule, what `.larder` records, and the SPT options Larder adds in issue 12.
@Suite struct FolderLayoutTests {
    // SPTPersistentCacheFileManager.m:65: `[key substringToIndex:2]` when `key.length >= 2`,
    // NSString lengths counting UTF-16 code units.
    @Test(arguments: [
        ("abcdef", "ab"),
        ("ab", "ab"),
        ("é1", "é1"),  // U+00E9, one unit
        ("e\u{301}x", "e\u{301}"),  // a combining mark: two units, although one Character
        ("\u{301}abc", "\u{301}a"),  // a key starting with a combining mark
        ("😀x", "😀"),  // a non-BMP first character is two units: SPT's shard is the pair
        ("😀", "😀"),
        ("a😀b", "a😀"),  // two units would split the pair: Larder keeps it whole
        ("日本語", "日本"),
    ])
    func shardFollowsSPTsUTF16Rule(name: String, shard: String) {
        #expect(DiskLayout.shard(for: name)?.unicodeScalars.elementsEqual(shard.unicodeScalars) == true)
    }

    @Test func namesShorterThanTwoUnitsSitAtTheRoot() {
        #expect(DiskLayout.shard(for: "a") == nil)
        #expect(DiskLayout.shard(for: "é") == nil)
        #expect(DiskLayout.shard(for: "") == nil)
        let sharded = DiskLayout(root: "/c", layout: .sharded)
        let flat = DiskLayout(root: "/c", layout: .flat)
        #expect(sharded.path(for: "a") == "/c/a" && sharded.path(for: "abc") == "/c/ab/abc")
        #expect(flat.path(for: "abc") == "/c/abc" && flat.folder(for: "abc") == "/c")
    }

    @Test func aFlatCacheKeepsEveryRecordAtTheRootThroughEveryOperation() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = testOptions(dir.url, clock: clock, encoding: .verbatim)
        options.layout = .flat
        options.sizeLimit = 64 * 1024
        do {
            let cache = try DiskCache(options: options)
            #expect(cache.folderLayout == .flat)
            try cache.store(Data("1".utf8), forKey: "alpha", expiry: .seconds(30))
            try cache.store(Data("2".utf8), forKey: "alpine", locked: true)
            try cache.store(Data("3".utf8), forKey: "b")
            try cache.store(Data(repeating: 7, count: 4096), forKey: "beta")
            #expect(recordFiles(in: dir.url) == ["alpha", "alpine", "b", "beta"])
            #expect(try cache.keys(withPrefix: "al") == ["alpha", "alpine"])
            #expect(try cache.value(forKey: "beta")?.count == 4096)
            #expect(try cache.remove(forKey: "b"))
            clock.advance(by: 31)
            let report = try cache.collectGarbage()
            #expect(report.removed.map(\.file).map { ($0 as NSString).lastPathComponent } == ["alpha"])
            #expect(cache.count == 2)
            cache.close()
        }
        let metadata = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: dir.url.appendingPathComponent(".larder"))) as? [String: Any])
        #expect(metadata["layout"] as? String == "flat")
        #expect(metadata["defaultExpiration"] as? Double == 600)

        // Reopened with the default (sharded) option, the folder keeps its recorded layout, and
        // the snapshot written at close rebuilds the same index.
        var reopened = testOptions(dir.url, clock: clock, encoding: .verbatim)
        reopened.layout = .sharded
        let cache = try DiskCache(options: reopened)
        #expect(cache.folderLayout == .flat)
        #expect(try cache.keys() == ["alpine", "beta"])
        #expect(try cache.value(forKey: "alpine") == Data("2".utf8))
        try cache.removeAllUnlocked()
        #expect(recordFiles(in: dir.url) == ["alpine"])
        try cache.removeAll()
        #expect(recordFiles(in: dir.url).isEmpty && cache.count == 0)
    }

    @Test(arguments: [FolderLayout.flat, .sharded])
    func aFolderWithoutMetadataIsDetectedFromItsFiles(written: FolderLayout) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = DiskCacheOptions.spt(directory: dir.url)
        options.clock = clock
        options.layout = written
        do {
            let cache = try DiskCache(options: options)
            for key in ["song:1", "song:2", "x", "album:9"] { try cache.store(Data(key.utf8), forKey: key) }
            cache.close()
        }
        // What SPTPersistentCache leaves: records only.
        for hidden in [".larder", ".larder-index", ".larder.lock", ".larder-tmp"] {
            try? FileManager.default.removeItem(at: dir.url.appendingPathComponent(hidden))
        }
        let events = EventLog()
        var spt = DiskCacheOptions.spt(directory: dir.url)
        spt.clock = clock
        spt.layout = written == .flat ? .sharded : .flat  // the files win over the option
        spt.eventHandler = events.handler
        let cache = try DiskCache(options: spt)
        #expect(cache.folderLayout == written)
        #expect(events.all.first == .opened(name: "persistent.cache", layout: written, layoutWasDetected: true))
        #expect(cache.count == 4)
        #expect(try cache.keys(withPrefix: "song:").sorted() == ["song:1", "song:2"])
        #expect(try cache.value(forKey: "album:9") == Data("album:9".utf8))
        #expect(try cache.remove(forKey: "x") && cache.count == 3)
        cache.close()
        let metadata = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: dir.url.appendingPathComponent(".larder"))) as? [String: Any])
        #expect(metadata["layout"] as? String == written.metadataName)
        #expect(metadata["name"] as? String == "persistent.cache")
    }

    @Test func anEmptyFolderTakesTheOptionsLayout() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = testOptions(dir.url, encoding: .verbatim)
        options.layout = .flat
        let events = EventLog()
        options.eventHandler = events.handler
        let cache = try DiskCache(options: options)
        #expect(cache.folderLayout == .flat)
        #expect(events.all.first == .opened(name: "larder", layout: .flat, layoutWasDetected: false))
    }

    @Test func aMetadataLayoutThisVersionDoesNotKnowIsRefused() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try Data(#"{"format":1,"keyEncoding":"sha256","layout":"shard3"}"#.utf8).write(to: dir.url.appendingPathComponent(".larder"))
        #expect {
            _ = try DiskCache(options: testOptions(dir.url))
        } throws: { ($0 as? CacheError)?.code == .unsupportedFormat }
    }

    /// A cache holding `img-a` (expired), `img-b`, `img-c` (expired but locked) and `other`.
    private func prefixFixture(_ dir: TemporaryDirectory) throws -> DiskCache {
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock, encoding: .verbatim))
        try cache.store(Data("a".utf8), forKey: "img-a", expiry: .seconds(10))
        try cache.store(Data("b".utf8), forKey: "img-b", expiry: .seconds(100))
        try cache.store(Data("c".utf8), forKey: "img-c", expiry: .seconds(10), locked: true)
        try cache.store(Data("d".utf8), forKey: "other", expiry: .seconds(100))
        clock.advance(by: 11)
        return cache
    }

    // SPT's `loadDataForKeysWithPrefix:chooseKeyCallback:` (SPTPersistentCache.m:152) offers only
    // keys whose records can be returned.
    @Test func prefixListingsAndPrefixLoadsLeaveExpiredRecordsOut() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try prefixFixture(dir)
        #expect(try cache.keys(withPrefix: "img-") == ["img-b", "img-c"])
        #expect(try cache.keys(withPrefix: "img-", includingExpired: true) == ["img-a", "img-b", "img-c"])

        var offered: [[String]] = []
        let record = try cache.record(forKeyWithPrefix: "img-") { keys in
            offered.append(keys)
            return keys.last
        }
        #expect(record?.key == "img-c" && record?.data == Data("c".utf8))
        #expect(offered == [["img-b", "img-c"]])
        #expect(try cache.record(forKeyWithPrefix: "img-") { _ in nil } == nil)
        var calledForNothing = false
        let none = try cache.record(forKeyWithPrefix: "none-") { _ in
            calledForNothing = true
            return "other"
        }
        #expect(none == nil && !calledForNothing)
    }

    @Test func prefixLoadsHaveAsyncAndCallbackForms() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try prefixFixture(dir)
        #expect(try await cache.keys(withPrefix: "img-") == ["img-b", "img-c"])
        let asyncRecord = try await cache.record(forKeyWithPrefix: "img-") { keys in keys.first }
        #expect(asyncRecord?.data == Data("b".utf8))
        let response = await withCheckedContinuation { continuation in
            cache.record(forKeyWithPrefix: "img-", choosingKey: { keys in keys.first { $0 == "img-c" } }, queue: .global()) {
                continuation.resume(returning: $0)
            }
        }
        guard case .success(let viaCallback) = response else {
            Issue.record("expected a record, got \(response)")
            return
        }
        #expect(viaCallback.key == "img-c")
    }

    // SPTPersistentCacheOptions.m:13-15 and its guarded setters.
    @Test func theSPTPresetHasSPTsDefaultsAndFloors() throws {
        var options = DiskCacheOptions.spt(directory: URL(fileURLWithPath: "/tmp/x"))
        #expect(options.name == "persistent.cache" && options.layout == .sharded)
        #expect(options.keyEncoding.description == "verbatim")
        #expect(options.defaultExpiration == 600 && options.garbageCollectionInterval == 363)
        #expect(options.minimumFreeDiskSpace == .fraction(0.1) && options.minimumFreeSpaceNeedsSizeLimit)
        options.defaultExpiration = 10
        options.garbageCollectionInterval = 1
        #expect(options.effectiveDefaultExpiration == 60 && options.effectiveGarbageCollectionInterval == 60)
        let larder = DiskCacheOptions(directory: URL(fileURLWithPath: "/tmp/x"))
        #expect(larder.defaultExpiration == 30 * 24 * 60 * 60 && larder.effectiveGarbageCollectionInterval == 363)

        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        options.directory = dir.url
        options.clock = clock
        let cache = try DiskCache(options: options)
        try cache.store(Data("v".utf8), forKey: "k")
        clock.advance(by: 30)  // past the 10 s asked for, within the 60 s floor
        #expect(try cache.value(forKey: "k") != nil)
        clock.advance(by: 61)
        #expect(try cache.value(forKey: "k") == nil)
    }

    // SPTPersistentCacheFileManager.m:156: the 10 % floor only narrows a size limit.
    @Test func freeSpaceNeedsASizeLimitOnlyWhenAsked() throws {
        for needsLimit in [true, false] {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            var options = testOptions(dir.url)
            options.minimumFreeDiskSpace = .fraction(1)  // never met: the volume is never all free
            options.minimumFreeSpaceNeedsSizeLimit = needsLimit
            let cache = try DiskCache(options: options)
            _ = cache.count
            for key in ["a", "b", "c"] { try cache.store(Data(key.utf8), forKey: key) }
            // Without a size limit the SPT rule keeps everything; Larder's own trims to the last store.
            #expect(cache.count == (needsLimit ? 3 : 1))
        }
    }

    @Test func timingsNameEachOperationAndKey() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let timings = Mutex<[OperationTiming]>([])
        var options = testOptions(dir.url, encoding: .verbatim)
        options.name = "covers"
        options.timingHandler = { timing in timings.withLock { $0.append(timing) } }
        let cache = try DiskCache(options: options)
        func synchronousCalls() throws {
            try cache.store(Data("1".utf8), forKey: "a")
            _ = try cache.value(forKey: "a")
            _ = try cache.touch(forKey: "a")
            _ = try cache.lock(forKeys: ["a", "missing"])
            _ = try cache.unlock(forKeys: ["a"])
        }
        try synchronousCalls()
        _ = try await cache.value(forKey: "a")
        try { () throws in _ = try cache.remove(forKey: "a") }()
        let seen = timings.withLock { $0 }
        #expect(seen.map(\.operation) == [.store, .read, .touch, .lock, .lock, .unlock, .read, .remove])
        #expect(seen.map(\.key) == ["a", "a", "a", "a", "missing", "a", "a", "a"])
        #expect(seen.allSatisfy { $0.cacheName == "covers" && $0.duration >= .zero && $0.queued >= .zero })
        #expect(seen.enumerated().allSatisfy { $0.offset == 6 || $0.element.queued == .zero })
    }

    @Test func theCacheNameLabelsItsQueue() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = testOptions(dir.url)
        options.name = "avatars"
        let cache = try DiskCache(options: options)
        #expect(cache.ioQueue.queue.label == "avatars.disk")
        options.name = ""
        #expect(throws: CacheError.self) { try options.validate() }
    }

    @Test(arguments: [1, 3])
    func boundedWorkRunsAtMostTheLimitAtOnceInOrder(limit: Int) {
        let queue = WorkQueue(label: "test", qualities: WorkQualityOfService(), maximumConcurrent: limit, measuresWaits: false)
        struct Counters {
            var running = 0
            var peak = 0
            var order: [Int] = []
        }
        // `LarderMutex`, not `Mutex`: the sanitizer sees no happens-before through the standard
        // library's futex, and reported the counters' updates under it as a race once.
        let counters = LarderMutex(Counters())
        let group = DispatchGroup()
        for i in 0 ..< 40 {
            group.enter()
            queue.async(i % 2 == 0 ? .read : .collection) {
                counters.withLock { c in
                    c.running += 1
                    c.peak = max(c.peak, c.running)
                    c.order.append(i)
                }
                usleep(200)  // so that items overlap when they may
                counters.withLock { $0.running -= 1 }
                group.leave()
            }
        }
        group.wait()
        let result = counters.withLock { $0 }
        #expect(result.order.count == 40 && result.running == 0)
        #expect(result.peak <= limit)
        if limit == 1 { #expect(result.order == Array(0 ..< 40)) }
    }
}
