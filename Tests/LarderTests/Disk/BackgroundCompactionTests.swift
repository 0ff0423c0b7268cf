import Dispatch
import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// The compaction a collection schedules once the journal outgrows its bound runs off the
/// collection's path; until it does, the image on disk is the base and the long journal, exact;
/// and a close racing it still leaves an exact image, written while the cache owned its folder.
@Suite struct BackgroundCompactionTests {
    /// A cache whose journal is past its bound after a collection, with the compaction that
    /// collection scheduled held.
    func cacheWithACompactionDue(_ dir: TemporaryDirectory, clock: ManualClock) throws -> (DiskCache, HeldCompactions) {
        var cache = try DiskCache(options: testOptions(dir.url, clock: clock))
        for i in 0 ..< 20 { try cache.store(Data([UInt8(i)]), forKey: "seed\(i)") }
        cache.close()
        cache = try DiskCache(options: testOptions(dir.url, clock: clock))
        cache.waitForIndex()
        let held = HeldCompactions(cache)
        let longKey = String(repeating: "k", count: 1000)
        for round in 0 ..< 30 where held.count == 0 {
            for i in 0 ..< 10 { try cache.store(Data([UInt8(i)]), forKey: "\(longKey)-\(round)-\(i)") }
            try cache.lock(forKeys: ["seed\(round % 20)"])
            try cache.collectGarbage()
        }
        try #require(held.count == 1)
        return (cache, held)
    }

    /// A process killed after the commit and before its compaction (the folder copied then)
    /// reopens from the base and the long journal, in the live order; the compaction then
    /// replaces both with one base, and a copy taken after it reopens the same.
    @Test func aCrashBetweenTheCommitAndTheCompactionReopensFromTheImage() throws {
        let dir = TemporaryDirectory("larder-compaction")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let (cache, held) = try cacheWithACompactionDue(dir, clock: clock)
        defer { cache.close() }
        let base = try #require(IndexJournalTests.bytes(cache.layout.snapshotPath))
        let journal = try #require(IndexJournalTests.bytes(cache.layout.journalPath))
        #expect(journal.count > 64 << 10, "past the bound: the collection did not compact")
        for compacted in [false, true] {
            if compacted {
                #expect(held.runAll() == 1)
                #expect(IndexJournalTests.bytes(cache.layout.journalPath) == nil)
                #expect(IndexJournalTests.bytes(cache.layout.snapshotPath) != base)
            }
            #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache), "compacted: \(compacted)")
            let copy = TemporaryDirectory("larder-compaction-copy")
            defer { copy.remove() }
            try IndexJournalTests.copyFolder(cache.layout.root, to: copy)
            let reopened = try DiskCache(options: testOptions(copy.url, clock: clock))
            defer { reopened.close() }
            reopened.waitForIndex()
            #expect(DiskAudit.indexMismatches(reopened).isEmpty, "compacted: \(compacted)")
            #expect(IndexJournalTests.lockCounts(reopened) == IndexJournalTests.lockCounts(cache), "compacted: \(compacted)")
            // From the image: the live order, not the headers' (by last access).
            #expect(DiskAudit.indexFacts(reopened).map(\.name) == DiskAudit.indexFacts(cache).map(\.name), "compacted: \(compacted)")
        }
    }

    /// A close that races the compaction (on another thread), or that comes before it: either
    /// way the close's base is exact, the journal gone, and a compaction run after the close
    /// writes nothing.
    @Test(arguments: [false, true])
    func aCloseRacingTheCompactionLeavesAnExactImage(racing: Bool) throws {
        let dir = TemporaryDirectory("larder-compaction")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let (cache, held) = try cacheWithACompactionDue(dir, clock: clock)
        let live = DiskAudit.indexFacts(cache)
        if racing {
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                held.runAll()
                done.signal()
            }
            cache.close()
            done.wait()
        } else {
            cache.close()
            let base = IndexJournalTests.bytes(cache.layout.snapshotPath)
            #expect(held.runAll() == 1)
            #expect(IndexJournalTests.bytes(cache.layout.snapshotPath) == base, "no base after the close")
        }
        #expect(IndexJournalTests.bytes(cache.layout.journalPath) == nil)
        #expect(DiskAudit.imageFacts(cache) == live)
        let reopened = try DiskCache(options: testOptions(dir.url, clock: clock))
        defer { reopened.close() }
        reopened.waitForIndex()
        #expect(DiskAudit.indexMismatches(reopened).isEmpty)
        #expect(DiskAudit.indexFacts(reopened) == live)
    }

    /// On a thread of the cache's own utility queue (as by default), the compaction runs
    /// beside stores and reads of other keys, and the image ends exact.
    @Test func theCompactionRunsOnTheUtilityQueueBesideOtherWork() throws {
        let dir = TemporaryDirectory("larder-compaction")
        defer { dir.remove() }
        let clock = ManualClock(now: 100_000)
        let (cache, held) = try cacheWithACompactionDue(dir, clock: clock)
        defer { cache.close() }
        let done = DispatchSemaphore(value: 0)
        cache.ioQueue.async(.collection) {
            held.runAll()
            done.signal()
        }
        for i in 0 ..< 50 {
            try cache.store(Data([UInt8(i)]), forKey: "beside\(i)")
            #expect(try cache.record(forKey: "beside\(i)") != nil)
        }
        done.wait()
        try cache.collectGarbage()
        #expect(DiskAudit.imageFacts(cache) == DiskAudit.indexFacts(cache))
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
    }
}
