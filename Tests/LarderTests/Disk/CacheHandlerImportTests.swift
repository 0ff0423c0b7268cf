#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import Larder

/// `DiskCache.importCacheHandlerFolder(at:)` on folders written the way CacheHandler writes them.
@Suite struct CacheHandlerImportTests {
    static let now: Double = 1_700_000_000
    static let sixDays: Double = 518_400

    /// One entry CacheHandler would have written.
    struct Written {
        var key: String
        var response: Any
        var json: Data
        var modificationTime: Double
        var name: String { SHA256Hash.hex(of: key) }
    }

    /// A CacheHandler folder with live entries of every JSON kind, one expired entry, and one of
    /// each thing that is not an entry.
    struct Folder {
        var writer: CacheHandlerFolderWriter
        var live: [Written] = []
        var expired: Written
        /// File names that must be skipped, with the reason.
        var bad: [String: CacheHandlerImportReport.SkipReason] = [:]
        /// A key whose name is a link to a valid entry outside the folder.
        var linkedKey = "https://example.com/linked"
    }

    /// A JSON value's text with sorted keys, to compare values whatever their types on this platform.
    func canonicalJSON(_ value: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["v": value], options: [.sortedKeys])
    }

    func makeFolder(_ temp: TemporaryDirectory) throws -> Folder {
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let responses: [(String, Any)] = [
            ("https://example.com/feed.json", ["items": [["id": 1, "title": "Hello"], ["id": 2, "title": "Wörld"]], "next": NSNull()]),
            ("https://example.com/name", "a string, with \"quotes\" and / slashes"),
            ("https://example.com/count", 42),
            ("https://example.com/ratio", 0.1),
            ("https://example.com/list", [1, "two", 3.5, true, NSNull()] as [Any]),
            ("emoji 🥕 key", ["🥕": "carrot"]),
            ("", "the empty key"),
        ]
        var live: [Written] = []
        for (i, (key, response)) in responses.enumerated() {
            // Fractional seconds, oldest first in reverse order of writing, all within 6 days.
            let modified = Self.now - Double(i + 1) * 3600 - 0.75
            let name = SHA256Hash.hex(of: key)
            let (json, time) = try writer.write(response, named: name, modified: Date(timeIntervalSince1970: modified))
            live.append(Written(key: key, response: response, json: json, modificationTime: time))
        }
        let expiredKey = "https://example.com/stale"
        let (expiredJSON, expiredTime) = try writer.write(
            ["old": true], named: SHA256Hash.hex(of: expiredKey), modified: Date(timeIntervalSince1970: Self.now - Self.sixDays - 2))
        var folder = Folder(
            writer: writer, live: live,
            expired: Written(key: expiredKey, response: ["old": true], json: expiredJSON, modificationTime: expiredTime))
        let recent = Date(timeIntervalSince1970: Self.now - 60)

        let notJSON = SHA256Hash.hex(of: "not json")
        try writer.writeRaw(Data("<html>not json</html>".utf8), named: notJSON, modified: recent)
        folder.bad[notJSON] = .notJSON
        let noResponse = SHA256Hash.hex(of: "no response")
        try writer.writeRaw(Data(#"{"data": {"response": 1}}"#.utf8), named: noResponse, modified: recent)
        folder.bad[noResponse] = .noResponse
        let array = SHA256Hash.hex(of: "top-level array")
        try writer.writeRaw(Data(#"[{"response": 1}]"#.utf8), named: array, modified: recent)
        folder.bad[array] = .noResponse
        let truncated = SHA256Hash.hex(of: "truncated")
        try writer.writeRaw(Data(#"{"response": [1, 2"#.utf8), named: truncated, modified: recent)
        folder.bad[truncated] = .notJSON
        try writer.writeRaw(Data(#"{"response": 1}"#.utf8), named: "README.md", modified: recent)
        folder.bad["README.md"] = .notAHashedName
        let upper = SHA256Hash.hex(of: "upper").uppercased()
        try writer.writeRaw(Data(#"{"response": 1}"#.utf8), named: upper, modified: recent)
        folder.bad[upper] = .notAHashedName
        try FileManager.default.createDirectory(atPath: writer.path("subfolder"), withIntermediateDirectories: false)
        try writer.writeRaw(Data(#"{"response": 1}"#.utf8), named: "subfolder/" + SHA256Hash.hex(of: "nested"), modified: recent)
        folder.bad["subfolder"] = .folder
        // A link, named like an entry, to a valid CacheHandler file outside the folder.
        let outside = try CacheHandlerFolderWriter(folder: temp.appending("outside"))
        try outside.write("secret", named: "target", modified: recent)
        let linkName = SHA256Hash.hex(of: folder.linkedKey)
        #expect(HostileFiles.symlink(outside.path("target"), at: writer.path(linkName)))
        folder.bad[linkName] = .symbolicLink
        let fifo = SHA256Hash.hex(of: "fifo")
        #expect(HostileFiles.mkfifo(writer.path(fifo)))
        folder.bad[fifo] = .notARegularFile
        // Hidden files are neither imported nor reported.
        try writer.writeRaw(Data(#"{"response": 1}"#.utf8), named: ".DS_Store", modified: recent)
        try writer.writeRaw(Data(#"{"response": 1}"#.utf8), named: "." + SHA256Hash.hex(of: "hidden"), modified: recent)
        return folder
    }

    @Test func importsEveryEntryUnderItsOriginalKeyAndReportsTheRest() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let folder = try makeFolder(temp)
        let clock = ManualClock(now: Self.now)
        let cache = try DiskCache(options: testOptions(temp.appending("cache"), clock: clock))
        defer { cache.close() }

        let report = try cache.importCacheHandlerFolder(at: folder.writer.folder)

        // Oldest modification time first.
        let byAge = folder.live.sorted { $0.modificationTime < $1.modificationTime }
        #expect(report.imported == byAge.map(\.name))
        var expectedSkips = folder.bad
        expectedSkips[folder.expired.name] = .expired(at: floor(folder.expired.modificationTime) + Self.sixDays)
        #expect(Dictionary(uniqueKeysWithValues: report.skipped.map { ($0.name, $0.reason) }) == expectedSkips)
        #expect(report.skipped.count == expectedSkips.count)
        #expect(cache.statistics.insertions == folder.live.count)
        #expect(DiskAudit.indexMismatches(cache).isEmpty, "\(DiskAudit.indexMismatches(cache))")
        // Imported records store no key until read by it: the index lists their file names.
        #expect(Set(try cache.keys()) == Set(folder.live.map(\.name)))

        for entry in folder.live {
            let record = try #require(try cache.record(forKey: entry.key), "\(entry.key)")
            // The exact JSON CacheHandler wrote, which parses back to the response.
            #expect(record.data == entry.json, "\(entry.key)")
            let parsed = try JSONSerialization.jsonObject(with: record.data, options: .fragmentsAllowed)
            #expect(try canonicalJSON(parsed) == canonicalJSON(entry.response), "\(entry.key)")
            #expect(record.updateTime == floor(entry.modificationTime))
            #expect(record.expirationTime == floor(entry.modificationTime) + Self.sixDays)
            #expect(record.expiry == .seconds(Self.sixDays))
            #expect(record.lockCount == 0)
        }
        // Read once by key, each record's key is known.
        #expect(Set(try cache.keys()) == Set(folder.live.map(\.key)))
        #expect(try cache.value(forKey: folder.expired.key) == nil)
        #expect(try cache.value(forKey: folder.linkedKey) == nil)
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
        // Nothing outside the cache's own records was written into it.
        #expect(Set(DiskAudit.recordFiles(in: cache.layout.root).keys) == Set(folder.live.map(\.name)))
        #expect(DiskAudit.strayFiles(in: cache.layout.root).isEmpty)
    }

    @Test func anImportedEntryExpiresSixDaysAfterItsModificationTimeWhateverTheReads() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let key = "https://example.com/a"
        let (json, modified) = try writer.write(
            ["a": 1], named: SHA256Hash.hex(of: key), modified: Date(timeIntervalSince1970: Self.now - 10.5))
        let clock = ManualClock(now: Self.now)
        let cache = try DiskCache(options: testOptions(temp.appending("cache"), clock: clock))
        defer { cache.close() }
        #expect(try cache.importCacheHandlerFolder(at: writer.folder).imported == [SHA256Hash.hex(of: key)])
        let expiry = floor(modified) + Self.sixDays
        // Reads do not extend it (a fixed ttl, as CacheHandler's modification date).
        clock.now = expiry - 1
        #expect(try cache.value(forKey: key) == json)
        clock.now = expiry + 0.9
        #expect(try cache.value(forKey: key) == json)
        clock.now = expiry + 1
        #expect(try cache.value(forKey: key) == nil)
        #expect(cache.statistics.expirations == 1)
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
    }

    @Test func recordsAlreadyInTheCacheAreKeptAndASecondImportAddsNothing() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let modified = Date(timeIntervalSince1970: Self.now - 100)
        try writer.write("old a", named: SHA256Hash.hex(of: "a"), modified: modified)
        try writer.write("old b", named: SHA256Hash.hex(of: "b"), modified: modified)
        try writer.write("old c", named: SHA256Hash.hex(of: "c"), modified: modified)
        let clock = ManualClock(now: Self.now)
        let cache = try DiskCache(options: testOptions(temp.appending("cache"), clock: clock))
        defer { cache.close() }
        try cache.store(Data("new a".utf8), forKey: "a")
        // An expired record is not "present": the import replaces it.
        try cache.store(Data("stale c".utf8), forKey: "c", expiry: .seconds(1))
        clock.advance(by: 5)

        let first = try cache.importCacheHandlerFolder(at: writer.folder)
        #expect(Set(first.imported) == [SHA256Hash.hex(of: "b"), SHA256Hash.hex(of: "c")])
        #expect(first.skipped == [.init(name: SHA256Hash.hex(of: "a"), reason: .alreadyPresent)])
        #expect(try cache.value(forKey: "a") == Data("new a".utf8))
        #expect(try cache.value(forKey: "b") == Data(#""old b""#.utf8))
        #expect(try cache.value(forKey: "c") == Data(#""old c""#.utf8))

        let insertions = cache.statistics.insertions
        let second = try cache.importCacheHandlerFolder(at: writer.folder)
        #expect(second.imported.isEmpty)
        #expect(second.skipped.map(\.reason) == [.alreadyPresent, .alreadyPresent, .alreadyPresent])
        #expect(cache.statistics.insertions == insertions)
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
    }

    @Test func importedRecordsSurviveAReopenWithAndWithoutTheSnapshot() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let folder = try makeFolder(temp)
        let clock = ManualClock(now: Self.now)
        let dir = temp.appending("cache")
        do {
            let cache = try DiskCache(options: testOptions(dir, clock: clock))
            _ = try cache.importCacheHandlerFolder(at: folder.writer.folder)
            cache.close()  // writes the snapshot
        }
        for withSnapshot in [true, false] {
            if !withSnapshot { try? FileManager.default.removeItem(at: dir.appendingPathComponent(DiskLayout.snapshotName)) }
            let cache = try DiskCache(options: testOptions(dir, clock: clock))
            defer { cache.close() }
            #expect(cache.count == folder.live.count, "snapshot: \(withSnapshot)")
            for entry in folder.live {
                #expect(try cache.value(forKey: entry.key) == entry.json, "\(entry.key), snapshot: \(withSnapshot)")
            }
            #expect(DiskAudit.indexMismatches(cache).isEmpty)
        }
    }

    @Test func theLimitsApplyAfterEachImportedEntry() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        for i in 0 ..< 5 {
            try writer.write(
                "value \(i)", named: SHA256Hash.hex(of: "k\(i)"), modified: Date(timeIntervalSince1970: Self.now - 100 + Double(i)))
        }
        var options = testOptions(temp.appending("cache"), clock: ManualClock(now: Self.now))
        options.countLimit = 3
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        // Limits apply once the index is complete (as after any store).
        cache.waitForIndex()
        let report = try cache.importCacheHandlerFolder(at: writer.folder)
        #expect(report.imported.count == 5)
        // Imported oldest first, so the two oldest entries are the ones trimmed.
        #expect(Set(try cache.keys()) == Set((2 ..< 5).map { SHA256Hash.hex(of: "k\($0)") }))
        #expect(cache.statistics.evictions[.countLimit] == 2)
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
    }

    @Test func filesAboveTheMaximumRecordSizeAreNotRead() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let recent = Date(timeIntervalSince1970: Self.now - 60)
        try writer.write(String(repeating: "x", count: 100), named: SHA256Hash.hex(of: "fits"), modified: recent)
        let (bigJSON, _) = try writer.write(String(repeating: "x", count: 300), named: SHA256Hash.hex(of: "big"), modified: recent)
        // A small response in a file longer than the limit and the wrapper's allowance together.
        let padded = Data(#"{"response":"#.utf8) + Data(repeating: 0x20, count: 4300) + Data(#""xx"}"#.utf8)
        try writer.writeRaw(padded, named: SHA256Hash.hex(of: "padded"), modified: recent)
        // A sparse file claiming 64 MiB: refused unread, whatever the limit.
        let sparse = SHA256Hash.hex(of: "sparse")
        #expect(HostileFiles.makeSparse(writer.path(sparse), prefix: Array(#"{"response":"#.utf8), length: 64 << 20))
        _ = try writer.setModified(sparse, recent)
        var options = testOptions(temp.appending("cache"), clock: ManualClock(now: Self.now))
        options.maximumRecordSize = 200
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        let report = try cache.importCacheHandlerFolder(at: writer.folder)
        #expect(report.imported == [SHA256Hash.hex(of: "fits")])
        let reasons = Dictionary(uniqueKeysWithValues: report.skipped.map { ($0.name, $0.reason) })
        #expect(reasons[SHA256Hash.hex(of: "big")] == .tooLarge(bytes: bigJSON.count))
        #expect(reasons[SHA256Hash.hex(of: "padded")] == .tooLarge(bytes: padded.count))
        #expect(reasons[sparse] == .tooLarge(bytes: 64 << 20))
    }

    @Test func aResponseOverTheLimitInsideAnAllowedFileIsRefused() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        // 150 bytes of response in a file under 200 + the wrapper allowance.
        let response = "\"" + String(repeating: "y", count: 148) + "\""
        try writer.writeRaw(
            Data(("{\"response\": " + response + "}").utf8), named: SHA256Hash.hex(of: "k"), modified: Date(timeIntervalSince1970: Self.now)
        )
        var options = testOptions(temp.appending("cache"), clock: ManualClock(now: Self.now))
        options.maximumRecordSize = 100
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        let report = try cache.importCacheHandlerFolder(at: writer.folder)
        #expect(report.imported.isEmpty)
        #expect(report.skipped == [.init(name: SHA256Hash.hex(of: "k"), reason: .tooLarge(bytes: 150))])
        #expect(cache.count == 0)
    }

    @Test(arguments: [KeyEncoding.verbatim, .custom(name: "upper", encode: { $0.uppercased() })])
    func cachesWithOtherKeyEncodingsAreRefused(encoding: KeyEncoding) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        try writer.write("v", named: SHA256Hash.hex(of: "k"), modified: Date(timeIntervalSince1970: Self.now))
        let cache = try DiskCache(options: testOptions(temp.appending("cache"), encoding: encoding))
        defer { cache.close() }
        let error = #expect(throws: CacheError.self) { try cache.importCacheHandlerFolder(at: writer.folder) }
        #expect(error?.code == .keyEncodingMismatch)
        #expect(error?.message.contains("sha256") == true)
        #expect(cache.count == 0)
    }

    @Test func aMissingFolderAReadOnlyCacheAndAClosedCacheThrow() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let dir = temp.appending("cache")
        let cache = try DiskCache(options: testOptions(dir))
        let missing = #expect(throws: CacheError.self) { try cache.importCacheHandlerFolder(at: temp.appending("nowhere")) }
        #expect(missing?.code == .notFound)
        let file = #expect(throws: CacheError.self) { try cache.importCacheHandlerFolder(at: temp.appending("cache/.larder")) }
        #expect(file?.code == .ioFailure)
        cache.close()
        #expect(throws: CacheError.self) { try cache.importCacheHandlerFolder(at: writer.folder) }
        var readOnly = testOptions(dir)
        readOnly.isReadOnly = true
        let reader = try DiskCache(options: readOnly)
        defer { reader.close() }
        let refused = #expect(throws: CacheError.self) { try reader.importCacheHandlerFolder(at: writer.folder) }
        #expect(refused?.code == .readOnly)
    }

    @Test func aFailedWriteStopsTheImportAndLeavesTheCacheConsistent() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        for i in 0 ..< 5 {
            try writer.write(
                ["n": i], named: SHA256Hash.hex(of: "k\(i)"), modified: Date(timeIntervalSince1970: Self.now - 100 + Double(i)))
        }
        let injector = FaultInjector()
        let cache = try DiskCache(
            options: testOptions(temp.appending("cache"), clock: ManualClock(now: Self.now)), systemCalls: injector.calls)
        defer { cache.close() }
        cache.waitForIndex()
        injector.arm(.write, nth: 3, .fail(EIO), persistent: true)
        let error = #expect(throws: CacheError.self) { try cache.importCacheHandlerFolder(at: writer.folder) }
        #expect(error?.code == .ioFailure)
        // The two oldest were imported before the failure; no temporary file is left.
        #expect(try cache.value(forKey: "k0") == Data(#"{"n":0}"#.utf8))
        #expect(try cache.value(forKey: "k1") == Data(#"{"n":1}"#.utf8))
        #expect(try cache.value(forKey: "k2") == nil)
        #expect(DiskAudit.indexMismatches(cache).isEmpty, "\(DiskAudit.indexMismatches(cache))")
        #expect(DiskAudit.strayFiles(in: cache.layout.root).isEmpty)
        injector.disarm()
        let rest = try cache.importCacheHandlerFolder(at: writer.folder)
        #expect(rest.imported == (2 ..< 5).map { SHA256Hash.hex(of: "k\($0)") })
        #expect(rest.skipped.map(\.reason) == [.alreadyPresent, .alreadyPresent])
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
    }

    @Test func anImportRacingStoresAndReadsOfTheSameKeysKeepsTheIndexExact() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let keys = (0 ..< 64).map { "https://example.com/\($0)" }
        var imported: [String: Data] = [:]
        for (i, key) in keys.enumerated() {
            imported[key] = try writer.write(["i": i], named: SHA256Hash.hex(of: key), modified: Date(timeIntervalSince1970: Self.now - 60))
                .json
        }
        let cache = try DiskCache(options: testOptions(temp.appending("cache"), clock: ManualClock(now: Self.now)))
        defer { cache.close() }
        let stored = Data("stored by the app".utf8)
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            switch worker {
            case 0:
                _ = try? cache.importCacheHandlerFolder(at: writer.folder)
            case 1:
                for key in keys where key.hasSuffix("0") || key.hasSuffix("5") { try? cache.store(stored, forKey: key) }
            default:
                for key in keys.reversed() { _ = try? cache.value(forKey: key) }
            }
        }
        // Each key holds the app's value or CacheHandler's, never anything else.
        for key in keys {
            let value = try cache.value(forKey: key)
            #expect(value == imported[key] || (value == stored && (key.hasSuffix("0") || key.hasSuffix("5"))), "\(key)")
        }
        #expect(cache.count == keys.count)
        #expect(DiskAudit.indexMismatches(cache).isEmpty, "\(DiskAudit.indexMismatches(cache))")
        #expect(DiskAudit.strayFiles(in: cache.layout.root).isEmpty)
    }

    @Test func theAsyncTwinImportsOnTheCachesQueue() async throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let (json, _) = try writer.write([1, 2, 3], named: SHA256Hash.hex(of: "k"), modified: Date(timeIntervalSince1970: Self.now - 1))
        let cache = try DiskCache(options: testOptions(temp.appending("cache")))
        defer { cache.close() }
        let report = try await cache.importCacheHandlerFolder(at: writer.folder)
        #expect(report.imported == [SHA256Hash.hex(of: "k")])
        #expect(try await cache.value(forKey: "k") == json)
    }
}
