import Foundation
import Larder
import Testing
@testable import LarderCLI

/// File names are bytes until shown: a cache holding the record `ab\u{FFFD}` and the planted
/// files `ab/ab\xff`, `ab/ab\xfe` and `ab\xfd` (names that are not UTF-8, and that all read as
/// the record's name when decoded with repairs) shows each file once, escaped, never takes one
/// for the record, and removes exactly them with `verify --repair --remove-foreign`.
@Suite struct UndecodableNameCommandTests {
    static let twin = "ab\u{FFFD}"
    static let now = ["--now", "1800000000"]

    /// The cache, and the planted files: folder, name, contents.
    static func makeCache(_ temp: TemporaryDirectory) -> (dir: String, planted: [(folder: String, name: [UInt8], bytes: [UInt8])]) {
        let dir = temp.path("c")
        #expect(larder(["put", "--dir", dir, "--keys", "verbatim", twin] + now, input: Data("kept".utf8)).code == 0)
        #expect(larder(["put", "--dir", dir, "--keys", "verbatim", "other"] + now, input: Data("more".utf8)).code == 0)
        // Valid record bytes under the names that are not UTF-8: only the names are wrong.
        let header = RecordHeader(ttl: 0, updateTimeSec: 1, payloadSizeBytes: 2, payloadChecksum: CRC32.checksum(of: [1, 2]))
        let planted: [(folder: String, name: [UInt8], bytes: [UInt8])] = [
            (dir + "/ab", Array("ab".utf8) + [0xFF], header.encoded() + [1, 2]),
            (dir + "/ab", Array("ab".utf8) + [0xFE], Array("not a record".utf8)),
            (dir, Array("ab".utf8) + [0xFD], Array("root".utf8)),
        ]
        for file in planted { #expect(RawFileNames.createFile(in: file.folder, named: file.name, contents: file.bytes)) }
        return (dir, planted)
    }

    @Test func lsStatsAndVerifyShowEachFileOnceAndEscaped() throws {
        let temp = TemporaryDirectory("larder-cli-names")
        defer { temp.remove() }
        let (dir, planted) = Self.makeCache(temp)

        let ls = larder(["ls", "--dir", dir] + Self.now)
        #expect(ls.code == 0)
        let lines = ls.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count { $0.hasPrefix(Self.twin + " ") } == 1, "\(ls.stdout)")
        for shown in [#"ab/ab\xFF"#, #"ab/ab\xFE"#, #"ab\xFD"#] {
            #expect(lines.count { $0.hasPrefix(shown + " ") && $0.hasSuffix("foreign") } == 1, "\(shown): \(ls.stdout)")
        }
        #expect(ls.stdout.contains("2 records,"))
        #expect(ls.stdout.contains("3 foreign files (\(planted.reduce(0) { $0 + $1.bytes.count }) B)"))
        #expect(lines.count { $0.contains("\u{FFFD}") } == 1, "\(ls.stdout)")

        let json = try #require(try parseJSON(larder(["ls", "--dir", dir, "--json"] + Self.now).stdout) as? [[String: Any]])
        #expect(json.count == 5)
        #expect(Set(json.compactMap { $0["file"] as? String }).count == 5)
        let foreign = json.filter { $0["status"] as? String == "foreign" }
        #expect(Set(foreign.compactMap { $0["fileBytes"] as? String }) == ["61622f6162ff", "61622f6162fe", "6162fd"])
        #expect(Set(foreign.compactMap { $0["size"] as? Int }) == Set(planted.map(\.bytes.count)))

        let stats = try #require(try parseJSON(larder(["stats", "--dir", dir, "--json"] + Self.now).stdout) as? [String: Any])
        #expect(stats["records"] as? Int == 2)
        #expect(stats["foreign"] as? Int == 3)

        let verify = larder(["verify", "--dir", dir] + Self.now)
        #expect(verify.code == 0)
        #expect(verify.stdout.contains("checked 2 records"), "\(verify.stdout)")
        for shown in [#"ab/ab\xFF"#, #"ab/ab\xFE"#, #"ab\xFD"#] {
            #expect(verify.stdout.components(separatedBy: shown + " ").count == 2, "\(shown): \(verify.stdout)")
        }

        let show = larder(["show", "--dir", dir, Self.twin] + Self.now)
        #expect(show.code == 0)
        #expect(show.stdout.contains(" ab/\(Self.twin)\n"), "\(show.stdout)")

        let report = larder(["report", "--dir", dir, "--html", temp.path("r.html")] + Self.now)
        #expect(report.stdout.contains(": 2 records"), "\(report.stdout)")
    }

    @Test func exportCountsWhatItWritesAndWritesEachPayloadOnce() throws {
        let temp = TemporaryDirectory("larder-cli-names")
        defer { temp.remove() }
        let (dir, _) = Self.makeCache(temp)
        let out = temp.path("out")
        let result = larder(["export", "--dir", dir, out] + Self.now)
        #expect(result.code == 0, "\(result.stdout)")
        #expect(result.stdout.contains("exported 2 payloads (8 B)"), "\(result.stdout)")
        #expect(!result.stdout.contains("skipped"))
        #expect(RawFileNames.names(in: out) == [Array("ab%EF%BF%BD".utf8), Array("other".utf8)])
        #expect(RawFileNames.contents(in: out, named: Array("ab%EF%BF%BD".utf8)) == Array("kept".utf8))
    }

    @Test func gcAndRepairLeaveThemAndRemoveForeignRemovesExactlyThem() throws {
        let temp = TemporaryDirectory("larder-cli-names")
        defer { temp.remove() }
        let (dir, planted) = Self.makeCache(temp)
        for arguments in [["gc"], ["gc", "--size-limit", "1"], ["verify", "--repair"]] {
            let result = larder(arguments + ["--dir", dir] + Self.now)
            #expect(result.code == 0, "\(arguments): \(result.stdout) \(result.stderr)")
            for file in planted { #expect(RawFileNames.contents(in: file.folder, named: file.name) == file.bytes, "\(arguments)") }
        }
        // `gc --size-limit 1` trimmed the records; store the one the test keeps again.
        #expect(larder(["put", "--dir", dir, Self.twin] + Self.now, input: Data("kept".utf8)).code == 0)

        let repair = larder(["verify", "--repair", "--remove-foreign", "--dir", dir] + Self.now)
        #expect(repair.code == 0, "\(repair.stderr)")
        #expect(repair.stdout.contains("removed 0 corrupt records and 3 foreign files"), "\(repair.stdout)")
        #expect(RawFileNames.names(in: dir + "/ab") == [Array(Self.twin.utf8)])
        #expect(!RawFileNames.names(in: dir).contains(Array("ab".utf8) + [0xFD]))
        #expect(larder(["cat", "--dir", dir, Self.twin] + Self.now).stdoutData == Data("kept".utf8))
        let after = larder(["ls", "--dir", dir] + Self.now)
        #expect(!after.stdout.contains("foreign"), "\(after.stdout)")
    }
}
