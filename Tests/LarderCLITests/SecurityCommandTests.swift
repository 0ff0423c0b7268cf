#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Testing
@testable import LarderCLI

/// The attacks through the `larder` command: every command reads, writes and removes
/// through the library's rooted file layer, so links in a cache folder lead nowhere, FIFOs never
/// block, and hostile header fields never trap.
@Suite struct SecurityCommandTests {
    /// A temporary folder with a cache directory `c` (verbatim keys) and a sentinel tree.
    struct Fixture {
        let temp = TemporaryDirectory("larder-cli-security")
        var dir: String { temp.path("c") }
        let sentinel: SentinelTree

        init() { sentinel = SentinelTree(at: temp.path("sentinel")) }

        func put(_ key: String, _ text: String, _ extra: [String] = []) {
            #expect(larder(["put", "--dir", dir, "--keys", "verbatim", key] + extra, input: Data(text.utf8)).code == 0)
        }

        func path(_ name: String) -> String { DiskLayout(root: dir).path(for: name) }
    }

    /// A valid verbatim record's bytes.
    static func record(_ payload: String, ttl: UInt64 = 0, updateTime: UInt64 = 1_700_000_000) -> Data {
        let bytes = Array(payload.utf8)
        let header = RecordHeader(
            ttl: ttl, updateTimeSec: updateTime, payloadSizeBytes: UInt64(bytes.count), payloadChecksum: CRC32.checksum(of: bytes))
        return Data(header.encoded() + bytes)
    }

    /// Attack 2: with `im -> victim`, `rm`, `lock` and `put` reached `victim/important.txt`.
    @Test func commandsDoNotReachThroughALinkedShard() throws {
        let fixture = Fixture()
        defer { fixture.temp.remove() }
        fixture.put("bystander", "b")
        #expect(HostileFiles.symlink(fixture.sentinel.root, at: fixture.dir + "/im"))
        let before = fixture.sentinel.fingerprint()
        for arguments in [["rm"], ["lock"], ["unlock"], ["show"], ["cat"]] {
            let result = larder(arguments + ["--dir", fixture.dir, "important.txt"])
            #expect(result.code != 0, "\(arguments)")
            #expect(!result.stdout.contains("victim's data"), "\(arguments) printed the victim's file")
            #expect(fixture.sentinel.fingerprint() == before, "\(arguments) changed the victim's folder")
        }
        for arguments in [["ls"], ["stats"], ["verify"], ["verify", "--repair"], ["gc"]] {
            _ = larder(arguments + ["--dir", fixture.dir])
            #expect(fixture.sentinel.fingerprint() == before, "\(arguments) changed the victim's folder")
        }
        fixture.put("important.txt", "mine")
        #expect(fixture.sentinel.fingerprint() == before)
        #expect(larder(["cat", "--dir", fixture.dir, "important.txt"]).stdout == "mine")
    }

    /// Attack 7: `show` (and `cat`) followed a record-path link to a file outside the root.
    @Test func showAndCatDoNotFollowALinkedRecord() throws {
        let fixture = Fixture()
        defer { fixture.temp.remove() }
        fixture.put("secret", "placeholder")
        let outside = fixture.temp.path("outside-record")
        try Self.record("TOPSECRET").write(to: URL(fileURLWithPath: outside))
        _ = unlink(fixture.path("secret"))
        #expect(HostileFiles.symlink(outside, at: fixture.path("secret")))
        for command in ["show", "cat"] {
            let result = larder([command, "--dir", fixture.dir, "secret"])
            #expect(result.code == 1)
            #expect(!result.stdout.contains("TOPSECRET") && !result.stdout.contains("544f50"), "\(command) read through the link")
        }
        // A link is no record the cache wrote: no record to show, and the link stays.
        #expect(larder(["show", "--dir", fixture.dir, "secret"]).stdout.isEmpty)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: fixture.path("secret"))) == outside)
    }

    /// Attack 10: `verify --repair` removed folders recursively.
    @Test func repairUnlinksFilesOnly() throws {
        let fixture = Fixture()
        defer { fixture.temp.remove() }
        fixture.put("folder-record", "x")
        fixture.put("damaged", "y")
        let folder = fixture.path("folder-record")
        _ = unlink(folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: folder + "/keep", contents: Data("keep".utf8))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: fixture.path("damaged")))
        bytes[bytes.count - 1] ^= 1
        try bytes.write(to: URL(fileURLWithPath: fixture.path("damaged")))
        // The folder is foreign (no record): --repair leaves it and removes the damaged record.
        let result = larder(["verify", "--dir", fixture.dir, "--repair", "--json"])
        #expect(result.code == 1)
        #expect(FileManager.default.contents(atPath: folder + "/keep") == Data("keep".utf8))
        #expect(!FileManager.default.fileExists(atPath: fixture.path("damaged")))
        // Asked to remove foreign files, it still never removes a folder, and says so.
        let foreign = larder(["verify", "--dir", fixture.dir, "--repair", "--remove-foreign"])
        #expect(foreign.code == 3, "a folder it may not remove is a failure to report")
        #expect(foreign.stderr.contains("a folder"))
        #expect(FileManager.default.contents(atPath: folder + "/keep") == Data("keep".utf8))
    }

    /// Attack 9: a 4 GiB sparse record made `verify` allocate 4 GiB; now it is reported as too
    /// large without being read, and a sound 3 MB record is checked in chunks.
    @Test func verifyReportsSparseRecordsAndStreamsLargeOnes() throws {
        let fixture = Fixture()
        defer { fixture.temp.remove() }
        fixture.put("huge", "x")
        let big = Data((0 ..< 3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        #expect(larder(["put", "--dir", fixture.dir, "big"], input: big).code == 0)
        let header = RecordHeader(updateTimeSec: 1_700_000_000, payloadSizeBytes: UInt64((1 << 32) - 64))
        #expect(HostileFiles.makeSparse(fixture.path("huge"), prefix: header.encoded(), length: 1 << 32))
        let result = larder(["verify", "--dir", fixture.dir, "--json"])
        let object = try #require(try parseJSON(result.stdout) as? [String: Any])
        #expect(object["checked"] as? Int == 2)
        let corrupt = try #require(object["corrupt"] as? [[String: Any]])
        #expect(corrupt.map { $0["reason"] as? String } == ["too-large"])
        #expect(larder(["cat", "--dir", fixture.dir, "big"]).stdoutData == big)
        // Reported, not removed: an application may allow records above the default maximum.
        let repair = larder(["verify", "--dir", fixture.dir, "--repair"])
        #expect(repair.code == 1 && repair.stderr.contains("left hu/huge"))
        #expect(FileManager.default.fileExists(atPath: fixture.path("huge")))
    }

    /// Attack 8: a header ttl of `UInt64.max` trapped `ls`; `put --ttl 1e30` trapped the store.
    @Test func outOfRangeTTLsNeverTrap() throws {
        let fixture = Fixture()
        defer { fixture.temp.remove() }
        fixture.put("forever", "x")
        try Self.record("payload", ttl: .max, updateTime: .max).write(to: URL(fileURLWithPath: fixture.path("forever")))
        for arguments in [["ls"], ["ls", "--json"], ["stats"], ["show", "forever"], ["verify"]] {
            #expect(larder(arguments + ["--dir", fixture.dir]).code == 0, "\(arguments)")
        }
        fixture.put("later", "y", ["--ttl", "1e30"])
        let rows = try #require(try parseJSON(larder(["ls", "--dir", fixture.dir, "--json"]).stdout) as? [[String: Any]])
        #expect(rows.compactMap { $0["ttl"] as? Int } == [Int(RecordHeader.maximumTTL), Int(RecordHeader.maximumTTL)])
    }

    /// Attack 6: FIFOs hung `put` (holding the lock), `stats` and `show`.
    @Test(arguments: [
        ".larder.lock", ".larder", ".larder-index", ".larder-changes", ".larder-changes-shm", ".larder-sharing", ".larder-shared-index",
        "fi/fifo", "fi",
    ])
    func fifosNeverBlockACommand(name: String) throws {
        let fixture = Fixture()
        defer { fixture.temp.remove() }
        fixture.put("fifo", "x")
        fixture.put("other", "y")
        let path = fixture.dir + "/" + name
        try? FileManager.default.removeItem(atPath: path)
        #expect(HostileFiles.mkfifo(path))
        for arguments in [["ls"], ["stats"], ["show", "fifo"], ["cat", "fifo"], ["verify"], ["put", "new"], ["rm", "fifo"], ["gc"]] {
            let result = larder(arguments + ["--dir", fixture.dir], input: Data("z".utf8))
            #expect([0, 1, 3].contains(result.code), "\(name): \(arguments) \(result.stderr)")
        }
        if name == ".larder.lock" {
            #expect(larder(["put", "--dir", fixture.dir, "new"], input: Data("z".utf8)).stderr.contains("lock file"))
        }
    }

    /// The fuzz, command side: every command over folders of random links, FIFOs,
    /// folders and files at record, shard and Larder's own paths; nothing outside the root changes.
    @Test func everyCommandOverHostileFolders() throws {
        let fixture = Fixture()
        defer { fixture.temp.remove() }
        let baseline = fixture.sentinel.fingerprint()
        let keys = ["important.txt", "aa", "inner", "b", "zz-login"]
        var random = SplitMix64(seed: 0x1919_C11)
        let iterations = Int(ProcessInfo.processInfo.environment["LARDER_HOSTILE_ITERATIONS"] ?? "") ?? 40
        var codes: [Int32: Int] = [:]
        for iteration in 0 ..< iterations {
            try? FileManager.default.removeItem(atPath: fixture.dir)
            for key in keys where random.below(2) == 0 { fixture.put(key, "\(key) \(iteration)") }
            try? FileManager.default.createDirectory(atPath: fixture.dir, withIntermediateDirectories: true)
            var targets = [
                ".larder", ".larder.lock", ".larder-index", ".larder-tmp", ".larder-changes", ".larder-changes-shm", ".larder-sharing",
                ".larder-shared-index", "x",
            ].map { fixture.dir + "/" + $0 }
            for key in keys {
                targets.append(fixture.path(key))
                targets.append((fixture.path(key) as NSString).deletingLastPathComponent)
            }
            for _ in 0 ..< 1 + random.below(4) {
                let target = targets[random.below(targets.count)]
                var info = stat()
                let parent = (target as NSString).deletingLastPathComponent
                // Never plant through a link the fuzz planted itself.
                guard parent == fixture.dir || (lstat(parent, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR) else { continue }
                if target.hasSuffix("/im") || target.hasSuffix("/aa"), random.below(2) == 0 {
                    try? FileManager.default.removeItem(atPath: target)
                    _ = HostileFiles.symlink(fixture.sentinel.root + (target.hasSuffix("/aa") ? "/inner" : ""), at: target)
                } else {
                    HostilePlant.allCases[random.below(HostilePlant.allCases.count)].plant(at: target, sentinel: fixture.sentinel)
                }
            }
            let key = keys[random.below(keys.count)]
            let commands: [[String]] = [
                ["ls"], ["ls", "--json"], ["stats"], ["stats", "--json"], ["show", key], ["cat", key], ["verify"],
                ["export", fixture.temp.path("export-\(iteration)")], ["report", "--html", fixture.temp.path("report-\(iteration).html")],
                ["lock", key], ["unlock", key], ["put", key], ["rm", key], ["gc"], ["verify", "--repair"],
            ]
            for arguments in commands {
                let result = larder(arguments + ["--dir", fixture.dir], input: Data("fuzz".utf8))
                codes[result.code, default: 0] += 1
                #expect([0, 1, 3].contains(result.code), "iteration \(iteration): \(arguments): \(result.code) \(result.stderr)")
                #expect(
                    fixture.sentinel.fingerprint() == baseline, "iteration \(iteration): \(arguments) changed something outside the root")
                #expect(
                    !result.stdout.contains("victim's data") && !result.stdout.contains("token=abc"),
                    "iteration \(iteration): \(arguments) printed a file outside the root")
            }
        }
        print("hostile folders through the CLI: \(iterations) iterations, exit codes \(codes.sorted { $0.key < $1.key })")
    }
}
