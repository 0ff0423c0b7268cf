#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LarderTestSupport
import Testing

@testable import Larder

/// File names are bytes until shown: `ab\xff` and `ab\xfe` are two files, neither of them the
/// record `ab\u{FFFD}` (what both would read as, decoded with repairs), and no layout puts a
/// record under a name that is not UTF-8, so a cache leaves them.
@Suite struct UndecodableNameTests {
    static let ff: [UInt8] = Array("ab".utf8) + [0xFF]
    static let fe: [UInt8] = Array("ab".utf8) + [0xFE]
    /// The key and file name both undecodable names would be read as.
    static let twin = "ab\u{FFFD}"

    @Test func aListingKeepsEveryNameExactly() throws {
        let temp = TemporaryDirectory("larder-names")
        defer { temp.remove() }
        let folder = temp.url.path
        for (name, text) in [(Self.ff, "one"), (Self.fe, "two"), (Array(Self.twin.utf8), "three")] {
            #expect(RawFileNames.createFile(in: folder, named: name, contents: Array(text.utf8)))
        }
        let entries = try FileIO().listDirectory(folder)
        #expect(Set(entries.map(\.fileName)).count == 3)
        #expect(Set(entries.map(\.fileName.bytes)) == [Self.ff, Self.fe, Array(Self.twin.utf8)])
        #expect(entries.filter { $0.name == nil }.map(\.fileName.bytes).sorted { $0.lexicographicallyPrecedes($1) } == [Self.fe, Self.ff])
        #expect(entries.compactMap(\.name) == [Self.twin])
    }

    @Test func fileNamesCompareByTheirBytes() {
        #expect(FileName(bytes: Array("caf\u{E9}".utf8)) == FileName("caf\u{E9}"))
        #expect(FileName(bytes: Array("caf\u{E9}".utf8)).string == "caf\u{E9}")
        #expect(FileName("caf\u{E9}") != FileName("cafe\u{301}"))
        #expect(FileName(bytes: Self.ff) != FileName(bytes: Self.fe))
        #expect(FileName(bytes: Self.ff) != FileName(Self.twin))
        #expect(FileName(bytes: Self.ff).string == nil)
        #expect(Set([FileName(bytes: Self.ff), FileName(bytes: Self.fe), FileName(Self.twin), FileName(bytes: Self.ff)]).count == 3)
        #expect(FileName(bytes: Self.fe) < FileName(bytes: Self.ff))
    }

    /// An unlink by an exact name removes that file alone, never the one its name reads as.
    @Test func anUnlinkByBytesRemovesExactlyThatFile() throws {
        let temp = TemporaryDirectory("larder-names")
        defer { temp.remove() }
        let folder = temp.url.path
        for name in [Self.ff, Self.fe, Array(Self.twin.utf8)] { RawFileNames.createFile(in: folder, named: name, contents: [1]) }
        let io = try FileIO().rooted(at: folder)
        let fd = try io.openDirectory(folder)
        defer { io.close(fd) }
        #expect(try io.lstat(FileName(bytes: Self.ff), inFolder: fd) != nil)
        #expect(try io.unlink(FileName(bytes: Self.ff), inFolder: fd))
        #expect(RawFileNames.names(in: folder) == [Array(Self.twin.utf8), Self.fe])
        #expect(try io.unlink(FileName(bytes: Self.ff), inFolder: fd) == false)
        // A name with a slash is more than one component, whatever its other bytes.
        #expect(throws: Errno.escapesRoot) { try io.unlink(FileName(bytes: Array("x/".utf8) + [0xFF]), inFolder: fd) }
    }

    /// A verbatim cache holding the record `ab\u{FFFD}` and, planted, `ab/ab\xff` and `ab/ab\xfe`
    /// (valid record bytes, so only their names tell them apart) and `ab\xfd` at the root.
    @Test func aCacheLeavesNamesThatAreNotUTF8AndListsThemAsMisplaced() throws {
        let temp = TemporaryDirectory("larder-names")
        defer { temp.remove() }
        let root = temp.path("cache")
        var options = DiskCacheOptions(directory: URL(fileURLWithPath: root, isDirectory: true))
        options.keyEncoding = .verbatim
        options.defaultExpiration = 60
        let clock = ManualClock(now: 1_700_000_000)
        options.clock = clock
        do {
            let cache = try DiskCache(options: options)
            try cache.store(Data("kept".utf8), forKey: Self.twin)
            cache.close()
        }
        let shard = root + "/ab"
        let planted: [(folder: String, name: [UInt8], bytes: [UInt8])] = [
            (shard, Self.ff, recordBytes(Array("ff".utf8), updateTime: 1)),
            (shard, Self.fe, recordBytes(Array("fe".utf8), updateTime: 1)),
            (root, Array("ab".utf8) + [0xFD], Array("root".utf8)),
        ]
        for file in planted { #expect(RawFileNames.createFile(in: file.folder, named: file.name, contents: file.bytes)) }
        try? FileManager.default.removeItem(atPath: root + "/" + DiskLayout.snapshotName)
        try? FileManager.default.removeItem(atPath: root + "/" + DiskLayout.journalName)

        let layout = DiskLayout(root: root)
        let misplaced = try layout.misplacedEntries(io: FileIO().rooted(at: root))
        #expect(
            misplaced.map(\.relativePath.bytes) == [Array("ab/".utf8) + Self.fe, Array("ab/".utf8) + Self.ff, Array("ab".utf8) + [0xFD]])
        #expect(misplaced.map(\.shard) == ["ab", "ab", nil])
        #expect(try layout.recordNames(io: FileIO().rooted(at: root)).names == [Self.twin])

        // Reopened without a snapshot (the index is built from the listing), read, collected
        // with the planted headers long expired, trimmed, emptied: the planted files stay.
        clock.advance(by: 30)
        options.countLimit = 1
        let cache = try DiskCache(options: options)
        #expect(cache.count == 1)
        #expect(try cache.value(forKey: Self.twin) == Data("kept".utf8))
        try cache.collectGarbage()
        #expect(try cache.value(forKey: Self.twin) == Data("kept".utf8))
        try cache.removeAll()
        #expect(cache.count == 0)
        cache.close()
        for file in planted { #expect(RawFileNames.contents(in: file.folder, named: file.name) == file.bytes) }
        #expect(RawFileNames.names(in: shard) == [Self.fe, Self.ff])
    }

    /// A folder whose only file has a name that is not UTF-8 holds files: it is no cache, and a
    /// writer refuses it.
    @Test func aFolderOfOnlyUndecodableNamesIsNotACache() throws {
        let temp = TemporaryDirectory("larder-names")
        defer { temp.remove() }
        let root = temp.path("docs")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, 0o700)
        RawFileNames.createFile(in: root, named: Self.ff, contents: recordBytes([1, 2, 3]))
        #expect(try DiskLayout.recognize(root: root, io: FileIO().rooted(at: root)) == .other)
        expectCacheError(.notACache) { () throws(CacheError) in _ = try DiskCache(options: .spt(directory: URL(fileURLWithPath: root))) }
        #expect(RawFileNames.names(in: root) == [Self.ff])
    }

    /// What a crashed writer left in the temporary folder is removed by its exact name.
    @Test func anOpenEmptiesTheTemporaryFolderByExactNames() throws {
        let temp = TemporaryDirectory("larder-names")
        defer { temp.remove() }
        let root = temp.path("cache")
        let options = DiskCacheOptions(directory: URL(fileURLWithPath: root, isDirectory: true))
        try DiskCache(options: options).close()
        let temporary = root + "/" + DiskLayout.temporaryFolderName
        RawFileNames.createFile(in: temporary, named: Self.ff, contents: [1])
        RawFileNames.createFile(in: temporary, named: Self.fe, contents: [2])
        try DiskCache(options: options).close()
        #expect(RawFileNames.names(in: temporary).isEmpty)
    }
}
