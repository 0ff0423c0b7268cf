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

/// The cache's folder deleted, replaced by a file, or made read-only while the cache runs: every
/// call returns or throws a ``CacheError`` (no crash), and the cache works again once the folder
/// is back (a deleted folder the cache makes again itself).
@Suite struct DirectoryFaultTests {
    static let payload = Data(StampedPayload.make(key: "k", version: 1, length: 2000))
    static let newer = Data(StampedPayload.make(key: "k", version: 2, length: 3000))

    /// Runs every operation; each must return or throw a CacheError. Returns how many threw.
    @discardableResult
    static func exerciseEverything(_ cache: DiskCache, label: String) -> Int {
        var threw = 0
        func attempt(_ name: String, _ body: () throws -> Void) {
            do { try body() } catch is CacheError { threw += 1 } catch {
                Issue.record("\(label): \(name) threw something other than a CacheError: \(error)")
            }
        }
        attempt("store") { try cache.store(newer, forKey: "k") }
        attempt("store other") { try cache.store(newer, forKey: "other") }
        attempt("load") {
            if let record = try cache.record(forKey: "k") {
                #expect(record.data == payload || record.data == newer, "\(label): wrong bytes")
            }
        }
        attempt("lock") { try cache.lock(forKeys: ["k"]) }
        attempt("unlock") { try cache.unlock(forKeys: ["k"]) }
        attempt("touch") { try cache.touch(forKey: "k") }
        attempt("remove") { try cache.remove(forKeys: ["other"]) }
        attempt("collect") { try cache.collectGarbage() }
        attempt("removeAll") { try cache.removeAllUnlocked() }
        _ = cache.contains("k")
        _ = cache.totalSize
        return threw
    }

    static func expectRecovery(_ cache: DiskCache, root: URL, label: String) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try cache.store(newer, forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == newer, "\(label): no recovery")
        try cache.lock(forKeys: ["k"])
        #expect(try cache.record(forKey: "k")?.lockCount == 1)
        #expect(try cache.collectGarbage().removed.isEmpty)
    }

    /// Deleted: the first store makes the folder again (`FolderRemovalTests` covers the rest).
    @Test func directoryDeletedWhileRunning() throws {
        let dir = TemporaryDirectory("larder-dirfault")
        defer { dir.remove() }
        let root = dir.appending("cache")
        let cache = try DiskCache(options: DiskCacheOptions(directory: root))
        try cache.store(Self.payload, forKey: "k")
        try FileManager.default.removeItem(at: root)
        #expect(Self.exerciseEverything(cache, label: "deleted") == 0)
        #expect(FileManager.default.fileExists(atPath: root.path))
        try Self.expectRecovery(cache, root: root, label: "deleted")
    }

    @Test func directoryReplacedByAFile() throws {
        let dir = TemporaryDirectory("larder-dirfault")
        defer { dir.remove() }
        let root = dir.appending("cache")
        let cache = try DiskCache(options: DiskCacheOptions(directory: root))
        try cache.store(Self.payload, forKey: "k")
        try FileManager.default.removeItem(at: root)
        try Data("not a folder".utf8).write(to: root)
        #expect(Self.exerciseEverything(cache, label: "replaced") > 0)
        #expect(throws: CacheError.self) { try cache.store(Self.newer, forKey: "k") }
        #expect(try Data(contentsOf: root) == Data("not a folder".utf8), "the cache wrote over the file")
        try FileManager.default.removeItem(at: root)
        try Self.expectRecovery(cache, root: root, label: "replaced")
    }

    /// A read-only folder, simulated through the syscall seam (the tests may run as root, for
    /// which permissions do not apply): every call that creates, renames or removes fails with EROFS.
    @Test(arguments: [FaultInjector.Kind.open, .rename, .unlink, .mkdir])
    func readOnlyFolderSimulated(kind: FaultInjector.Kind) throws {
        let dir = TemporaryDirectory("larder-dirfault")
        defer { dir.remove() }
        let injector = FaultInjector()
        let cache = try DiskCache(options: DiskCacheOptions(directory: dir.url), systemCalls: injector.calls)
        try cache.store(Self.payload, forKey: "k")
        _ = cache.count
        injector.arm(
            kind, nth: 1, .fail(EROFS), persistent: true,
            onlyPaths: { path in
                // Opening for reading still works on a read-only folder.
                kind != .open || path.contains("/.larder-tmp/") || !path.hasPrefix(dir.path + "/") || path.hasSuffix(dir.path)
            })
        Self.exerciseEverything(cache, label: "read-only \(kind)")
        #expect(injector.fired > 0, "the read-only folder was never noticed")
        if let data = try cache.record(forKey: "k")?.data { #expect(data == Self.payload || data == Self.newer) }
        injector.disarm()
        try cache.store(Self.newer, forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == Self.newer)
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
        #expect(DiskAudit.strayFiles(in: dir.path).isEmpty)
    }

    @Test(.enabled(if: geteuid() != 0, "root ignores permissions; readOnlyFolderSimulated covers this"))
    func readOnlyFolderForReal() throws {
        let dir = TemporaryDirectory("larder-dirfault")
        defer { dir.remove() }
        let cache = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        try cache.store(Self.payload, forKey: "k")
        let shard = cache.layout.folder(for: try cache.options.keyEncoding.fileName(for: "k"))
        for folder in [dir.path, shard, cache.layout.temporaryFolder] { chmod(folder, 0o555) }
        #expect(throws: CacheError.self) { try cache.store(Self.newer, forKey: "k") }
        #expect(try cache.record(forKey: "k")?.data == Self.payload)
        Self.exerciseEverything(cache, label: "chmod 555")
        for folder in [dir.path, shard, cache.layout.temporaryFolder] { chmod(folder, 0o755) }
        try cache.store(Self.newer, forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == Self.newer)
    }

    /// `removeAll` over a folder it cannot list removes the records the index knows, then throws:
    /// an unlisted record still on disk is never reported as removed. Once the folder lists
    /// again, it goes too. A folder that is gone is nothing to remove, and no error.
    @Test(arguments: [false, true])
    func removeAllOverAnUnlistableFolder(shardOnly: Bool) throws {
        let dir = TemporaryDirectory("larder-dirfault")
        defer { dir.remove() }
        let injector = FaultInjector()
        let cache = try DiskCache(options: DiskCacheOptions(directory: dir.url), systemCalls: injector.calls)
        defer { cache.close() }
        try cache.store(Self.payload, forKey: "k")
        _ = cache.count
        // A record the index does not know: written beside "k" behind the cache's back.
        let known = cache.layout.path(for: try cache.options.keyEncoding.fileName(for: "k"))
        let strayName = try cache.options.keyEncoding.fileName(for: "stray")
        let stray = cache.layout.folder(for: strayName) + "/" + strayName
        try FileManager.default.createDirectory(atPath: cache.layout.folder(for: strayName), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: known, toPath: stray)
        injector.arm(
            .listDirectory, .fail(EIO), persistent: true,
            onlyPaths: { path in shardOnly ? path.hasPrefix(dir.path + "/") : path == dir.path })
        #expect(throws: CacheError.self) { try cache.removeAll() }
        #expect(injector.fired > 0)
        #expect(!FileManager.default.fileExists(atPath: known), "the record the index knew is removed")
        #expect(FileManager.default.fileExists(atPath: stray), "the unlisted one remains, as the error says")
        #expect(!cache.contains("k"))
        injector.disarm()
        try cache.removeAll()
        #expect(!FileManager.default.fileExists(atPath: stray))
        try FileManager.default.removeItem(at: dir.url)
        try cache.removeAll()
        #expect(cache.count == 0)
    }
}
