import Foundation
import LarderTestSupport
import Testing

@testable import Larder

/// What a user logging `"\(error)"` reads: the code, the message, and the key or path concerned.
@Suite struct CacheErrorDescriptionTests {
    struct LoaderDown: Error {}

    /// Runs `body`, which must throw a ``CacheError``, and returns it.
    static func caught(_ label: String, _ body: () throws -> Void) -> CacheError? {
        do {
            try body()
            Issue.record("\(label): threw nothing")
        } catch let error as CacheError {
            return error
        } catch {
            Issue.record("\(label): threw \(error), not a CacheError")
        }
        return nil
    }

    @Test func descriptionListsKeyPathAndErrno() {
        let error = CacheError(.ioFailure, "cannot open the lock file", key: "a\"b", path: "/c/.lock", errno: 13)
        #expect(error.description.hasPrefix("ioFailure: cannot open the lock file (key \"a\\\"b\", path /c/.lock, errno 13: "))
        #expect(CacheError(.closed, "the cache was closed").description == "closed: the cache was closed")
    }

    @Test func directoryInUseNamesTheFolder() throws {
        let dir = TemporaryDirectory("larder-errdesc")
        defer { dir.remove() }
        let first = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        defer { first.close() }
        let error = Self.caught("second open") { _ = try DiskCache(options: DiskCacheOptions(directory: dir.url)) }
        #expect(error?.code == .directoryInUse)
        #expect(error?.description.contains(dir.url.standardizedFileURL.path) == true, "\(String(describing: error))")
    }

    @Test func lockFileDeniedNamesTheLockFile() throws {
        let dir = TemporaryDirectory("larder-errdesc")
        defer { dir.remove() }
        let faults = FaultInjector()
        faults.arm(.open, .fail(EACCES), persistent: true, onlyPaths: { $0.hasSuffix("lock") })
        let error = Self.caught("open") {
            _ = try DiskCache(options: DiskCacheOptions(directory: dir.url), systemCalls: faults.calls)
        }
        #expect(error?.code == .ioFailure)
        let description = error?.description ?? ""
        #expect(description.contains("path \(dir.url.standardizedFileURL.path)/"), "\(description)")
        #expect(description.contains("errno 13"), "\(description)")
    }

    @Test(arguments: ["", "/below"])
    func folderThatIsAFileSaysSo(below: String) throws {
        let dir = TemporaryDirectory("larder-errdesc")
        defer { dir.remove() }
        let file = dir.appending("plain")
        try Data("x".utf8).write(to: file)
        let error = Self.caught("open") { _ = try DiskCache(options: DiskCacheOptions(directory: URL(fileURLWithPath: file.path + below))) }
        #expect(error?.code == .ioFailure)
        let description = error?.description ?? ""
        #expect(description.contains("\(file.standardizedFileURL.path) is a file, not a folder"), "\(description)")
    }

    @Test func loadFailedNamesTheKey() async throws {
        let dir = TemporaryDirectory("larder-errdesc")
        defer { dir.remove() }
        let cache = try HybridCache(options: HybridCacheOptions(directory: dir.url))
        defer { cache.close() }
        do {
            _ = try await cache.value(forKey: "avatar:42") { throw LoaderDown() }
            Issue.record("the load did not fail")
        } catch {
            #expect(error.code == .loadFailed)
            #expect(error.description.contains("key \"avatar:42\""), "\(error)")
            #expect(error.description.contains("LoaderDown"), "\(error)")
        }
    }

    /// Many error paths of the disk and hybrid tiers: each description names the key or the
    /// cache folder it concerns.
    @Test func everyErrorNamesItsKeyOrPath() throws {
        let dir = TemporaryDirectory("larder-errdesc")
        defer { dir.remove() }
        let root = dir.appending("cache")
        let path = root.standardizedFileURL.path
        var errors: [(label: String, error: CacheError?, names: String)] = []
        func expectError(_ label: String, names: String, _ body: () throws -> Void) {
            errors.append((label, Self.caught(label, body), names))
        }

        var verbatim = DiskCacheOptions(directory: root)
        verbatim.keyEncoding = .verbatim
        let disk = try DiskCache(options: verbatim)
        try disk.store(Data("not json".utf8), forKey: "text")
        expectError("invalid key", names: "../escape") { try disk.store(Data(), forKey: "../escape") }
        expectError("invalid expiry", names: "k") { try disk.store(Data(), forKey: "k", expiry: .seconds(-1)) }
        expectError("decoding", names: "text") { _ = try disk.value([Int].self, forKey: "text") }
        expectError("second writer", names: path) { _ = try DiskCache(options: verbatim) }
        disk.close()
        expectError("closed store", names: "k") { try disk.store(Data(), forKey: "k") }
        expectError("closed read", names: "k") { _ = try disk.record(forKey: "k") }

        var sha = DiskCacheOptions(directory: root)
        sha.keyEncoding = .sha256
        expectError("key encoding", names: path) { _ = try DiskCache(options: sha) }

        var readOnly = verbatim
        readOnly.isReadOnly = true
        let reader = try DiskCache(options: readOnly)
        expectError("read-only store", names: "k") { try reader.store(Data(), forKey: "k") }
        expectError("read-only remove", names: "text") { _ = try reader.remove(forKey: "text") }
        reader.close()
        var missing = readOnly
        missing.directory = dir.appending("absent")
        expectError("read-only, no folder", names: dir.appending("absent").standardizedFileURL.path) {
            _ = try DiskCache(options: missing)
        }

        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: path)
        expectError("unsafe folder", names: path) { _ = try DiskCache(options: verbatim) }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)

        var hybridOptions = HybridCacheOptions(directory: dir.appending("hybrid"))
        hybridOptions.disk.keyEncoding = .verbatim
        let hybrid = try HybridCache(options: hybridOptions)
        try hybrid.store(Data("not json".utf8), forKey: "text")
        expectError("hybrid invalid key", names: "a/b") { try hybrid.store(Data(), forKey: "a/b") }
        expectError("hybrid invalid expiry", names: "k") { try hybrid.store(Data(), forKey: "k", expiry: .seconds(.nan)) }
        expectError("hybrid decoding", names: "text") { _ = try hybrid.value([Int].self, forKey: "text") }
        hybrid.close()
        expectError("hybrid closed", names: "k") { try hybrid.store(Data(), forKey: "k") }

        #expect(errors.count == 15)
        for (label, error, names) in errors {
            guard let error else { continue }
            let shown = names.hasPrefix("/") ? "path \(names)" : "key \(names.debugDescription)"
            #expect(error.description.contains(shown), "\(label): \(error)")
        }
    }
}
