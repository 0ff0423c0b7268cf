import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// The index journal: a collection appends a commit instead of rewriting the base, and the
/// image on disk (base and journal, read as a reopened cache reads them) is exact or absent
/// whatever point a crash leaves the files at.
@Suite struct IndexJournalTests {
    /// A cache in `url`, its index built (so that no change races the build's reading of the image).
    func makeCache(_ url: URL, clock: ManualClock) throws -> DiskCache {
        let cache = try DiskCache(options: testOptions(url, clock: clock))
        cache.waitForIndex()
        return cache
    }

    static func bytes(_ path: String) -> [UInt8]? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { [UInt8]($0) }
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// A cache with a commit in its journal (``cacheWithACommit(_:clock:count:)``), the bytes of
    /// its base and journal, and its key encoding.
    func committedImage(
        _ dir: TemporaryDirectory, clock: ManualClock = ManualClock(now: 100_000)
    ) throws -> (cache: DiskCache, base: [UInt8], journal: [UInt8], encoding: KeyEncoding) {
        let cache = try cacheWithACommit(dir, clock: clock)
        let base = try #require(Self.bytes(cache.layout.snapshotPath))
        let journal = try #require(Self.bytes(cache.layout.journalPath))
        return (cache, base, journal, cache.options.keyEncoding)
    }

    /// A cache of `count` records whose close wrote a base, reopened and collected once, so that
    /// its journal holds an `open` and a commit.
    func cacheWithACommit(_ dir: TemporaryDirectory, clock: ManualClock, count: Int = 6) throws -> DiskCache {
        var cache = try makeCache(dir.url, clock: clock)
        for i in 0 ..< count { try cache.store(Data(repeating: UInt8(i), count: 10 * i), forKey: "k\(i)") }
        cache.close()
        cache = try makeCache(dir.url, clock: clock)
        try cache.store(Data("new".utf8), forKey: "new", locked: true)
        try cache.remove(forKeys: ["k1"])
        try cache.collectGarbage()
        return cache
    }

    @Test func aCollectionAppendsACommitAndLeavesTheBase() throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try cacheWithACommit(dir, clock: clock)
        let base = try #require(Self.bytes(cache.layout.snapshotPath))
        let journal = try #require(Self.bytes(cache.layout.journalPath))
        #expect(!journal.isEmpty)
        #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache))
        #expect(DiskAudit.indexImage(cache)?.touched.contains(SHA256Hash.hex(of: "k1")) == true)
        // Another change and collection: the base stays as it was, the journal grows.
        try cache.store(Data("more".utf8), forKey: "more")
        #expect(DiskAudit.imageFacts(cache) == nil)
        try cache.collectGarbage()
        #expect(Self.bytes(cache.layout.snapshotPath) == base)
        #expect((Self.bytes(cache.layout.journalPath)?.count ?? 0) > journal.count)
        #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache))
        // A close compacts: a new base, no journal.
        let facts = DiskAudit.indexFacts(cache)
        cache.close()
        #expect(Self.bytes(cache.layout.journalPath) == nil)
        #expect(Self.bytes(cache.layout.snapshotPath) != base)
        #expect(DiskAudit.imageFacts(cache) == facts)
    }

    /// Every cut inside the last record (a crash mid-append) reads as absent, as does garbage
    /// after it; a cut at a record boundary after an `open` too.
    @Test func aTornTailIsAbsent() throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let (cache, base, journal, encoding) = try committedImage(dir)
        defer { cache.close() }
        #expect(IndexJournal.load(base: base, journal: journal, keyEncoding: encoding) != nil)
        // The journal is [open, commit]; the open record is the fixed overhead long.
        let commitStart = IndexJournal.recordOverhead
        for cut in commitStart ..< journal.count {
            #expect(IndexJournal.load(base: base, journal: Array(journal[..<cut]), keyEncoding: encoding) == nil, "cut at \(cut)")
        }
        for cut in 1 ..< commitStart {
            #expect(IndexJournal.load(base: base, journal: Array(journal[..<cut]), keyEncoding: encoding) == nil, "cut at \(cut)")
        }
        // Zeros where an append did not arrive (the length reached the disk, the bytes not).
        #expect(IndexJournal.load(base: base, journal: journal + [UInt8](repeating: 0, count: 40), keyEncoding: encoding) == nil)
        // A commit without its seal (its bytes arrived, the length change that seals it not).
        #expect(IndexJournal.load(base: base, journal: Array(journal.dropLast(IndexJournal.sealSize)), keyEncoding: encoding) == nil)
        var unsealed = journal
        unsealed[journal.count - 1] = 1
        #expect(IndexJournal.load(base: base, journal: unsealed, keyEncoding: encoding) == nil)
        #expect(IndexJournal.load(base: base, journal: journal + [1], keyEncoding: encoding) == nil)
        // An empty journal, or none, leaves the base alone exact.
        #expect(IndexJournal.load(base: base, journal: [], keyEncoding: encoding)?.touched == [])
        #expect(IndexJournal.load(base: base, journal: nil, keyEncoding: encoding) != nil)
    }

    @Test func aCorruptedRecordIsAbsent() throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let (cache, base, journal, encoding) = try committedImage(dir, clock: clock)
        defer { cache.close() }
        for position in stride(from: 0, to: journal.count, by: 3) {
            var damaged = journal
            damaged[position] ^= 0x20
            #expect(IndexJournal.load(base: base, journal: damaged, keyEncoding: encoding) == nil, "byte \(position)")
        }
        var damagedBase = base
        damagedBase[base.count / 2] ^= 1
        #expect(IndexJournal.load(base: damagedBase, journal: journal, keyEncoding: encoding) == nil)
        // Reopened on a damaged journal, the cache scans the headers and agrees with the files.
        var damaged = journal
        damaged[journal.count - 6] ^= 0xFF
        try Self.write(damaged, to: cache.layout.journalPath)
        let copy = TemporaryDirectory("larder-journal-copy")
        defer { copy.remove() }
        try Self.copyFolder(cache.layout.root, to: copy)
        let reopened = try makeCache(copy.url, clock: clock)
        defer { reopened.close() }
        #expect(DiskAudit.indexMismatches(reopened).isEmpty)
        #expect(try reopened.record(forKey: "new")?.lockCount == 1)
    }

    /// Records of another epoch are skipped: a journal left beside a newer base (a crash between
    /// the base's rename and the journal's removal) leaves the base alone exact.
    @Test func aCrashBetweenTheBaseAndTheJournalsRemovalLeavesTheBase() throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try cacheWithACommit(dir, clock: clock)
        let oldJournal = try #require(Self.bytes(cache.layout.journalPath))
        try cache.store(Data("late".utf8), forKey: "late")
        #expect(try cache.flush())
        let facts = DiskAudit.indexFacts(cache)
        cache.close()
        #expect(Self.bytes(cache.layout.journalPath) == nil)
        // The old journal back, as if its removal had not happened.
        try Self.write(oldJournal, to: cache.layout.journalPath)
        let base = try #require(Self.bytes(cache.layout.snapshotPath))
        let image = try #require(IndexJournal.load(base: base, journal: oldJournal, keyEncoding: cache.options.keyEncoding))
        #expect(image.touched.isEmpty, "no record of the old epoch applies")
        #expect(image.index.entriesLeastRecentFirst.map(DiskAudit.EntryFacts.init) == facts)
        // A cache opened there trusts the base, withdraws it on its first change (its record
        // follows the old ones), and commits again.
        let reopened = try makeCache(dir.url, clock: clock)
        defer { reopened.close() }
        #expect(DiskAudit.indexFacts(reopened) == facts)
        try reopened.store(Data("x".utf8), forKey: "x")
        #expect(DiskAudit.imageFacts(reopened) == nil)
        try reopened.collectGarbage()
        #expect(DiskAudit.imageFacts(reopened) == DiskAudit.indexFacts(reopened))
        // Another epoch's records after this epoch's last commit make the image absent.
        let journal = try #require(Self.bytes(reopened.layout.journalPath))
        #expect(
            IndexJournal.load(base: base, journal: journal + IndexJournal.openRecord(epoch: 12345), keyEncoding: .sha256) == nil)
    }

    /// A process killed after a collection (the folder copied as it is, the cache still open)
    /// reopens from the image; killed after a later change, from the headers. Either way the
    /// index equals the files.
    @Test func aCrashAfterACollectionReopensFromTheImage() throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let cache = try cacheWithACommit(dir, clock: clock)
        defer { cache.close() }
        for (step, change) in [false, true].enumerated() {
            if change { try cache.lock(forKeys: ["k2"]) }
            let copy = TemporaryDirectory("larder-journal-copy")
            defer { copy.remove() }
            try Self.copyFolder(cache.layout.root, to: copy)
            let reopened = try makeCache(copy.url, clock: clock)
            defer { reopened.close() }
            #expect(DiskAudit.indexMismatches(reopened).isEmpty, "step \(step)")
            #expect(Self.lockCounts(reopened) == Self.lockCounts(cache), "step \(step)")
            if !change {
                // From the image: the same order as the live index, not the headers' order.
                #expect(DiskAudit.indexFacts(reopened).map(\.name) == DiskAudit.indexFacts(cache).map(\.name))
            }
        }
    }

    /// Past its bound (64 KiB here, a quarter of a larger base), a collection schedules a
    /// background compaction, which writes a new base and removes the journal; the image stays
    /// exact after each collection and each compaction. Compactions that never run (a change
    /// under way each time) leave the journal at most twice its bound: then a collection
    /// writes the base itself.
    @Test(arguments: [true, false])
    func theJournalIsCompactedPastItsBound(runsCompactions: Bool) throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        var cache = try makeCache(dir.url, clock: clock)
        for i in 0 ..< 20 { try cache.store(Data([UInt8(i)]), forKey: "seed\(i)") }
        cache.close()
        cache = try makeCache(dir.url, clock: clock)
        defer { cache.close() }
        let held = HeldCompactions(cache)
        let bound = 64 << 10
        var bases: Set<[UInt8]> = []
        var largest = 0
        var compactions = 0
        // Long keys: a commit of ten stores holds about 10 KiB.
        let longKey = String(repeating: "k", count: 1000)
        for round in 0 ..< 30 {
            for i in 0 ..< 10 { try cache.store(Data([UInt8(i)]), forKey: "\(longKey)-\(round)-\(i)") }
            try cache.remove(forKeys: ["seed\(round % 20)"])
            try cache.collectGarbage()
            #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache), "round \(round)")
            let journal = Self.bytes(cache.layout.journalPath)?.count ?? 0
            largest = max(largest, journal)
            if runsCompactions {
                #expect(held.count == (journal > bound ? 1 : 0), "round \(round): a compaction is scheduled past the bound")
                if held.runAll() > 0 {
                    compactions += 1
                    #expect(Self.bytes(cache.layout.journalPath) == nil, "round \(round): the compaction removed the journal")
                    #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache), "round \(round)")
                }
            }
            if let base = Self.bytes(cache.layout.snapshotPath) { bases.insert(base) }
        }
        #expect(largest > bound && largest <= 2 * bound)
        #expect(bases.count >= 3, "the base was rewritten when the journal filled up")
        if runsCompactions { #expect(compactions >= 2) } else { #expect(held.count == 1, "scheduled once, never run") }
    }

    /// A journal that cannot be written (a folder in its place): the cache falls back to
    /// unlinking the base before a change, and the image is still exact or absent.
    @Test func aJournalThatCannotBeWrittenFallsBackToUnlinkingTheBase() throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        var cache = try makeCache(dir.url, clock: clock)
        try cache.store(Data("a".utf8), forKey: "a")
        cache.close()
        try FileManager.default.createDirectory(atPath: cache.layout.journalPath, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: cache.layout.journalPath + "/x", withIntermediateDirectories: false)
        cache = try makeCache(dir.url, clock: clock)
        defer { cache.close() }
        #expect(try cache.keys() == ["a"])
        #expect(Self.bytes(cache.layout.snapshotPath) == nil, "the open withdrew the base by unlinking it")
        for round in 0 ..< 3 {
            try cache.store(Data("b".utf8), forKey: "b\(round)")
            #expect(DiskAudit.imageFacts(cache) == nil, "round \(round)")
            try cache.collectGarbage()
            #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache), "round \(round)")
        }
    }

    // MARK: - Model

    /// Random stores, removals, locks, unlocks, reads, collections and flushes; at random
    /// points the folder is copied as it is (a process killed there) and opened: its index must
    /// equal the files (names, sizes, lock counts), and, when the image was exact, the live
    /// cache's index at that point.
    @Test(arguments: [0x10A7_5EED as UInt64, 0xBEEF, 7])
    func randomChangesCollectionsAndCrashesKeepTheImageExactOrAbsent(seed: UInt64) throws {
        let dir = TemporaryDirectory("larder-journal")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        var random = SplitMix64(seed: seed)
        var cache = try makeCache(dir.url, clock: clock)
        defer { cache.close() }
        let keys = (0 ..< 12).map { "key\($0)" }
        var crashes = 0
        var exactCrashes = 0
        var lastWasCollection = false
        for step in 0 ..< 160 {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            clock.advance(by: 1)
            var collected = false
            var crashed = false
            switch random.next() % 16 {
            case 0 ..< 4: try cache.store(Data(repeating: UInt8(step % 256), count: Int(random.next() % 9000)), forKey: key)
            case 4: try cache.remove(forKeys: [key])
            case 5: try cache.lock(forKeys: [key])
            case 6: try cache.unlock(forKeys: [key])
            case 7 ..< 10: _ = try cache.record(forKey: key)
            case 10 ..< 12:
                try cache.collectGarbage()
                collected = true
            case 12: _ = try cache.flush()
            case 13:
                cache.close()
                cache = try makeCache(dir.url, clock: clock)
            default:
                crashed = true
                crashes += 1
                let image = DiskAudit.imageFacts(cache)
                if image != nil { exactCrashes += 1 }
                let copy = TemporaryDirectory("larder-journal-copy")
                defer { copy.remove() }
                try Self.copyFolder(cache.layout.root, to: copy)
                let reopened = try makeCache(copy.url, clock: clock)
                defer { reopened.close() }
                #expect(DiskAudit.indexMismatches(reopened).isEmpty, "seed \(seed) step \(step)")
                #expect(Self.lockCounts(reopened) == Self.lockCounts(cache), "seed \(seed) step \(step)")
                if let image {
                    #expect(Set(image.map(\.name)) == Set(DiskAudit.indexFacts(cache).map(\.name)), "seed \(seed) step \(step)")
                    if lastWasCollection {
                        #expect(image == DiskAudit.indexFacts(cache), "seed \(seed) step \(step)")
                        #expect(DiskAudit.indexFacts(reopened).map(\.name) == image.map(\.name), "seed \(seed) step \(step)")
                    }
                }
            }
            // A crash point changes nothing: the collection before it still ends the changes.
            if !crashed { lastWasCollection = collected }
            if collected { #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache), "seed \(seed) step \(step)") }
            cache.state.withLock { $0.index._checkInvariants() }
        }
        #expect(crashes > 0 && exactCrashes > 0 && exactCrashes < crashes, "\(exactCrashes) of \(crashes) crashes found an exact image")
    }

    // MARK: - Helpers

    /// Each record's size and lock count, by name.
    static func lockCounts(_ cache: DiskCache) -> [String: String] {
        Dictionary(uniqueKeysWithValues: DiskAudit.indexFacts(cache).map { ($0.name, "\($0.diskSize)/\($0.lockCount)") })
    }

    /// Copies a cache folder as it is on disk into `copy` (replacing it).
    static func copyFolder(_ root: String, to copy: TemporaryDirectory) throws {
        try FileManager.default.removeItem(at: copy.url)
        try FileManager.default.copyItem(atPath: root, toPath: copy.path)
    }
}
