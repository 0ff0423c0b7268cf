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

/// Keys, custom encodings and options chosen to escape the directory, clobber Larder's own
/// files or slip past validation: each is hashed (and round-trips) or rejected with a typed error.
@Suite struct HostileInputTests {
    static let hostileKeys: [String] = [
        "../x", "../../etc/passwd", "/etc/passwd", "a/../../b", "a\u{0}b", "\u{0}", "", ".", "..", "...",
        ".larder", ".larder.lock", ".larder-index", ".larder-tmp", ".larder-tmp/x", ".larder.tmp-1-2",
        String(repeating: "x", count: 255), String(repeating: "y", count: 256), String(repeating: "z", count: 4096),
        String(decoding: [0xFF, 0xFE, 0xC0, 0x80, 0xED, 0xA0, 0x80], as: UTF8.self), "e\u{301}", "~", "-", "a\nb", "*",
    ]

    /// Everything under `parent` except `root` itself: must stay empty, nothing escaped.
    static func siblings(of root: URL) -> [String] {
        let parent = root.deletingLastPathComponent()
        return ((try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []).filter { $0 != root.lastPathComponent }
    }

    static func metadataBytes(_ root: URL) -> Data? { try? Data(contentsOf: root.appendingPathComponent(".larder")) }

    @Test func sha256KeysAreHashedAndRoundTrip() throws {
        let dir = TemporaryDirectory("larder-hostile")
        defer { dir.remove() }
        let root = dir.appending("cache")
        let cache = try DiskCache(options: DiskCacheOptions(directory: root))
        let metadata = Self.metadataBytes(root)
        for (i, key) in Self.hostileKeys.enumerated() {
            try cache.store(Data(StampedPayload.make(key: key, version: UInt64(i), length: 100)), forKey: key)
        }
        for (i, key) in Self.hostileKeys.enumerated() {
            #expect(
                try cache.record(forKey: key)?.data == Data(StampedPayload.make(key: key, version: UInt64(i), length: 100)),
                "\(key.debugDescription)")
        }
        #expect(cache.count == Self.hostileKeys.count)
        #expect(Set(try cache.keys(withPrefix: "")) == Set(Self.hostileKeys))
        #expect(Self.siblings(of: root).isEmpty)
        #expect(Self.metadataBytes(root) == metadata)
        #expect(DiskAudit.recordFiles(in: root.path).count == Self.hostileKeys.count)
        // Over the stored-key limit: rejected, not truncated.
        #expect(throws: CacheError.self) {
            try cache.store(Data(), forKey: String(repeating: "k", count: RecordHeader.maximumKeyLength + 1))
        }
        cache.close()
        let again = try DiskCache(options: DiskCacheOptions(directory: root))
        #expect(again.count == Self.hostileKeys.count)
    }

    @Test func verbatimRejectsUnsafeNames() throws {
        let dir = TemporaryDirectory("larder-hostile")
        defer { dir.remove() }
        let root = dir.appending("cache")
        var options = DiskCacheOptions(directory: root)
        options.keyEncoding = .verbatim
        let cache = try DiskCache(options: options)
        let metadata = Self.metadataBytes(root)
        var accepted = 0
        var rejected = 0
        for key in Self.hostileKeys {
            let unsafe = key.isEmpty || key.utf8.count > 255 || key.contains("/") || key.utf8.contains(0) || key.hasPrefix(".")
            do {
                try cache.store(Data("v".utf8), forKey: key)
                #expect(!unsafe, "stored the unsafe key \(key.debugDescription)")
                #expect(try cache.record(forKey: key)?.data == Data("v".utf8))
                accepted += 1
            } catch {
                #expect(unsafe && error.code == .invalidKey, "\(key.debugDescription): \(error)")
                // Every other entry point rejects it too.
                #expect(throws: CacheError.self) { try cache.record(forKey: key) }
                #expect(throws: CacheError.self) { try cache.remove(forKeys: [key]) }
                #expect(throws: CacheError.self) { try cache.lock(forKeys: [key]) }
                #expect(!cache.contains(key))
                rejected += 1
            }
        }
        #expect(accepted > 0 && rejected > 0)
        #expect(Self.siblings(of: root).isEmpty)
        #expect(Self.metadataBytes(root) == metadata)
        #expect(FileManager.default.fileExists(atPath: root.path + "/.larder.lock"))
    }

    @Test func customEncodingsCannotEscape() throws {
        let produced: [String] = [
            "../escape", "/tmp/escape", "a/b", "", ".", "..", ".larder", ".larder-index", ".larder-tmp",
            "x\u{0}y", String(repeating: "n", count: 300), String(decoding: [0xC3, 0x28, 0xFF], as: UTF8.self), "ok-name",
        ]
        for name in produced {
            let dir = TemporaryDirectory("larder-hostile")
            defer { dir.remove() }
            let root = dir.appending("cache")
            var options = DiskCacheOptions(directory: root)
            options.keyEncoding = .custom(name: "hostile") { _ in name }
            let cache = try DiskCache(options: options)
            let metadata = Self.metadataBytes(root)
            do {
                try cache.store(Data("v".utf8), forKey: "any key")
                #expect(try cache.record(forKey: "any key")?.data == Data("v".utf8), "\(name.debugDescription)")
                #expect(!name.contains("/") && !name.hasPrefix(".") && !name.isEmpty, "accepted \(name.debugDescription)")
            } catch {
                #expect(error.code == .invalidKey, "\(name.debugDescription): \(error)")
            }
            #expect(Self.siblings(of: root).isEmpty, "\(name.debugDescription) escaped: \(Self.siblings(of: root))")
            #expect(Self.metadataBytes(root) == metadata, "\(name.debugDescription) clobbered the metadata")
        }
        // An encoding that throws: invalidKey, not a crash.
        let dir = TemporaryDirectory("larder-hostile")
        defer { dir.remove() }
        var options = DiskCacheOptions(directory: dir.url)
        struct Refused: Error {}
        options.keyEncoding = .custom(name: "throws") { _ in throw Refused() }
        let cache = try DiskCache(options: options)
        #expect { try cache.store(Data(), forKey: "k") } throws: { ($0 as? CacheError)?.code == .invalidKey }
        #expect { try cache.record(forKey: "k") } throws: { ($0 as? CacheError)?.code == .invalidKey }
    }

    @Test func badOptionsFailAtInit() throws {
        let dir = TemporaryDirectory("larder-hostile")
        defer { dir.remove() }
        let mutations: [(String, (inout DiskCacheOptions) -> Void)] = [
            ("negative expiration", { $0.defaultExpiration = -1 }), ("zero expiration", { $0.defaultExpiration = 0 }),
            ("NaN expiration", { $0.defaultExpiration = .nan }), ("infinite expiration", { $0.defaultExpiration = .infinity }),
            ("negative size limit", { $0.sizeLimit = -1 }), ("negative count limit", { $0.countLimit = -5 }),
            ("zero interval", { $0.garbageCollectionInterval = 0 }), ("negative interval", { $0.garbageCollectionInterval = -363 }),
            ("NaN interval", { $0.garbageCollectionInterval = .nan }), ("infinite interval", { $0.garbageCollectionInterval = .infinity }),
            ("fraction below 0", { $0.minimumFreeDiskSpace = .fraction(-0.1) }),
            ("fraction above 1", { $0.minimumFreeDiskSpace = .fraction(1.5) }),
            ("NaN fraction", { $0.minimumFreeDiskSpace = .fraction(.nan) }), ("negative bytes", { $0.minimumFreeDiskSpace = .bytes(-1) }),
            ("web URL", { $0.directory = URL(string: "https://example.com/cache")! }),
        ]
        for (label, mutate) in mutations {
            var options = DiskCacheOptions(directory: dir.appending("c"))
            mutate(&options)
            #expect("\(label)") { try DiskCache(options: options) } throws: { ($0 as? CacheError)?.code == .invalidOptions }
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appending("c").path), "a rejected init created the directory")
        // A directory that cannot be made: under a regular file.
        try Data("file".utf8).write(to: dir.url.appendingPathComponent("plain"))
        #expect { try DiskCache(options: DiskCacheOptions(directory: dir.url.appendingPathComponent("plain/sub"))) } throws: {
            ($0 as? CacheError)?.code == .ioFailure
        }
        // Store-time values.
        let cache = try DiskCache(options: DiskCacheOptions(directory: dir.appending("ok")))
        // An expiry is a call's argument, not an option: invalidArgument (was invalidOptions for `ttl:`).
        for seconds in [-1, -.infinity, .nan, .infinity, 0] as [TimeInterval] {
            #expect("expiry \(seconds)") { try cache.store(Data(), forKey: "k", expiry: .seconds(seconds)) } throws: {
                ($0 as? CacheError)?.code == .invalidArgument
            }
        }
        #expect(try cache.record(forKey: "k") == nil)
    }
}
