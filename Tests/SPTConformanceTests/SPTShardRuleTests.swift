import Foundation
import LarderTestSupport
import Testing

@testable import Larder

/// SPT's shard rule for keys whose first characters are not ASCII: the folder is the key's
/// first two UTF-16 code units (`[key substringToIndex:2]`, SPTPersistentCacheFileManager.m:66),
/// whatever `Character`s they make; a key of one unit sits at the root.
@Suite("SPT shard rule") struct SPTShardRuleTests {
    /// A key and the path SPT gives its record, relative to the cache folder.
    struct Case: Sendable, CustomTestStringConvertible {
        var key: String
        var path: String
        var why: String
        var testDescription: String { why }
    }

    static let cases: [Case] = [
        Case(key: "ab", path: "ab/ab", why: "two ASCII characters"),
        Case(key: "a", path: "a", why: "one unit: at the root"),
        Case(key: "é", path: "é", why: "one precomposed character, one unit: at the root"),
        Case(key: "e\u{301}tude", path: "e\u{301}/e\u{301}tude", why: "a combining mark second: the base and the mark"),
        Case(key: "\u{301}abc", path: "\u{301}a/\u{301}abc", why: "a key that starts with a combining mark"),
        Case(key: "😀smile", path: "😀/😀smile", why: "a non-BMP first character: its surrogate pair"),
        Case(key: "😀", path: "😀/😀", why: "one Character but two units: in a folder, not at the root"),
        Case(key: "🇺🇸flag", path: "🇺/🇺🇸flag", why: "a flag: its first regional indicator"),
        Case(key: "👨‍👩‍👧family", path: "👨/👨‍👩‍👧family", why: "a ZWJ sequence: its first emoji"),
        Case(key: "\u{1100}\u{1161}\u{11A8}x", path: "\u{1100}\u{1161}/\u{1100}\u{1161}\u{11A8}x", why: "decomposed Hangul: two jamo"),
        Case(key: "日本語", path: "日本/日本語", why: "CJK"),
    ]

    /// A BMP character followed by a non-BMP one: two units would split the surrogate pair, and
    /// SPT cannot make that folder; Larder keeps the pair (`DiskLayout.shard(for:)`).
    static let splitPair = Case(key: "é😀x", path: "é😀/é😀x", why: "a BMP character, then a non-BMP one")

    /// SPT's rule, computed from UTF-16 here, gives the expected folder for every case SPT can store.
    @Test(arguments: cases) func theRuleIsSPTs(_ test: Case) {
        // Dropping the leading slash by bytes: with a combining mark after it, it is not a Character.
        let expected = String(SPTPaths.path(root: "", key: test.key).utf8.dropFirst())
        #expect(expected == test.path)
        #expect(DiskLayout.shard(for: test.key).map { $0 + "/" + test.key } ?? test.key == test.path)
    }

    /// Larder stores each key where SPT would (and where SPT would look for it).
    @Test(arguments: cases + [splitPair]) func storedWhereSPTLooks(_ test: Case) async throws {
        let directory = TemporaryDirectory("spt-shard")
        defer { directory.remove() }
        let cache = try DiskCache(options: .spt(directory: directory.url))
        try await cache.store(Data(test.key.utf8), forKey: test.key)
        cache.close()
        #expect(sptFiles(atPath: directory.path) == [test.path])
        #expect(SPTHeader.read(atPath: directory.path + "/" + test.path) != nil)
    }

    /// Records SPT wrote under these keys (byte by byte, no Larder metadata) are found, listed
    /// and read; so is the split-pair key's record after Larder wrote it and reopens the
    /// folder from its files alone.
    @Test func sptWrittenFolderReads() async throws {
        let directory = TemporaryDirectory("spt-shard")
        defer { directory.remove() }
        let folder = SPTFolder(root: directory.path, useDirectorySeparation: true)
        var random = SplitMix64(seed: 7)
        for test in Self.cases {
            try folder.write(
                SPTFolder.Record(key: test.key, payload: Data(test.key.utf8), ttl: 0, refCount: 1, updateTime: 1_700_000_000),
                random: &random)
        }
        #expect(sptFiles(atPath: directory.path) == Self.cases.map(\.path).sorted())
        var options = DiskCacheOptions.spt(directory: directory.url)
        options.clock = ManualClock(now: 1_700_000_000)
        var cache = try DiskCache(options: options)
        #expect(cache.folderLayout == .sharded)
        #expect(Set(try await cache.keys()) == Set(Self.cases.map(\.key)))
        for test in Self.cases { #expect(try await cache.value(forKey: test.key) == Data(test.key.utf8), "\(test.why)") }
        try await cache.store(Data(Self.splitPair.key.utf8), forKey: Self.splitPair.key)
        cache.close()
        // Reopened without the index snapshot: the record is found by listing the folders.
        try FileManager.default.removeItem(atPath: directory.path + "/.larder-index")
        cache = try DiskCache(options: options)
        defer { cache.close() }
        #expect(Set(try await cache.keys()) == Set((Self.cases + [Self.splitPair]).map(\.key)))
        #expect(try await cache.value(forKey: Self.splitPair.key) == Data(Self.splitPair.key.utf8))
    }
}
