import Foundation
import Testing
@testable import Larder

/// A store in steps, as `HybridCache` makes it: `prepareStore` writes the record's file outside
/// every lock of the cache, `commitStore` puts it in place, `finishStore` enforces the limits;
/// `discardStore` ends a prepared store that is not wanted (a remote hit's disk copy made stale
/// by a local change).
@Suite struct DiskStoreStepsTests {
    /// The files in the cache's temporary folder.
    func temporaryFiles(_ cache: DiskCache) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: cache.layout.temporaryFolder)) ?? []
    }

    @Test func aCommittedStoreIsTheRecord() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        let pending = try cache.prepareStore(Data("new".utf8), forKey: "k", expiry: .seconds(60), locked: false)
        #expect(try cache.value(forKey: "k") == nil)
        try cache.finishStore(cache.commitStore(pending))
        #expect(try cache.value(forKey: "k") == Data("new".utf8))
        #expect(try cache.record(forKey: "k")?.expiry == .seconds(60))
        #expect(temporaryFiles(cache).isEmpty)
    }

    @Test func aDiscardedStoreLeavesThePreviousRecordAndNoFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        try cache.store(Data("old".utf8), forKey: "k")
        let filesBefore = recordFiles(in: dir.url)
        let pending = try cache.prepareStore(Data("new".utf8), forKey: "k", expiry: .seconds(60), locked: false)
        cache.discardStore(pending)
        #expect(try cache.value(forKey: "k") == Data("old".utf8))
        #expect(cache.count == 1)
        #expect(recordFiles(in: dir.url) == filesBefore)
        #expect(temporaryFiles(cache).isEmpty)
    }

    /// Between the steps no lock is held: a read and a store of the same key complete (were the
    /// key lock held, they would wait for ever: hence the time limit), and the store made there is
    /// what remains when the prepared one is discarded.
    @Test(.timeLimit(.minutes(1))) func nothingIsLockedBetweenTheSteps() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        try cache.store(Data("old".utf8), forKey: "k")
        let pending = try cache.prepareStore(Data("copy".utf8), forKey: "k", expiry: .seconds(60), locked: false)
        #expect(temporaryFiles(cache).count == 1)
        #expect(try cache.value(forKey: "k") == Data("old".utf8))
        try cache.store(Data("mine".utf8), forKey: "k")
        cache.discardStore(pending)
        #expect(try cache.value(forKey: "k") == Data("mine".utf8))
        #expect(temporaryFiles(cache).isEmpty)
    }

    /// A rename that fails leaves the previous record, and the written file goes.
    @Test func aFailedCommitRemovesTheWrittenFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let injector = FaultInjector()
        let cache = try DiskCache(options: testOptions(dir.url), systemCalls: injector.calls)
        try cache.store(Data("old".utf8), forKey: "k")
        let pending = try cache.prepareStore(Data("new".utf8), forKey: "k", expiry: .seconds(60), locked: false)
        injector.arm(.rename, .fail(EIO))
        #expect(throws: CacheError.self) { _ = try cache.commitStore(pending) }
        #expect(try cache.value(forKey: "k") == Data("old".utf8))
        #expect(temporaryFiles(cache).isEmpty)
    }

    /// The cache's folder deleted between the steps (its temporary file with it): the commit makes
    /// the folder again, writes the file again and puts it in place.
    @Test func aCommitAfterTheFolderWasDeletedWritesTheRecordAgain() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        try cache.store(Data("old".utf8), forKey: "k")
        let pending = try cache.prepareStore(Data("new".utf8), forKey: "k", expiry: .seconds(60), locked: false)
        try FileManager.default.removeItem(at: dir.url)
        try cache.finishStore(cache.commitStore(pending))
        #expect(try cache.value(forKey: "k") == Data("new".utf8))
        #expect(recordFiles(in: dir.url).count == 1)
        #expect(temporaryFiles(cache).isEmpty)
    }
}
