import Foundation
import Testing
@testable import Larder

/// `DiskCache.store(_:forKey:expiry:locked:gate:)`: the record's file is written before the gate runs,
/// outside every lock of the cache, and put in place only when the gate commits it. The
/// hybrid's disk copies of remote hits go this way (issue 15), so that a copy being written
/// holds no key lock.
@Suite struct DiskStoreGateTests {
    /// The files in the cache's temporary folder.
    func temporaryFiles(_ cache: DiskCache) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: cache.layout.temporaryFolder)) ?? []
    }

    @Test func aGateThatCommitsStoresTheRecord() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        let stored = try cache.store(Data("new".utf8), forKey: "k", expiry: .seconds(60)) { (commit) throws(Errno) -> Bool in
            try commit()
            return true
        }
        #expect(stored)
        #expect(try cache.value(forKey: "k") == Data("new".utf8))
        #expect(try cache.record(forKey: "k")?.expiry == .seconds(60))
        #expect(temporaryFiles(cache).isEmpty)
    }

    @Test func aGateThatDeclinesLeavesThePreviousRecordAndNoFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        try cache.store(Data("old".utf8), forKey: "k")
        let filesBefore = recordFiles(in: dir.url)
        let stored = try cache.store(Data("new".utf8), forKey: "k", expiry: .seconds(60)) { _ in false }
        #expect(!stored)
        #expect(try cache.value(forKey: "k") == Data("old".utf8))
        #expect(cache.count == 1)
        #expect(recordFiles(in: dir.url) == filesBefore)
        #expect(temporaryFiles(cache).isEmpty)
    }

    /// The gate runs with the file already written and no lock held: a read and a store of the
    /// same key made from inside it complete (were the key lock held, they would wait for ever:
    /// hence the time limit), and a store made there is what remains when the gate declines.
    @Test(.timeLimit(.minutes(1))) func theGateRunsAfterTheWriteWithNoLockHeld() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        try cache.store(Data("old".utf8), forKey: "k")
        var seen: (temporary: Int, value: Data?) = (0, nil)
        let stored = try cache.store(Data("copy".utf8), forKey: "k", expiry: .seconds(60)) { _ in
            seen = (temporaryFiles(cache).count, try? cache.value(forKey: "k"))
            try? cache.store(Data("mine".utf8), forKey: "k")
            return false
        }
        #expect(!stored)
        #expect(seen.temporary == 1)
        #expect(seen.value == Data("old".utf8))
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
        injector.arm(.rename, .fail(EIO))
        #expect(throws: CacheError.self) {
            _ = try cache.store(Data("new".utf8), forKey: "k", expiry: .seconds(60)) { (commit) throws(Errno) -> Bool in
                try commit()
                return true
            }
        }
        #expect(try cache.value(forKey: "k") == Data("old".utf8))
        #expect(temporaryFiles(cache).isEmpty)
    }
}
