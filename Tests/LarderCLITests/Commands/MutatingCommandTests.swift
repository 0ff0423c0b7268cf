import Foundation
import Larder
import Testing
@testable import LarderCLI

/// `put`, `rm`, `lock`, `unlock`, `gc`, and a directory held by another writer.
@Suite struct MutatingCommandTests {
    @Test func putThenCatRoundTripsFromFileAndStdin() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        let file = temp.path("payload.bin")
        let bytes = Data((0 ..< 5000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try bytes.write(to: URL(fileURLWithPath: file))
        #expect(larder(["put", "--dir", dir, "blob", file]).code == 0)
        #expect(larder(["put", "--dir", dir, "note", "--ttl", "60", "--locked"], input: Data("from stdin".utf8)).code == 0)
        #expect(larder(["cat", "--dir", dir, "blob"]).stdoutData == bytes)
        #expect(larder(["cat", "--dir", dir, "note"]).stdout == "from stdin")
        let rows = try #require(try parseJSON(larder(["ls", "--dir", dir, "--json"]).stdout) as? [[String: Any]])
        let note = try #require(rows.first { $0["key"] as? String == "note" })
        #expect(note["ttl"] as? Int == 60)
        #expect(note["lockCount"] as? Int == 1)
        #expect(rows.count == 2)
    }

    @Test func rmRemovesAndReportsMissingKeys() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        #expect(larder(["put", "--dir", dir, "a"], input: Data("1".utf8)).code == 0)
        #expect(larder(["put", "--dir", dir, "b"], input: Data("2".utf8)).code == 0)
        let result = larder(["rm", "--dir", dir, "a", "zzz"])
        #expect(result.code == 1)
        #expect(result.stderr.contains("'zzz'"))
        #expect(larder(["cat", "--dir", dir, "a"]).code == 1)
        #expect(larder(["cat", "--dir", dir, "b"]).stdout == "2")
        #expect(larder(["rm", "--dir", dir, "b"]).code == 0)
    }

    @Test func lockAndUnlockChangeTheLockCount() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        #expect(larder(["put", "--dir", dir, "k"], input: Data("v".utf8)).code == 0)
        func lockCount() throws -> Int? {
            let rows = try #require(try parseJSON(larder(["ls", "--dir", dir, "--json"]).stdout) as? [[String: Any]])
            return rows.first?["lockCount"] as? Int
        }
        for _ in 0 ..< 2 {
            let locked = larder(["lock", "--dir", dir, "k"])
            #expect(locked.code == 0, "\(locked.stderr)")
        }
        #expect(try lockCount() == 2)
        #expect(larder(["unlock", "--dir", dir, "k"]).code == 0)
        #expect(try lockCount() == 1)
        #expect(larder(["unlock", "--dir", dir, "k"]).code == 0)
        let extra = larder(["unlock", "--dir", dir, "k"])
        #expect(extra.code == 1)
        #expect(try lockCount() == 0)
        #expect(larder(["lock", "--dir", dir, "missing"]).code == 1)
    }

    @Test func gcRemovesExpiredAndTrimsToTheSizeLimitKeepingLockedRecords() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        let now = 1_700_000_000
        let at = ["--now", String(now)]
        #expect(larder(["put", "--dir", dir, "short", "--ttl", "10"] + at, input: Data("x".utf8)).code == 0)
        #expect(larder(["put", "--dir", dir, "pinned", "--locked"] + at, input: Data(count: 8192)).code == 0)
        for i in 0 ..< 4 {
            #expect(larder(["put", "--dir", dir, "big-\(i)"] + ["--now", String(now + i)], input: Data(count: 8192)).code == 0)
        }
        let later = ["--now", String(now + 100)]
        let result = larder(["gc", "--list", "--dir", dir, "--size-limit", String(3 * 8192 + 3 * 4096)] + later)
        #expect(result.code == 0, "\(result.stderr)")
        #expect(result.stdout.contains("short  expired"), "\(result.stdout)")
        #expect(result.stdout.contains("big-0  sizeLimit"))
        let rows = try #require(try parseJSON(larder(["ls", "--dir", dir, "--json"] + later).stdout) as? [[String: Any]])
        let keys = Set(rows.compactMap { $0["key"] as? String })
        #expect(keys.contains("pinned"))
        #expect(!keys.contains("short"))
        #expect(!keys.contains("big-0"), "the least recently used goes first")
        #expect(keys.contains("big-3"))
    }

    /// A cache of `count` records of 100 bytes each, every one expired by `now + 100`.
    static func expiredCache(_ dir: String, count: Int) throws {
        let cache = try DiskCache(options: DiskCacheOptions(directory: URL(fileURLWithPath: dir)))
        defer { cache.close() }
        for i in 0 ..< count { try cache.store(Data(count: 100), forKey: "gone-\(i)", expiry: .seconds(10)) }
        try cache.store(Data(count: 1000), forKey: "kept", locked: true)
    }

    @Test func gcPrintsASummaryThatSizesAsStatsDoes() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        try Self.expiredCache(dir, count: 40)
        let later = ["--now", String(Int(Date().timeIntervalSince1970) + 1000)]
        let result = larder(["gc", "--dir", dir] + later)
        #expect(result.code == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2, "a summary, not one line per key: \(result.stdout)")
        #expect(lines.first?.hasPrefix("removed 40 records (40 expired), ") == true, "\(result.stdout)")
        #expect(lines.first?.hasSuffix(" on disk") == true, "\(result.stdout)")
        #expect(!result.stdout.contains("gone-"))

        // The remaining size is the one `stats` prints, both as bytes and on disk.
        let stats = try #require(try parseJSON(larder(["stats", "--dir", dir, "--json"] + later).stdout) as? [String: Any])
        let bytes = try #require(stats["totalSize"] as? Int)
        let onDisk = try #require(stats["totalSizeOnDisk"] as? Int)
        #expect(onDisk >= bytes && onDisk % 512 == 0, "\(onDisk) \(bytes)")
        let shown = HumanFormat.size(bytes, onDisk: onDisk)
        #expect(lines.last == "remaining: 1 record, \(shown)", "\(result.stdout)")
        #expect(
            larder(["stats", "--dir", dir] + later).stdout.contains(
                "\(HumanFormat.size(bytes)) (\(bytes) bytes; \(HumanFormat.size(onDisk)) on disk)"))
    }

    /// A `gc` whose pass meets another collection of the folder (here its collection lock held
    /// on another open of the sharing file, as another process holds it) exits 0, removes
    /// nothing and says it was skipped; once that collection is over, `gc` collects.
    @Test func gcThatMeetsAnotherCollectionSaysItWasSkipped() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        try Self.expiredCache(dir, count: 3)
        let later = ["--now", String(Int(Date().timeIntervalSince1970) + 1000)]
        let fd = open(dir + "/.larder-sharing", O_RDWR | O_CREAT, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let skipped = larder(["gc", "--dir", dir] + later)
        #expect(skipped.code == 0, "\(skipped.stderr)")
        #expect(skipped.stdout.hasPrefix("removed 0 records\n"), "\(skipped.stdout)")
        #expect(skipped.stdout.contains("skipped: another collection of the directory was running"), "\(skipped.stdout)")
        #expect(skipped.stdout.contains("remaining: 4 records"), "\(skipped.stdout)")
        #expect(flock(fd, LOCK_UN) == 0)
        let collected = larder(["gc", "--dir", dir] + later)
        #expect(collected.code == 0, "\(collected.stderr)")
        #expect(collected.stdout.hasPrefix("removed 3 records (3 expired)"), "\(collected.stdout)")
        #expect(!collected.stdout.contains("skipped"), "\(collected.stdout)")
    }

    @Test func gcListsKeysOnlyWhenAskedAndIsSilentWhenQuiet() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        try Self.expiredCache(dir, count: 3)
        let later = ["--now", String(Int(Date().timeIntervalSince1970) + 1000)]
        let quiet = larder(["gc", "--quiet", "--dir", dir] + later)
        #expect(quiet.code == 0, "\(quiet.stderr)")
        #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stdout)")
        let keys = try #require(try parseJSON(larder(["ls", "--dir", dir, "--json"] + later).stdout) as? [[String: Any]])
        #expect(keys.count == 1, "--quiet still collects")

        try Self.expiredCache(dir + "2", count: 3)
        let listed = larder(["gc", "--list", "--dir", dir + "2"] + later)
        for i in 0 ..< 3 { #expect(listed.stdout.contains("  gone-\(i)  expired\n"), "\(listed.stdout)") }
        #expect(larder(["gc", "--list", "--quiet", "--dir", dir] + later).code == ExitCode.usage.rawValue)

        let gc = try #require(CompletionModel.larder.commands.first { $0.name == "gc" })
        #expect(Set(gc.options.map(\.name)).isSuperset(of: ["list", "quiet"]))
    }

    @Test func changingAHeldDirectoryFailsWithExitCode3NamingThePID() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try DiskCache(options: DiskCacheOptions(directory: temp.url.appendingPathComponent("c")))
        defer { writer.close() }
        try writer.store(Data("v".utf8), forKey: "k")
        let dir = temp.path("c")
        for arguments in [
            ["put", "--dir", dir, "k2"], ["rm", "--dir", dir, "k"], ["lock", "--dir", dir, "k"], ["gc", "--dir", dir],
            ["verify", "--dir", dir, "--repair"],
        ] {
            let result = larder(arguments + ["--wait", "0"], input: Data("x".utf8))
            #expect(result.code == 3, "\(arguments)")
            #expect(result.stderr.contains("in use by process \(getpid())"), "\(arguments): \(result.stderr)")
        }
        #expect(larder(["cat", "--dir", dir, "k"]).stdout == "v", "reading still works")
    }

    @Test func keysOptionOnlyWhereMetadataIsSilent() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        #expect(larder(["put", "--dir", dir, "--keys", "verbatim", "plain-key"], input: Data("v".utf8)).code == 0)
        #expect(FileManager.default.fileExists(atPath: dir + "/pl/plain-key"))
        let contradiction = larder(["ls", "--dir", dir, "--keys", "sha256"])
        #expect(contradiction.code == 2)
        #expect(contradiction.stderr.contains("metadata"))
    }
}
