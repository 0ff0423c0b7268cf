import Foundation
import Testing
@testable import Larder

/// `PreloadedEntries` with CacheHandler's `PreloadedCache` shape, through a `HybridCache`.
@Suite struct HybridCacheHandlerPreloadTests {
    static let now: Double = 1_700_000_000
    static let sixDays: Double = 518_400

    /// A bundle folder as CacheHandler's app would ship it: hashed names, `{"response": ...}`,
    /// and modification dates of the build (long past: preloaded entries never expire by them).
    func makeBundle(_ temp: TemporaryDirectory) throws -> (writer: CacheHandlerFolderWriter, json: [String: Data]) {
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("PreloadedCache"))
        let built = Date(timeIntervalSince1970: 1_500_000_000)
        var json: [String: Data] = [:]
        json["https://example.com/config"] = try writer.write(
            ["theme": "dark", "version": 3], named: SHA256Hash.hex(of: "https://example.com/config"), modified: built
        ).json
        json["https://example.com/countries"] = try writer.write(
            ["fr", "nl"], named: SHA256Hash.hex(of: "https://example.com/countries"), modified: built
        ).json
        json["greeting"] = try writer.write("hello", named: SHA256Hash.hex(of: "greeting"), modified: built).json
        try writer.writeRaw(Data("not json".utf8), named: SHA256Hash.hex(of: "broken"), modified: built)
        try writer.writeRaw(Data(#"{"response": 1}"#.utf8), named: "Info.plist", modified: built)
        try FileManager.default.createDirectory(atPath: writer.path("folder"), withIntermediateDirectories: false)
        return (writer, json)
    }

    @Test func copyIfMissingCopiesEachEntryWithAFreshUpdateTimeAndSixDays() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (bundle, json) = try makeBundle(temp)
        let clock = ManualClock(now: Self.now)
        let cacheDir = temp.appending("cache")
        do {
            // The app already cached its own greeting.
            let disk = try DiskCache(options: testOptions(cacheDir, clock: clock))
            try disk.store(Data(#""hi there""#.utf8), forKey: "greeting")
            disk.close()
        }
        var options = hybridOptions(cacheDir, clock: clock)
        options.preloaded = PreloadedEntries(directory: bundle.folder, format: .cacheHandler)
        #expect(options.preloaded?.expiry == .seconds(Self.sixDays))
        let cache = try HybridCache(options: options)
        defer { cache.close() }
        let report = try #require(cache.preloadReport)
        #expect(
            Set(report.imported) == [SHA256Hash.hex(of: "https://example.com/config"), SHA256Hash.hex(of: "https://example.com/countries")])
        #expect(report.alreadyPresent == [SHA256Hash.hex(of: "greeting")])
        // The broken file and the misnamed one are listed; the folder is ignored.
        #expect(
            Set(report.failures.map { ($0.path as NSString).lastPathComponent }) == [SHA256Hash.hex(of: "broken"), "Info.plist"])
        for key in ["https://example.com/config", "https://example.com/countries"] {
            #expect(try cache.value(forKey: key) == json[key], "\(key)")
            let record = try #require(try cache.disk.record(forKey: key))
            // CacheHandler stamps each copy with the time of the copy.
            #expect(record.updateTime == Self.now)
            #expect(record.expirationTime == Self.now + Self.sixDays)
        }
        #expect(try cache.value(forKey: "greeting") == Data(#""hi there""#.utf8))
        #expect(DiskAudit.indexMismatches(cache.disk).isEmpty)
        cache.close()

        // The next launch copies nothing (the app's greeting lives 600 s, the copies 6 days).
        clock.advance(by: 60)
        let again = try HybridCache(options: options)
        defer { again.close() }
        #expect(again.preloadReport?.imported == [])
        #expect(again.preloadReport?.alreadyPresent.count == 3)
        #expect(again.disk.statistics.insertions == 0)
    }

    struct Feed: Codable, Equatable {
        var items: [Int]
        var title: String
    }

    /// MigratingFromCacheHandler.md's `AppCache`, with its folders in a temporary directory.
    @Test func theMigrationGuidesExampleRuns() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let caches = temp.url
        let url = "https://example.com/feed.json"
        let urlCache = try CacheHandlerFolderWriter(folder: caches.appendingPathComponent("URLCache"))
        try urlCache.write(["items": [1, 2], "title": "News"], named: SHA256Hash.hex(of: url), modified: Date())
        let (bundle, json) = try makeBundle(temp)

        var options = HybridCacheOptions(directory: caches.appendingPathComponent("Larder"))
        options.memory.countLimit = 200
        options.disk.sizeLimit = 100 << 20
        options.disk.defaultExpiration = 6 * 24 * 60 * 60
        options.preloaded = PreloadedEntries(directory: bundle.folder, format: .cacheHandler)
        let cache = try HybridCache(options: options)
        defer { cache.close() }
        let old = caches.appendingPathComponent("URLCache")
        let report = try #require(try? cache.disk.importCacheHandlerFolder(at: old))
        #expect(report.imported == [SHA256Hash.hex(of: url)])
        try FileManager.default.removeItem(at: old)

        #expect(try cache.value(Feed.self, forKey: url, from: .all) == Feed(items: [1, 2], title: "News"))
        #expect(try cache.value([String].self, forKey: "https://example.com/countries") == ["fr", "nl"])
        #expect(try cache.value(forKey: "greeting") == json["greeting"])
        // The next launch: the folder is gone, the import throws and changes nothing.
        #expect(throws: CacheError.self) { try cache.disk.importCacheHandlerFolder(at: old) }
        #expect(try cache.value(Feed.self, forKey: url) == Feed(items: [1, 2], title: "News"))
    }

    @Test func copyIfMissingTakesTheExpiryGivenAndRefusesAnInvalidOne() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (bundle, _) = try makeBundle(temp)
        let clock = ManualClock(now: Self.now)
        var entries = PreloadedEntries(directory: bundle.folder, format: .cacheHandler)
        entries.expiry = .default
        var options = hybridOptions(temp.appending("cache"), clock: clock)
        options.preloaded = entries
        let cache = try HybridCache(options: options)
        defer { cache.close() }
        #expect(try cache.disk.record(forKey: "greeting")?.expiry == .default)

        entries.expiry = .seconds(0)
        var invalid = hybridOptions(temp.appending("cache2"), clock: clock)
        invalid.preloaded = entries
        let refused = try HybridCache(options: invalid)
        defer { refused.close() }
        #expect(refused.preloadReport?.imported == [])
        #expect(refused.preloadReport?.failures.count == 1)
        #expect(refused.preloadReport?.failures.first?.reason.contains("expiry") == true)
        #expect(refused.disk.count == 0)
    }

    @Test func copyIfMissingNeedsSha256KeysOnDisk() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (bundle, _) = try makeBundle(temp)
        var options = hybridOptions(temp.appending("cache"), encoding: .verbatim)
        options.preloaded = PreloadedEntries(directory: bundle.folder, format: .cacheHandler)
        let cache = try HybridCache(options: options)
        defer { cache.close() }
        let report = try #require(cache.preloadReport)
        #expect(report.imported.isEmpty)
        #expect(report.failures.count == 1)
        #expect(report.failures.first?.reason.contains("sha256") == true)
        #expect(cache.disk.count == 0)
    }

    @Test func readThroughFindsAnEntryByItsKeysHash() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (bundle, json) = try makeBundle(temp)
        let clock = ManualClock(now: Self.now)
        // Read through works whatever the disk's key encoding: the hit is stored under its key.
        for (encoding, key) in [(KeyEncoding.sha256, "https://example.com/config"), (.verbatim, "greeting")] {
            var options = hybridOptions(temp.appending("cache-\(encoding)"), clock: clock, encoding: encoding)
            options.preloaded = PreloadedEntries(directory: bundle.folder, format: .cacheHandler, mode: .readThrough)
            let cache = try HybridCache(options: options)
            defer { cache.close() }
            #expect(cache.disk.count == 0)  // nothing copied at open
            #expect(try cache.value(forKey: key, from: .all) == json[key])
            #expect(cache.statistics.preloadedHits == 1)
            let record = try #require(try cache.disk.record(forKey: key))
            #expect(record.data == json[key])
            #expect(record.expirationTime == Self.now + Self.sixDays)
            #expect(try cache.disk.keys() == [key])
            #expect(try cache.value(forKey: "broken") == nil)
            #expect(try cache.value(forKey: "absent") == nil)
            #expect(cache.statistics.preloadedHits == 1)
        }
    }
}
