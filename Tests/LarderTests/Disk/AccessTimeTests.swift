#if os(Linux)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Testing
@testable import Larder

/// Reads open record files `O_NOATIME` on Linux: a read writes nothing to the inode, and a file
/// the kernel refuses the flag for (one this user does not own) is still read.
@Suite struct AccessTimeTests {
    /// `O_NOATIME`, which the Glibc module does not export.
    static let noAccessTime: Int32 = 0o1000000

    /// The access time of the file at `path`, in seconds.
    private static func accessTime(_ path: String) throws -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileReadNoSuchFile) }
        return Int(info.st_atim.tv_sec)
    }

    @Test func aReadLeavesTheRecordsAccessTimeAlone() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url, encoding: .verbatim))
        try cache.store(Data(repeating: 7, count: 4096), forKey: "kk")
        let path = dir.url.appendingPathComponent("kk/kk").path
        // An access time an hour before the file's change: under `relatime` (and
        // `strictatime`) an ordinary read would move it to now.
        var info = stat()
        #expect(stat(path, &info) == 0)
        var times = [timespec(tv_sec: info.st_mtim.tv_sec - 3600, tv_nsec: 0), info.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        let before = try Self.accessTime(path)
        for _ in 0 ..< 3 { #expect(try cache.record(forKey: "kk")?.data == Data(repeating: 7, count: 4096)) }
        // The same read through the stat-first path (no length known yet), by a second reader.
        var readOnly = testOptions(dir.url, encoding: .verbatim)
        readOnly.isReadOnly = true
        let reader = try DiskCache(options: readOnly)
        #expect(try reader.record(forKey: "kk")?.data.count == 4096)
        #expect(try Self.accessTime(path) == before)
    }

    /// A writer sharing its folder reads the change log's header and the sharing file's mark
    /// under the change lock after each change wrote them: under `relatime` every such read
    /// would write the inode's access time, a journal write per change.
    @Test func aSharingWritersChangeLeavesTheLogsAndTheSharingFilesAccessTimesAlone() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = testOptions(dir.url, encoding: .verbatim)
        options.sharesFolderWithWriters = true
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        try cache.store(Data("1".utf8), forKey: "a")
        let files = [FolderChangeLog.fileName, SharedFolder.sharingFileName].map { dir.url.path + "/" + $0 }
        var before: [Int] = []
        for path in files {
            // An access time an hour before the file's change, which a read under `relatime` moves to now.
            var info = stat()
            #expect(stat(path, &info) == 0)
            var times = [timespec(tv_sec: info.st_mtim.tv_sec - 3600, tv_nsec: 0), info.st_mtim]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            before.append(try Self.accessTime(path))
        }
        try cache.store(Data("2".utf8), forKey: "b")
        #expect(try files.map(Self.accessTime) == before)
    }

    @Test func aFileThatRefusesTheFlagIsReadWithoutIt() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        // The kernel's answer for a file owned by someone else: EPERM for O_NOATIME alone.
        let refused = LarderMutex(0)
        let plainBeneath = LarderMutex(0)
        var calls = SystemCalls.live
        calls.openat = { directory, path, flags, mode in
            if flags & Self.noAccessTime != 0 {
                refused.withLock { $0 += 1 }
                errno = EPERM
                return -1
            }
            return SystemCalls.live.openat(directory, path, flags, mode)
        }
        calls.openBeneath = { directory, path, flags, mode in
            if flags & Self.noAccessTime != 0 {
                refused.withLock { $0 += 1 }
                errno = EPERM
                return -1
            }
            plainBeneath.withLock { $0 += 1 }
            return SystemCalls.live.openBeneath(directory, path, flags, mode)
        }
        var options = testOptions(dir.url, encoding: .verbatim)
        options.maximumOpenFiles = 0  // every read opens its file
        let cache = try DiskCache(options: options, systemCalls: calls)
        try cache.store(Data("x".utf8), forKey: "kk")
        #expect(try cache.record(forKey: "kk")?.data == Data("x".utf8))
        let afterFirst = plainBeneath.withLock { $0 }
        #expect(try cache.record(forKey: "kk")?.data == Data("x".utf8))
        #expect(refused.withLock { $0 } >= 2)
        // The refusal is not taken for a kernel without openat2: the next read still uses it.
        #expect(plainBeneath.withLock { $0 } > afterFirst)
    }
}
#endif
