#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Testing
@testable import LarderCLI

/// The tool never changes a folder that is not a cache, and removes a file that is not a record
/// only through `verify --repair --remove-foreign`.
@Suite struct ForeignFolderCommandTests {
    /// Every command that changes a cache, with its arguments.
    static let changingCommands: [[String]] = [
        ["gc"], ["gc", "--size-limit", "1"], ["verify", "--repair"], ["verify", "--repair", "--remove-foreign"],
        ["lock", "notes.txt"], ["lock", "thesis.txt"], ["unlock", "thesis.txt"], ["rm", "thesis.txt"], ["rm", "ab"],
        ["put", "k"], ["put", "--keys", "verbatim", "thesis.txt"],
    ]
    /// Every command that only reads one.
    static let readingCommands: [[String]] = [
        ["ls"], ["ls", "--json"], ["stats"], ["stats", "--json"], ["verify"], ["show", "thesis.txt"],
    ]

    /// A folder of documents: `thesis.txt`, `ab`, `sub/notes.md`, private.
    static func makeDocuments(at root: String) {
        try? FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        chmod(root, 0o700)
        for (name, text) in [("thesis.txt", "chapter one"), ("ab", "x"), ("sub/notes.md", "# notes"), ("notes.txt", "n")] {
            _ = FileManager.default.createFile(atPath: root + "/" + name, contents: Data(text.utf8))
        }
    }

    /// Runs every command on `root` and expects each to refuse it, naming it, and change nothing.
    static func expectEveryCommandRefuses(_ root: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let source = root + "-source"
        try? FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let before = SentinelTree.fingerprint(of: root)
        for arguments in changingCommands + readingCommands + [["demo"], ["import", "--from", "cachehandler", source]] {
            let result = larder(arguments + ["--dir", root], input: Data("payload".utf8))
            #expect(result.code == 3, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
            #expect(result.stderr.contains(root), "\(arguments)", sourceLocation: sourceLocation)
            #expect(SentinelTree.fingerprint(of: root) == before, "\(arguments) changed the folder", sourceLocation: sourceLocation)
        }
        #expect(!FileManager.default.fileExists(atPath: root + "/.larder"), sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: root + "/.larder.lock"), sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: root + "/.larder-index"), sourceLocation: sourceLocation)
    }

    @Test func everyCommandRefusesAFolderOfDocuments() {
        let temp = TemporaryDirectory("larder-cli-foreign")
        defer { temp.remove() }
        let root = temp.path("docs")
        Self.makeDocuments(at: root)
        Self.expectEveryCommandRefuses(root)
        #expect(larder(["ls", "--dir", root]).stderr.contains("is not a cache"))
    }

    @Test func everyCommandRefusesACopyOfASystemFolder() throws {
        let temp = TemporaryDirectory("larder-cli-foreign")
        defer { temp.remove() }
        let root = temp.path("etc")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, 0o700)
        #expect(SentinelTree.copyTopLevelFiles(of: "/etc", into: root) > 5)
        Self.expectEveryCommandRefuses(root)
    }

    /// The SPT fixture with stray files: `gc` and `verify --repair` leave them, `ls`, `stats` and
    /// `verify` list them as foreign apart from the records, and `--remove-foreign` removes the
    /// files (not the folder) and counts them.
    @Test func strayFilesInAnSPTCacheAreListedAsForeignAndRemovedOnlyWhenAsked() throws {
        let temp = TemporaryDirectory("larder-cli-foreign")
        defer { temp.remove() }
        let root = temp.path("spt")
        try Fixtures.copySPTCache(to: root)
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        let strays = ["thesis.txt", "aa/aastray-notes", "aa/zz-elsewhere", "sub/notes.md"]
        for stray in strays { _ = FileManager.default.createFile(atPath: root + "/" + stray, contents: Data("mine".utf8)) }
        let fixtureForeign = "aa/aad0e75ab0a6828d0a9b37a68198cc9d70d84850"  // planted without the magic
        let manifest = try Fixtures.manifest()
        let clock = Fixtures.clockArguments(manifest)

        for arguments in [["gc"], ["gc", "--count-limit", "1"], ["verify", "--repair"]] {
            let result = larder(arguments + ["--dir", root] + clock)
            #expect(result.code != 3, "\(arguments): \(result.stderr)")
            for stray in strays { #expect(FileManager.default.fileExists(atPath: root + "/" + stray), "\(arguments) removed \(stray)") }
            #expect(FileManager.default.fileExists(atPath: root + "/" + fixtureForeign))
        }

        let listed = try #require(parseJSON(larder(["ls", "--json", "--dir", root] + clock).stdout) as? [[String: Any]])
        let foreign = Set(listed.filter { $0["status"] as? String == "foreign" }.compactMap { $0["file"] as? String })
        #expect(foreign == ["thesis.txt", "aa/aastray-notes", "aa/zz-elsewhere", "sub/", fixtureForeign])
        let stats = try #require(parseJSON(larder(["stats", "--json", "--dir", root] + clock).stdout) as? [String: Any])
        #expect(stats["foreign"] as? Int == 5)
        #expect(stats["records"] as? Int == listed.count - 5)
        #expect(larder(["stats", "--dir", root] + clock).stdout.contains("foreign             5 files"))

        let checked = try #require(parseJSON(larder(["verify", "--json", "--dir", root] + clock).stdout) as? [String: Any])
        #expect(checked["foreignCount"] as? Int == 5)
        #expect(larder(["verify", "--remove-foreign", "--dir", root]).code == 2)

        let removal = larder(["verify", "--repair", "--remove-foreign", "--json", "--dir", root] + clock)
        let report = try #require(parseJSON(removal.stdout) as? [String: Any])
        // Four files; the folder `sub/` stays (and is reported), so the exit says something failed.
        #expect(report["removedCount"] as? Int == 4)
        #expect(removal.code == 3)
        for stray in ["thesis.txt", "aa/aastray-notes", "aa/zz-elsewhere", fixtureForeign] {
            #expect(!FileManager.default.fileExists(atPath: root + "/" + stray), "\(stray)")
        }
        #expect(FileManager.default.fileExists(atPath: root + "/sub/notes.md"))
        let human = larder(["verify", "--repair", "--remove-foreign", "--dir", root] + clock)
        #expect(human.stdout.contains("removed 0 corrupt records and 0 foreign files"))
    }

    /// `gc` counts every file it removed: the corrupt records too.
    @Test func gcCountsTheCorruptRecordsItRemoves() throws {
        let temp = TemporaryDirectory("larder-cli-foreign")
        defer { temp.remove() }
        let root = temp.path("c")
        #expect(larder(["put", "--dir", root, "--keys", "verbatim", "good"], input: Data("g".utf8)).code == 0)
        #expect(larder(["put", "--dir", root, "--keys", "verbatim", "damaged"], input: Data("d".utf8)).code == 0)
        let path = DiskLayout(root: root).path(for: "damaged")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[20] ^= 0xFF  // the header's CRC no longer matches
        try bytes.write(to: URL(fileURLWithPath: path), options: .atomic)
        // Without the index images (a writer's alone, and the shared one the tool's sharing writers
        // leave), the next open reads every header and finds it.
        try? FileManager.default.removeItem(atPath: root + "/.larder-index")
        try? FileManager.default.removeItem(atPath: root + "/" + DiskLayout.sharedImageName)
        let result = larder(["gc", "--dir", root])
        #expect(result.code == 0)
        #expect(result.stdout.hasPrefix("removed 1 record (1 corrupt)"), "\(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// `demo --dir` on a cache it did not make refuses, and changes none of its records.
    @Test func demoRefusesACacheItDidNotMake() throws {
        let temp = TemporaryDirectory("larder-cli-foreign")
        defer { temp.remove() }
        let root = temp.path("real")
        for i in 0 ..< 20 { #expect(larder(["put", "--dir", root, "key-\(i)"], input: Data(count: 10_000)).code == 0) }
        let before = SentinelTree.fingerprint(of: root).filter { $0.key != ".larder.lock" }
        let result = larder(["demo", "--dir", root])
        #expect(result.code == 3)
        #expect(result.stderr.contains("did not make"))
        #expect(SentinelTree.fingerprint(of: root).filter { $0.key != ".larder.lock" } == before)
        let stats = try #require(parseJSON(larder(["stats", "--json", "--dir", root]).stdout) as? [String: Any])
        #expect(stats["records"] as? Int == 20)

        // Its own folder it reuses.
        let own = temp.path("demo")
        #expect(larder(["demo", "--dir", own]).code == 0)
        #expect(larder(["demo", "--dir", own]).code == 0)
    }

    /// `put --adopt` and `import --adopt` make a cache in a folder of documents on purpose;
    /// without the flag both refuse it. The documents stay byte for byte, listed as foreign,
    /// through every command that removes records.
    @Test func adoptMakesACacheBesideTheFilesAndKeepsThem() throws {
        let temp = TemporaryDirectory("larder-cli-foreign")
        defer { temp.remove() }
        let root = temp.path("docs")
        Self.makeDocuments(at: root)
        let documents = SentinelTree.fingerprint(of: root).filter { !$0.key.isEmpty }
        let source = temp.path("source")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)

        #expect(larder(["put", "--dir", root, "k"], input: Data("v".utf8)).code == 3)
        #expect(larder(["import", "--from", "cachehandler", source, "--dir", root]).code == 3)
        #expect(!FileManager.default.fileExists(atPath: root + "/.larder"))
        let imported = larder(["import", "--adopt", "--from", "cachehandler", source, "--dir", root])
        #expect(imported.code == 0, "\(imported.stderr)")
        let put = larder(["put", "--adopt", "--dir", root, "k"], input: Data("v".utf8))
        #expect(put.code == 0, "\(put.stderr)")
        #expect(FileManager.default.fileExists(atPath: root + "/.larder"))
        #expect(larder(["cat", "--dir", root, "k"]).stdoutData == Data("v".utf8))

        let ls = larder(["ls", "--dir", root])
        #expect(ls.stdout.contains("1 record,"), "\(ls.stdout)")
        #expect(ls.stdout.contains("4 foreign files"), "\(ls.stdout)")  // ab, notes.txt, sub/, thesis.txt
        for arguments in [["put", "k2"], ["rm", "k2"], ["gc"], ["gc", "--size-limit", "1"], ["verify", "--repair"]] {
            let result = larder(arguments + ["--dir", root], input: Data("w".utf8))
            #expect(result.code == 0, "\(arguments): \(result.stderr)")
        }
        let after = SentinelTree.fingerprint(of: root)
        for (path, print) in documents { #expect(after[path] == print, "\(path)") }
        #expect(larder(["put", "--help"]).stdout.contains("--adopt"))
    }
}
