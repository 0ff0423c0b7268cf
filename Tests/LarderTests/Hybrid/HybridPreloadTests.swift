import Foundation
import Testing
@testable import Larder

@Suite struct HybridPreloadTests {
    /// Writes plain preloaded files into `folder`.
    func writeFiles(_ files: [String: String], to folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, content) in files { try Data(content.utf8).write(to: folder.appendingPathComponent(name)) }
    }

    @Test func copyIfMissingImportsPlainFilesAndLeavesPresentEntriesAlone() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let shipped = dir.appending("shipped")
        try writeFiles(["a": "alpha", "b": "shipped b", "c": "gamma", ".hidden": "no"], to: shipped)
        // A broken entry: a link to nothing.
        try FileManager.default.createSymbolicLink(
            atPath: shipped.appendingPathComponent("broken").path, withDestinationPath: "/nonexistent/x")
        let clock = ManualClock(now: 1_700_000_000)
        let cacheDir = dir.appending("cache")
        do {
            let disk = try DiskCache(options: testOptions(cacheDir, clock: clock))
            try disk.store(bytes("kept b"), forKey: "b")
            disk.close()
        }
        clock.advance(by: 100)  // within the default expiration (600 s): "b" is still there
        var options = hybridOptions(cacheDir, clock: clock)
        options.preloaded = PreloadedEntries(directory: shipped)
        let cache = try HybridCache(options: options)
        let report = try #require(cache.preloadReport)
        #expect(report.imported == ["a", "c"])
        #expect(report.alreadyPresent == ["b"])
        #expect(report.failures.map { ($0.path as NSString).lastPathComponent } == ["broken"])
        #expect(try cache.value(forKey: "a") == bytes("alpha"))
        #expect(try cache.value(forKey: "b") == bytes("kept b"))
        #expect(try cache.value(forKey: ".hidden") == nil)
        // Imported with a fresh update time: the time of the open, not the file's.
        #expect(try cache.disk.record(forKey: "c")?.updateTime == 1_700_000_100)
        #expect(cache.disk.count == 3)
    }

    @Test func plainFilesTakeTheEntriesExpiry() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let shipped = dir.appending("shipped")
        try writeFiles(["a": "alpha", "r": "read through"], to: shipped)
        let clock = ManualClock(now: 1_700_000_000)
        var options = hybridOptions(dir.appending("cache"), clock: clock)
        var entries = PreloadedEntries(directory: shipped)
        #expect(entries.expiry == .default)
        entries.expiry = .seconds(50)
        options.preloaded = entries
        let cache = try HybridCache(options: options)
        #expect(cache.preloadReport?.imported == ["a", "r"])
        #expect(try cache.disk.record(forKey: "a")?.expiry == .seconds(50))
        // Read through, a plain file is stored on disk with the same expiry.
        var readThrough = hybridOptions(dir.appending("cache2"), clock: clock)
        entries.mode = .readThrough
        readThrough.preloaded = entries
        let other = try HybridCache(options: readThrough)
        #expect(try other.value(forKey: "r") == bytes("read through"))
        #expect(try other.disk.record(forKey: "r")?.expiry == .seconds(50))
        clock.advance(by: 51)
        #expect(try cache.value(forKey: "a", from: .disk) == nil)
    }

    @Test func copyIfMissingImportsRecordsWithTheirTTLAndLockAndSkipsBrokenOnes() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_600_000_000)
        let shipped = dir.appending("shipped")
        do {
            let source = try DiskCache(options: testOptions(shipped, clock: clock))
            try source.store(bytes("one"), forKey: "https://example.com/1", expiry: .seconds(50))
            try source.store(bytes("two"), forKey: "https://example.com/2", locked: true)
            try source.store(bytes("three"), forKey: "present")
            source.close()
        }
        // A broken record: garbage where a record should be.
        try Data("not a record at all, long enough to not be truncated ......................".utf8)
            .write(to: shipped.appendingPathComponent("zz-broken"))
        let cacheDir = dir.appending("cache")
        clock.now = 1_700_000_000
        do {
            let disk = try DiskCache(options: testOptions(cacheDir, clock: clock))
            try disk.store(bytes("mine"), forKey: "present")
            disk.close()
        }
        var options = hybridOptions(cacheDir, clock: clock)
        options.preloaded = PreloadedEntries(directory: shipped, format: .records)
        let cache = try HybridCache(options: options)
        let report = try #require(cache.preloadReport)
        #expect(Set(report.imported) == ["https://example.com/1", "https://example.com/2"])
        #expect(report.alreadyPresent == ["present"])
        #expect(report.failures.count == 1 && report.failures[0].path.hasSuffix("zz-broken"))
        let one = try #require(try cache.disk.record(forKey: "https://example.com/1"))
        #expect(one.expiry == .seconds(50) && one.updateTime == 1_700_000_000 && !one.isLocked)
        #expect(try cache.disk.record(forKey: "https://example.com/2")?.isLocked == true)
        #expect(try cache.value(forKey: "present") == bytes("mine"))
    }

    @Test func readThroughServesMissesFromTheDirectoryAndPromotesThem() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let shipped = dir.appending("shipped")
        try writeFiles(["logo": "png bytes", "other": "o"], to: shipped)
        var options = hybridOptions(dir.appending("cache"))
        options.preloaded = PreloadedEntries(directory: shipped, mode: .readThrough)
        let cache = try HybridCache(options: options)
        #expect(cache.preloadReport?.imported == [])
        #expect(!cache.disk.contains("logo"))  // nothing copied at open
        #expect(try cache.value(forKey: "logo", from: .memory) == nil)
        #expect(try cache.value(forKey: "logo") == bytes("png bytes"))
        #expect(cache.disk.contains("logo"))  // promoted to the cache on the hit
        #expect(cache.memory.value(forKey: "logo") == bytes("png bytes"))
        #expect(!cache.disk.contains("other"))
        #expect(try cache.value(forKey: "../shipped/logo") == nil)  // only names in the directory
        #expect(try cache.value(forKey: "absent") == nil)
        // The cache's own newer value wins over the shipped one.
        try cache.store(bytes("new logo"), forKey: "logo")
        #expect(try cache.value(forKey: "logo", from: .disk) == bytes("new logo"))
        #expect(FileManager.default.contents(atPath: shipped.appendingPathComponent("logo").path) == bytes("png bytes"))
    }

    @Test func readThroughOfRecordsFindsKeysByTheirStoredKey() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let shipped = dir.appending("shipped")
        do {
            let source = try DiskCache(options: testOptions(shipped))
            try source.store(bytes("payload"), forKey: "https://example.com/a.json", expiry: .seconds(3600))
            source.close()
        }
        try Data(repeating: 0x41, count: 100).write(to: shipped.appendingPathComponent("junk"))
        var options = hybridOptions(dir.appending("cache"))
        options.preloaded = PreloadedEntries(directory: shipped, format: .records, mode: .readThrough)
        let cache = try HybridCache(options: options)
        let report = try #require(cache.preloadReport)
        #expect(report.available == ["https://example.com/a.json"])
        #expect(report.failures.count == 1)
        #expect(try cache.value(forKey: "https://example.com/a.json", from: .disk) == bytes("payload"))
        #expect(try cache.disk.record(forKey: "https://example.com/a.json")?.expiry == .seconds(3600))
    }
}
