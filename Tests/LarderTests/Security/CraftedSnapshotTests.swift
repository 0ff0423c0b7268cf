import Foundation
import Testing
@testable import Larder

/// Attack 5 and the snapshot half of attack 9: a `.larder-index` with a `diskSize` near
/// `Int.max` trapped on overflow at open; key-to-name pairs were trusted, so a load of one key
/// returned another file's payload; a 2 GiB sparse snapshot cost every open 2 GiB.
@Suite struct CraftedSnapshotTests {
    static func writeSnapshot(_ entries: [IndexEntry], in root: String) {
        _ = FileManager.default.createFile(atPath: root + "/.larder-index", contents: Data(IndexSnapshot.encode(entries)))
    }

    @Test(arguments: [Int.max, Int.max / 2, 1 << 51])
    func hugeSizesAreNotTrusted(size: Int) throws {
        let fixture = HostileFixture("larder-snapshot")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        for key in ["a1", "b2", "c3"] { try cache.store(Data(key.utf8), forKey: key) }
        cache.close()
        let real = try DiskCache(options: fixture.options(readOnly: true)).totalSize
        Self.writeSnapshot(
            ["a1", "b2", "c3"].map {
                IndexEntry(name: $0, key: $0, diskSize: size, updateTime: .max, lastAccessMs: .max, ttl: .max, lockCount: .max)
            }, in: fixture.root)
        for readOnly in [true, false] {
            let reopened = try DiskCache(options: fixture.options(readOnly: readOnly))
            #expect(reopened.count == 3)
            #expect(reopened.totalSize == real, "the snapshot's sizes were trusted")
            #expect(try reopened.record(forKey: "b2")?.data == Data("b2".utf8))
            reopened.close()
            Self.writeSnapshot(
                ["a1"].map {
                    IndexEntry(name: $0, key: $0, diskSize: size, updateTime: 1, lastAccessMs: 1, ttl: 1, lockCount: 0)
                }, in: fixture.root)
        }
    }

    /// Entries within the per-entry bound whose sum would overflow the index's totals.
    @Test func sizesAreSummedWithCheckedArithmetic() {
        let entry = IndexEntry(
            name: "n", key: nil, diskSize: Int(IndexSnapshot.maximumEntrySize), updateTime: 0, lastAccessMs: 0, ttl: 0, lockCount: 0)
        let fits = Array(repeating: entry, count: 4096)
        #expect(IndexSnapshot.decode(IndexSnapshot.encode(fits))?.count == 4096)
        #expect(IndexSnapshot.decode(IndexSnapshot.encode(fits + [entry])) == nil)
        let over = IndexEntry(
            name: "n", key: nil, diskSize: Int(IndexSnapshot.maximumEntrySize) + 1, updateTime: 0, lastAccessMs: 0, ttl: 0, lockCount: 0)
        #expect(IndexSnapshot.decode(IndexSnapshot.encode([over])) == nil)
    }

    @Test(arguments: [KeyEncoding.verbatim, .sha256])
    func spoofedKeyToNamePairsAreDropped(encoding: KeyEncoding) throws {
        let fixture = HostileFixture("larder-snapshot")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options(encoding))
        try cache.store(Data("someone else's payload".utf8), forKey: "other")
        cache.close()
        let name = try encoding.fileName(for: "other")
        Self.writeSnapshot(
            [
                IndexEntry(name: name, key: "zz-login", diskSize: 4096, updateTime: 1_700_000_000, lastAccessMs: 0, ttl: 0, lockCount: 0)
            ], in: fixture.root)
        let reopened = try DiskCache(options: fixture.options(encoding))
        #expect(try reopened.record(forKey: "zz-login") == nil, "one key answered with another key's file")
        #expect(try reopened.keys(withPrefix: "") == ["other"])
        #expect(try reopened.record(forKey: "other")?.data == Data("someone else's payload".utf8))
        // Decoding alone: the pair is dropped, a true pair kept.
        let bytes = IndexSnapshot.encode([
            IndexEntry(name: name, key: "zz-login", diskSize: 1, updateTime: 0, lastAccessMs: 0, ttl: 0, lockCount: 0),
            IndexEntry(name: name, key: "other", diskSize: 1, updateTime: 0, lastAccessMs: 0, ttl: 0, lockCount: 0),
        ])
        #expect(IndexSnapshot.decode(bytes, keyEncoding: encoding)?.map(\.key) == ["other"])
    }

    /// A snapshot that repeats a name and lists a file that is gone, beside files it does not
    /// list: the index holds each file once, and only the files there are.
    @Test func repeatedNamesAndFilesBesideTheSnapshotAreReconciled() throws {
        let fixture = HostileFixture("larder-snapshot")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        for key in ["a1", "b2", "c3", "d4"] { try cache.store(Data(key.utf8), forKey: key) }
        cache.close()
        let entry = { (name: String) in
            IndexEntry(name: name, key: name, diskSize: 4096, updateTime: 1_700_000_000, lastAccessMs: 0, ttl: 0, lockCount: 0)
        }
        Self.writeSnapshot([entry("a1"), entry("a1"), entry("a1"), entry("zz-gone"), entry("b2")], in: fixture.root)
        for readOnly in [true, false] {
            let reopened = try DiskCache(options: fixture.options(readOnly: readOnly))
            #expect(try reopened.keys(withPrefix: "", includingExpired: true).sorted() == ["a1", "b2", "c3", "d4"])
            #expect(reopened.count == 4)
            for key in ["a1", "b2", "c3", "d4"] { #expect(try reopened.record(forKey: key)?.data == Data(key.utf8)) }
            #expect(try reopened.record(forKey: "zz-gone") == nil)
            reopened.state.withLock { $0.index._checkInvariants() }
            reopened.close()
            Self.writeSnapshot([entry("a1"), entry("a1"), entry("a1"), entry("zz-gone"), entry("b2")], in: fixture.root)
        }
    }

    @Test func sparseSnapshotIsNotRead() throws {
        let fixture = HostileFixture("larder-snapshot")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data("x".utf8), forKey: "k")
        cache.close()
        // 2 GiB of holes behind a valid magic.
        #expect(HostileFiles.makeSparse(fixture.root + "/.larder-index", prefix: Array("LRDX".utf8), length: 1 << 31))
        for readOnly in [true, false] {
            let counter = ReadCounter()
            let reopened = try DiskCache(options: fixture.options(readOnly: readOnly), systemCalls: counter.calls)
            #expect(reopened.count == 1)
            #expect(counter.bytes < 1 << 20, "read \(counter.bytes) bytes of a sparse snapshot")
            reopened.close()
            if readOnly { #expect(HostileFiles.makeSparse(fixture.root + "/.larder-index", prefix: [], length: 1 << 31)) }
        }
    }
}
