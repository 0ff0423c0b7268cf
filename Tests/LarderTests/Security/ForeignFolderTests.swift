#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

@testable import Larder

/// A cache never changes a folder that is not a cache, and never removes a file it did not
/// write: writers refuse a folder of other files (``CacheError/Code/notACache``), and in a cache,
/// files that are not records (no record magic, not where the layout puts a record) are foreign:
/// open, reads, collection, trimming and `removeAll` leave them.
@Suite struct ForeignFolderTests {
    /// A folder of documents: `thesis.txt`, `ab` (named like a shard folder), `sub/notes.md`.
    static func makeDocuments(at root: String) {
        try? FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        chmod(root, 0o700)
        for (name, text) in [("thesis.txt", "chapter one"), ("ab", "x"), ("sub/notes.md", "# notes")] {
            _ = FileManager.default.createFile(atPath: root + "/" + name, contents: Data(text.utf8))
        }
    }

    /// A copy of the SPT fixture (sharded, verbatim keys, no metadata), writable and private.
    static func copySPTFixture(to root: String) throws {
        try FileManager.default.copyItem(atPath: Fixtures.root.appendingPathComponent("spt-cache").path, toPath: root)
        chmod(root, 0o700)
        for case let entry as String in FileManager.default.enumerator(atPath: root)! {
            chmod(root + "/" + entry, entry.contains("/") ? 0o600 : 0o700)
        }
    }

    static func options(_ root: String, _ configure: (inout DiskCacheOptions) -> Void = { _ in }) -> DiskCacheOptions {
        var options = DiskCacheOptions(directory: URL(fileURLWithPath: root, isDirectory: true))
        configure(&options)
        return options
    }

    /// Expects `body` to throw ``CacheError/Code/notACache`` naming `root`.
    static func expectRefused(_ root: String, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("the folder was opened for writing", sourceLocation: sourceLocation)
        } catch let error as CacheError {
            #expect(error.code == .notACache, sourceLocation: sourceLocation)
            #expect(error.path == root, sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func writersRefuseAFolderOfDocumentsAndCreateNothing() throws {
        let temp = TemporaryDirectory("larder-foreign")
        defer { temp.remove() }
        let root = temp.path("docs")
        Self.makeDocuments(at: root)
        let before = SentinelTree.fingerprint(of: root)
        Self.expectRefused(root) { _ = try DiskCache(options: Self.options(root)) }
        Self.expectRefused(root) { _ = try DiskCache(options: .spt(directory: URL(fileURLWithPath: root))) }
        Self.expectRefused(root) {
            _ = try DiskCache(
                options: Self.options(root) {
                    $0.keyEncoding = .verbatim
                    $0.layout = .flat
                })
        }
        Self.expectRefused(root) { _ = try HybridCache(options: HybridCacheOptions(directory: URL(fileURLWithPath: root))) }
        #expect(SentinelTree.fingerprint(of: root) == before)
        #expect(!FileManager.default.fileExists(atPath: root + "/.larder.lock"))

        // Read-only, it opens (it changes nothing) and sees no record.
        let reader = try DiskCache(
            options: Self.options(root) {
                $0.isReadOnly = true
                $0.keyEncoding = .verbatim
            })
        #expect(reader.count == 0)
        #expect(try reader.value(forKey: "thesis.txt") == nil)
        reader.close()
        #expect(SentinelTree.fingerprint(of: root) == before)
    }

    @Test func aCopyOfASystemFolderIsRefused() throws {
        let temp = TemporaryDirectory("larder-foreign")
        defer { temp.remove() }
        let root = temp.path("etc")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, 0o700)
        // The top-level regular files of /etc, copied (never touched there).
        #expect(SentinelTree.copyTopLevelFiles(of: "/etc", into: root) > 5)
        let before = SentinelTree.fingerprint(of: root)
        Self.expectRefused(root) { _ = try DiskCache(options: Self.options(root)) }
        Self.expectRefused(root) { _ = try DiskCache(options: .spt(directory: URL(fileURLWithPath: root))) }
        #expect(SentinelTree.fingerprint(of: root) == before)
    }

    @Test func emptyAndMissingFoldersStillOpen() throws {
        let temp = TemporaryDirectory("larder-foreign")
        defer { temp.remove() }
        let empty = temp.path("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        chmod(empty, 0o700)
        for root in [empty, temp.path("missing/deeper")] {
            let cache = try DiskCache(options: Self.options(root))
            try cache.store(Data("v".utf8), forKey: "k")
            cache.close()
            // Reopened: a Larder cache now, by its metadata.
            let again = try DiskCache(options: Self.options(root))
            #expect(try again.value(forKey: "k") == Data("v".utf8))
            again.close()
        }
    }

    @Test func anAdoptedFolderKeepsItsFilesThroughCollectionTrimAndRemoveAll() throws {
        let temp = TemporaryDirectory("larder-foreign")
        defer { temp.remove() }
        let root = temp.path("docs")
        Self.makeDocuments(at: root)
        let documents = SentinelTree.fingerprint(of: root).filter { !$0.key.isEmpty }
        let cache = try DiskCache(
            options: Self.options(root) {
                $0.adoptsForeignFolder = true
                $0.keyEncoding = .verbatim
                $0.layout = .flat
                $0.countLimit = 1
            })
        try cache.store(Data("1".utf8), forKey: "one")
        try cache.store(Data("2".utf8), forKey: "two")  // trims "one"
        #expect(try cache.value(forKey: "thesis.txt") == nil)
        #expect(try cache.lock(forKeys: ["thesis.txt", "ab"]).isEmpty)
        #expect(try cache.remove(forKey: "thesis.txt") == false)
        try cache.collectGarbage()
        try cache.removeAll()
        #expect(cache.count == 0)
        cache.close()
        let after = SentinelTree.fingerprint(of: root)
        for (path, print) in documents { #expect(after[path] == print, "\(path)") }
        #expect(after["one"] == nil && after["two"] == nil)
    }

    /// The SPT fixture with stray files: a document at the root, files without the record magic
    /// in a shard folder (one under a record's name, one where no record goes), an empty file
    /// and a link. They survive an open, collection, trimming, `removeAll` and reads.
    @Test func strayFilesInAnSPTCacheSurviveEveryRemoval() throws {
        let temp = TemporaryDirectory("larder-foreign")
        defer { temp.remove() }
        let root = temp.path("spt")
        try Self.copySPTFixture(to: root)
        let strays = ["thesis.txt", "aa/aastray-notes", "aa/zz-elsewhere", "aa/aaempty", "sub/notes.md"]
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        for stray in strays {
            _ = FileManager.default.createFile(atPath: root + "/" + stray, contents: Data(stray == "aa/aaempty" ? [] : Array("mine".utf8)))
        }
        #expect(symlink("/etc/hostname", root + "/aa/aalink") == 0)
        let before = SentinelTree.fingerprint(of: root)
        var options = DiskCacheOptions.spt(directory: URL(fileURLWithPath: root))
        options.countLimit = 2
        let cache = try DiskCache(options: options)
        #expect(try cache.value(forKey: "aastray-notes") == nil)
        #expect(try cache.remove(forKey: "aaempty") == false)
        try cache.collectGarbage()
        try cache.removeAll()
        #expect(cache.count == 0)
        cache.close()
        let after = SentinelTree.fingerprint(of: root)
        for stray in strays + ["aa/aalink"] { #expect(after[stray] != nil && after[stray] == before[stray], "\(stray)") }
        // The fixture's record without magic is foreign too; the damaged ones and the records went.
        #expect(after["aa/aad0e75ab0a6828d0a9b37a68198cc9d70d84850"] == before["aa/aad0e75ab0a6828d0a9b37a68198cc9d70d84850"])
        #expect(after["b3/b3e04bf446b486412a13659af71e3a333c6152f4"] == nil)
        #expect(after.keys.count { $0.hasPrefix("f") && $0.count > 3 } == 0)
    }

    @Test func recordReadTellsForeignFromCorrupt() throws {
        let temp = TemporaryDirectory("larder-foreign")
        defer { temp.remove() }
        let io = try FileIO().rooted(at: temp.path(""))
        let records = RecordFile(io: io)
        let header = RecordHeader(ttl: 0, updateTimeSec: 1, payloadSizeBytes: 1, payloadChecksum: CRC32.checksum(of: [7]))
        let cases: [(String, [UInt8], String)] = [
            ("empty", [], "foreign"), ("short", [1, 2], "foreign"), ("text", Array("hello, this is not a record".utf8), "foreign"),
            ("torn", Array(header.encoded().prefix(10)), "corrupt"),
            ("badcrc", header.encoded().enumerated().map { $0 == 20 ? $1 ^ 1 : $1 } + [7], "corrupt"),
            ("good", header.encoded() + [7], "record"),
        ]
        for (name, bytes, expected) in cases {
            _ = FileManager.default.createFile(atPath: temp.path(name), contents: Data(bytes))
            let result = try records.read(temp.path(name), readPayload: false)
            let kind =
                switch result {
                case .foreign: "foreign"
                case .corrupt: "corrupt"
                case .record: "record"
                case .missing: "missing"
                }
            #expect(kind == expected, "\(name)")
        }
    }
}
