import Foundation
import Larder
import Testing
@testable import LarderCLI

/// `larder import --from cachehandler`.
@Suite struct ImportCommandTests {
    static let now = 1_700_000_000
    var at: [String] { ["--now", String(Self.now)] }

    func name(_ key: String) -> String { sha256(Data(key.utf8)) }

    /// A CacheHandler folder: two live entries, one expired, one that is not JSON.
    func makeFolder(_ temp: TemporaryDirectory) throws -> (writer: CacheHandlerFolderWriter, json: [String: Data]) {
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let recent = Date(timeIntervalSince1970: Double(Self.now - 3600))
        var json: [String: Data] = [:]
        json["https://example.com/feed"] = try writer.write(
            ["items": [1, 2, 3]], named: name("https://example.com/feed"), modified: recent
        ).json
        json["token"] = try writer.write("abc", named: name("token"), modified: recent).json
        try writer.write("old", named: name("old"), modified: Date(timeIntervalSince1970: Double(Self.now - 7 * 86400)))
        try writer.writeRaw(Data("garbage".utf8), named: name("garbage"), modified: recent)
        return (writer, json)
    }

    @Test func importsEntriesThatCatThenReadsByOriginalKeyAndListsEachSkippedFile() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (writer, json) = try makeFolder(temp)
        let dir = temp.path("cache")
        let result = larder(["import", "--from", "cachehandler", writer.folder.path, "--dir", dir] + at)
        // A file that is not an entry: exit 1, the others imported all the same.
        #expect(result.code == 1, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("imported 2 entries from \(writer.folder.path) into \(dir); skipped 2 files\n"), "\(result.stdout)")
        #expect(result.stdout.contains("  \(name("old"))  expired  expired 2023-11-13 22:13:20 UTC, 6 days after its modification time\n"))
        #expect(result.stdout.contains("  \(name("garbage"))  not-json  not JSON\n"))
        for (key, payload) in json {
            #expect(larder(["cat", "--dir", dir, key] + at).stdoutData == payload, "\(key)")
        }
        let rows = try #require(try parseJSON(larder(["ls", "--dir", dir, "--json"] + at).stdout) as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { $0["ttl"] as? Int == 518_400 })
        #expect(Set(rows.compactMap { $0["updateTime"] as? Int }) == [Self.now - 3600])
    }

    @Test func aCleanFolderExitsZeroAndASecondImportFindsEverythingPresent() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let writer = try CacheHandlerFolderWriter(folder: temp.appending("URLCache"))
        let recent = Date(timeIntervalSince1970: Double(Self.now - 10))
        try writer.write(["a": 1], named: name("a"), modified: recent)
        try writer.write([true], named: name("b"), modified: recent)
        // Expired files are not a problem with the folder.
        try writer.write("old", named: name("old"), modified: Date(timeIntervalSince1970: Double(Self.now - 7 * 86400)))
        let dir = temp.path("cache")
        let first = larder(["import", "--from", "cachehandler", writer.folder.path, "--dir", dir] + at)
        #expect(first.code == 0, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.hasPrefix("imported 2 entries"))
        let second = larder(["import", "--from", "CacheHandler", writer.folder.path, "--dir", dir, "--json"] + at)
        #expect(second.code == 0)
        let object = try #require(try parseJSON(second.stdout) as? [String: Any])
        #expect(object["importedCount"] as? Int == 0)
        #expect(object["skippedCount"] as? Int == 3)
        let skipped = try #require(object["skipped"] as? [[String: Any]])
        #expect(skipped.compactMap { $0["reason"] as? String }.sorted() == ["expired", "present", "present"])
        let expired = try #require(skipped.first { $0["reason"] as? String == "expired" })
        #expect(expired["file"] as? String == name("old"))
        #expect(expired["expiredAt"] as? Int == Self.now - 7 * 86400 + 518_400)
    }

    @Test func jsonOutputListsImportedNamesAndExactFileNames() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (writer, _) = try makeFolder(temp)
        // A hostile file name: control characters are escaped on the terminal, exact in JSON.
        let hostile = "evil\u{1B}]52;c;AAAA\u{07}\nname"
        try writer.writeRaw(Data("x".utf8), named: hostile, modified: Date(timeIntervalSince1970: Double(Self.now)))
        let dir = temp.path("cache")
        let human = larder(["import", "--from", "cachehandler", writer.folder.path, "--dir", dir] + at)
        #expect(human.stdout.contains(#"  evil\e]52;c;AAAA\x07\nname  not-a-hash"#), "\(human.stdout)")
        #expect(!human.stdout.contains("\u{1B}"))
        try FileManager.default.removeItem(atPath: dir)
        let result = larder(["import", "--from", "cachehandler", writer.folder.path, "--dir", dir, "--json"] + at)
        #expect(result.code == 1)
        let object = try #require(try parseJSON(result.stdout) as? [String: Any])
        #expect(Set(object["imported"] as? [String] ?? []) == [name("https://example.com/feed"), name("token")])
        let files = (object["skipped"] as? [[String: Any]] ?? []).compactMap { $0["file"] as? String }
        #expect(Set(files) == [hostile, name("old"), name("garbage")])
        #expect(object["directory"] as? String == dir)
    }

    @Test func usageErrorsExitTwo() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("cache")
        let missingFrom = larder(["import", temp.path("URLCache"), "--dir", dir])
        #expect(missingFrom.code == 2)
        #expect(missingFrom.stderr.contains("--from cachehandler"))
        let otherFormat = larder(["import", "--from", "nscache", temp.path("URLCache"), "--dir", dir])
        #expect(otherFormat.code == 2)
        #expect(otherFormat.stderr.contains("'nscache'"))
        #expect(larder(["import", "--from", "cachehandler", "--dir", dir]).code == 2)
        #expect(larder(["import", "--from", "cachehandler", "a", "b", "--dir", dir]).code == 2)
        #expect(!FileManager.default.fileExists(atPath: dir))
    }

    @Test func aMissingSourceOrACacheWithoutSha256KeysExitsThree() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (writer, _) = try makeFolder(temp)
        let missing = larder(["import", "--from", "cachehandler", temp.path("nowhere"), "--dir", temp.path("cache")])
        #expect(missing.code == 3)
        #expect(missing.stderr.contains("nowhere"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.path("cache")))
        let verbatim = temp.path("spt")
        #expect(larder(["put", "--dir", verbatim, "--keys", "verbatim", "k"], input: Data("v".utf8)).code == 0)
        let refused = larder(["import", "--from", "cachehandler", writer.folder.path, "--dir", verbatim])
        #expect(refused.code == 3)
        #expect(refused.stderr.contains("sha256"), "\(refused.stderr)")
        #expect(larder(["ls", "--dir", verbatim, "--json"]).stdout.contains("\"k\""))
    }

    @Test func aHeldDirectoryExitsThreeNamingThePID() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (writer, _) = try makeFolder(temp)
        let holder = try DiskCache(options: DiskCacheOptions(directory: temp.appending("cache")))
        defer { holder.close() }
        let result = larder(["import", "--from", "cachehandler", writer.folder.path, "--dir", temp.path("cache"), "--wait", "0"])
        #expect(result.code == 3)
        #expect(result.stderr.contains("in use by process \(getpid())"), "\(result.stderr)")
    }
}
