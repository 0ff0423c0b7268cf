#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCache's `Tests/SPTPersistentCacheFileManagerTests.m` (upstream 1.2.0), test by
// test. SPT's file manager is a helper class; its Swift meaning is the disk tier's layout
// (`DiskLayout`: where a key's file and shard folder are), its removals, and its size limit
// under the free-space floor (`effectiveSizeLimit`). setUp's options are SPT's defaults, so
// the preset, on a folder of the test's own; `sizeConstraintBytes` is 0 there, as in SPT's.
@Suite("SPTPersistentCacheFileManagerTests") struct SPTPersistentCacheFileManagerTests {
    /// A volume of `size` bytes with `available` free, as `statvfs` reports it.
    static func volume(size: Int, available: Int) -> SystemCalls {
        var calls = SystemCalls.live
        calls.statvfs = { _, buf in
            buf.pointee = StatVFS()
            buf.pointee.f_frsize = 4096
            buf.pointee.f_bsize = 4096
            buf.pointee.f_blocks = .init(size / 4096)
            buf.pointee.f_bavail = .init(available / 4096)
            buf.pointee.f_bfree = .init(available / 4096)
            return 0
        }
        return calls
    }

    static func makeCache(
        _ dir: TemporaryDirectory, sizeLimit: Int = 0, events: EventLog? = nil, calls: SystemCalls = .live
    ) throws -> DiskCache {
        var options = DiskCacheOptions.spt(directory: dir.url.appendingPathComponent("pcache"))
        options.name = "test"
        options.sizeLimit = sizeLimit
        options.eventHandler = events?.handler
        return try DiskCache(options: options, systemCalls: calls)
    }

    /// SPTPersistentCacheFileManagerTests.m:68. The cache makes its folder.
    @Test func testCreateCacheDirectory() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let cache = try Self.makeCache(dir)
        defer { cache.close() }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: dir.path + "/pcache", isDirectory: &isDirectory))
        #expect(isDirectory.boolValue)
    }

    /// SPTPersistentCacheFileManagerTests.m:81. An existing (empty) folder is taken as it is.
    @Test func testExistingCacheDirectory() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.path + "/pcache", withIntermediateDirectories: true)
        let cache = try Self.makeCache(dir)
        defer { cache.close() }
        #expect(cache.layout.root == dir.path + "/pcache")
    }

    /// SPTPersistentCacheFileManagerTests.m:93. A two-character key's shard folder is named
    /// after the whole key.
    @Test func testSubdirectoryPathForKeyWithShortKey() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let cache = try Self.makeCache(dir)
        defer { cache.close() }
        #expect(cache.layout.folder(for: "AA") == dir.path + "/pcache/AA")
    }

    /// SPTPersistentCacheFileManagerTests.m:105. A longer key's shard folder is its first two
    /// characters (`SPTPersistentCacheFileManagerSubDirNameLength`).
    @Test func testSubdirectoryPathForKeyWithLongKey() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let cache = try Self.makeCache(dir)
        defer { cache.close() }
        #expect(cache.layout.folder(for: "AABBCC") == dir.path + "/pcache/AA")
    }

    /// SPTPersistentCacheFileManagerTests.m:117. A key's file is the key, in its shard folder;
    /// a store puts it there.
    @Test func testPathForKey() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let cache = try Self.makeCache(dir)
        defer { cache.close() }
        #expect(cache.layout.path(for: try cache.options.keyEncoding.fileName(for: "AABBCC")) == dir.path + "/pcache/AA/AABBCC")
        try cache.store(Data("TestString".utf8), forKey: "AABBCC")
        #expect(FileManager.default.fileExists(atPath: dir.path + "/pcache/AA/AABBCC"))
    }

    /// SPTPersistentCacheFileManagerTests.m:131. Removing a key removes its file. SPT's test
    /// writes a text file there; Difference: Larder removes records only, and leaves a file
    /// without the record magic where it is (the "Files that are not records" row of the guide),
    /// so the record here is a stored one.
    @Test func testRemoveFileForKey() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let cache = try Self.makeCache(dir)
        defer { cache.close() }
        try cache.store(Data("TestString".utf8), forKey: "AA")
        let path = dir.path + "/pcache/AA/AA"
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try cache.remove(forKey: "AA"))
        #expect(!FileManager.default.fileExists(atPath: path))
        // The foreign file SPT's test plants is left.
        try Data("TestString".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try cache.remove(forKey: "AA") == false)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    /// SPTPersistentCacheFileManagerTests.m:144. With `sizeConstraintBytes` 0 (no limit) SPT's
    /// optimized size is 0, which its collector takes as "no pruning"; Larder's limit in force
    /// is none (`Int.max`) whatever the volume, since the preset's free-space floor applies only
    /// once a size limit is set. With a limit, a cache larger than the volume leaves the limit
    /// as it is when the volume has its 10 % free, as SPT's `MIN(..., sizeConstraintBytes)` does.
    @Test func testOptimizedDiskSizeForCacheSizeInsanelyBig() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let roomy = Self.volume(size: 1 << 40, available: 1 << 39)
        let unlimited = try Self.makeCache(dir, calls: roomy)
        #expect(unlimited.effectiveSizeLimit(forceRefresh: true) == Int.max)
        unlimited.close()
        let limited = try Self.makeCache(dir, sizeLimit: 10 << 20, calls: roomy)
        defer { limited.close() }
        #expect(limited.effectiveSizeLimit(forceRefresh: true) == 10 << 20)
    }

    /// SPTPersistentCacheFileManagerTests.m:153. A small cache on a volume short of its 10 %:
    /// SPT's size is `free + current - 10 % of the volume`, at least 0 (here 0); Larder's limit
    /// is the same arithmetic (what the records hold less the deficit, at least 0).
    @Test func testOptimizedDiskSizeForCacheSizeSmall() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        // 100 MiB volume, 1 MiB free: 10 MiB should be, 9 MiB short of it.
        let cache = try Self.makeCache(dir, sizeLimit: 50 << 20, calls: Self.volume(size: 100 << 20, available: 1 << 20))
        #expect(cache.effectiveSizeLimit(forceRefresh: true) == 0)
        cache.close()
        // Once the volume has its 10 % free, SPT's formula and Larder's give the size limit.
        let roomy = try Self.makeCache(dir, sizeLimit: 5 << 20, calls: Self.volume(size: 100 << 20, available: 20 << 20))
        defer { roomy.close() }
        #expect(roomy.effectiveSizeLimit(forceRefresh: true) == 5 << 20)
    }

    /// SPTPersistentCacheFileManagerTests.m:162. Removing all data removes every record.
    @Test func testRemoveAllDataButKeysWithoutKeys() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let cache = try Self.makeCache(dir)
        defer { cache.close() }
        try cache.store(Data("TestString".utf8), forKey: "AA")
        try cache.store(Data("TestString".utf8), forKey: "AB")
        try cache.removeAll()
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/pcache/AA/AA"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/pcache/AB/AB"))
        #expect(cache.count == 0)
    }

    /// SPTPersistentCacheFileManagerTests.m:182. SPT logs through `debugOutput` when it cannot
    /// get a file's size. Larder takes sizes from `fstat` of the record it opened; a file it
    /// cannot examine is a miss, and a load reports the failure as a thrown `ioFailure`.
    @Test func testFileManagerFailsToGetAttributesOfFile() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        var options = DiskCacheOptions.spt(directory: dir.url.appendingPathComponent("pcache"))
        options.maximumOpenFiles = 0
        let writer = try DiskCache(options: options)
        try writer.store(Data(count: 100_000), forKey: "TEST")
        writer.close()
        // Without the snapshot, the next cache has not seen the file's length: a load examines it.
        unlink(dir.path + "/pcache/.larder-index")
        let faults = FaultInjector()
        let cache = try DiskCache(options: options, systemCalls: faults.calls)
        defer { cache.close() }
        faults.arm(every: .fstat, .fail(EIO))
        #expect(throws: CacheError.self) { try cache.record(forKey: "TEST") }
        #expect(faults.fired > 0)
        faults.disarm()
        #expect(try cache.record(forKey: "TEST")?.data.count == 100_000)
    }

    /// SPTPersistentCacheFileManagerTests.m:197 (disabled in SPT). SPT logs when it cannot read
    /// a file's attributes while totalling the folder; Larder totals its index, which no file
    /// attribute can fail: the total stays what the records hold.
    @Test func testTotalUsedSizeInBytesFailWithNSURLGetResourceValue() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let faults = FaultInjector()
        let cache = try DiskCache(options: .spt(directory: dir.url.appendingPathComponent("pcache")), systemCalls: faults.calls)
        defer { cache.close() }
        try cache.store(Data(count: 10), forKey: "AA")
        let total = cache.totalSize
        faults.arm(every: .fstat, .fail(EIO))
        #expect(cache.totalSize == total && total == cache.blockSize)
    }

    /// SPTPersistentCacheFileManagerTests.m:214. SPT logs when it cannot ask the volume for its
    /// free space, and keeps `sizeConstraintBytes`. Larder does the same without the log: a
    /// failed `statvfs` leaves the size limit as set.
    @Test func testOptimizedDiskSizeForCacheSizeFileManagerFail() throws {
        let dir = TemporaryDirectory("spt-fm")
        defer { dir.remove() }
        let faults = FaultInjector()
        let cache = try Self.makeCache(dir, sizeLimit: 100, calls: faults.calls)
        defer { cache.close() }
        faults.arm(every: .statvfs, .fail(EIO))
        #expect(cache.effectiveSizeLimit(forceRefresh: true) == 100)
        #expect(faults.fired > 0)
    }
}
