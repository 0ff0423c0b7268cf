import Foundation
import Larder
import Testing
@testable import LarderCLI

@Suite struct VerifyExportReportTests {
    /// A Larder directory with three records, one of whose payload bytes is then flipped.
    static func plantedCorruption(in temp: TemporaryDirectory) throws -> (dir: String, corruptFile: String) {
        let dir = temp.path("c")
        for (key, value) in [("alpha", "first payload"), ("beta", "second payload"), ("gamma", "third payload")] {
            #expect(larder(["put", "--dir", dir, key], input: Data(value.utf8)).code == 0)
        }
        let name = SHA256Hash.hex(of: "beta")
        let path = DiskLayout(root: dir).path(for: name)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        return (dir, name)
    }

    @Test func verifyFindsPlantedCorruptionAndRepairRemovesIt() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (dir, name) = try Self.plantedCorruption(in: temp)
        let ls = larder(["ls", "--dir", dir])
        #expect(!ls.stdout.contains("corrupt ("), "ls checks headers only; the payload CRC is verify's job")
        let result = larder(["verify", "--dir", dir, "--json"])
        #expect(result.code == 1)
        let report = try #require(try parseJSON(result.stdout) as? [String: Any])
        #expect(report["checked"] as? Int == 3)
        let corrupt = try #require(report["corrupt"] as? [[String: Any]])
        #expect(corrupt.count == 1)
        #expect(corrupt.first?["key"] as? String == "beta")
        #expect(corrupt.first?["reason"] as? String == "payload-crc")
        #expect((corrupt.first?["file"] as? String)?.hasSuffix(name) == true)

        let repaired = larder(["verify", "--dir", dir, "--repair"])
        #expect(repaired.code == 1, "corruption was found")
        #expect(repaired.stdout.contains("removed 1 corrupt record"))
        #expect(!FileManager.default.fileExists(atPath: DiskLayout(root: dir).path(for: name)))
        let clean = larder(["verify", "--dir", dir])
        #expect(clean.code == 0)
        #expect(clean.stdout.contains("2 sound, 0 corrupt"))
    }

    /// A record whose header sets a flag this version does not know (a newer writer's) is
    /// listed as unsupported, is not corrupt to `verify`, and stays through `--repair`.
    @Test func aRecordWithUnknownFlagsIsListedAsUnsupportedAndKept() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("f")
        for (key, value) in [("alpha", "first payload"), ("beta", "second payload")] {
            #expect(larder(["put", "--dir", dir, key], input: Data(value.utf8)).code == 0)
        }
        let path = DiskLayout(root: dir).path(for: SHA256Hash.hex(of: "beta"))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        var header = try RecordHeader.decode(Array(bytes.prefix(RecordHeader.size)))
        header.flags = RecordFlags(rawValue: header.flags.rawValue | 1 << 20)
        bytes.replaceSubrange(0 ..< RecordHeader.size, with: header.encoded())
        try bytes.write(to: URL(fileURLWithPath: path))

        let ls = larder(["ls", "--dir", dir])
        #expect(ls.stdout.contains("unsupported"), "\(ls.stdout)")
        let verify = larder(["verify", "--dir", dir, "--json"])
        let report = try #require(try parseJSON(verify.stdout) as? [String: Any])
        #expect((report["corrupt"] as? [[String: Any]])?.isEmpty == true)
        _ = larder(["verify", "--dir", dir, "--repair"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        let cat = larder(["cat", "--dir", dir, "beta"])
        #expect(cat.code == 1 && cat.stdout.isEmpty)
        #expect(larder(["cat", "--dir", dir, "alpha"]).stdout == "first payload")
    }

    /// A folder without Larder's metadata is SPT's, and the tool judges expiry as SPT does:
    /// the time rounded to the nearest second. Stored at 1000 and seen at 1600.6 with 600 s,
    /// the record has expired (1601 - 1000 > 600); at 1600.4 it has not.
    @Test func anSPTFolderIsJudgedWithSPTsRounding() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        let payload = Array("payload".utf8)
        let header = RecordHeader(updateTimeSec: 1000, payloadSizeBytes: UInt64(payload.count))
        try FileManager.default.createDirectory(atPath: dir + "/ke", withIntermediateDirectories: true)
        try Data(header.encoded() + payload).write(to: URL(fileURLWithPath: dir + "/ke/key"))
        for (now, status) in [("1600.6", "expired"), ("1600.4", "ok")] {
            let ls = larder(["ls", "--dir", dir, "--json", "--now", now, "--default-expiration", "600"])
            let entries = try #require(try parseJSON(ls.stdout) as? [[String: Any]], "\(ls.stdout)")
            #expect(entries.first?["status"] as? String == status, "at \(now)")
        }
    }

    @Test func verifyOnTheSPTFixtureListsEachPlantedCorruption() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let result = larder(["verify", "--dir", dir, "--json"] + Fixtures.clockArguments(manifest))
        #expect(result.code == 1)
        let report = try #require(try parseJSON(result.stdout) as? [String: Any])
        let corrupt = try #require(report["corrupt"] as? [[String: Any]])
        let found = Dictionary(uniqueKeysWithValues: corrupt.map { ($0["file"] as! String, $0["reason"] as! String) })
        let planted = Dictionary(
            uniqueKeysWithValues: manifest.records.compactMap { r in r.isForeign ? nil : r.corruption.map { (r.file, $0) } })
        #expect(found == planted)
        // The file planted without the magic is no record: listed apart, and left by --repair.
        let foreign = try #require(report["foreign"] as? [[String: Any]])
        #expect(foreign.map { $0["file"] as? String } == manifest.records.filter(\.isForeign).map(\.file))
        let repaired = larder(["verify", "--dir", dir, "--repair"] + Fixtures.clockArguments(manifest))
        #expect(repaired.code == 1)
        #expect(larder(["verify", "--dir", dir]).code == 0)
        for record in manifest.records where record.corruption == nil || record.isForeign {
            #expect(FileManager.default.fileExists(atPath: dir + "/" + record.file), "repair keeps sound records and foreign files")
        }
    }

    @Test func exportWritesPayloadsUnderNamesThatRoundTrip() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        let items = ["https://img.example/a.png?x=1": "A", ".dotfile": "B", "plain": "C", "ключ": "D"]
        for (key, value) in items {
            #expect(larder(["put", "--dir", dir, key], input: Data(value.utf8)).code == 0)
        }
        let out = temp.path("out")
        let result = larder(["export", out, "--dir", dir])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(result.stdout.contains("exported 4 payloads"))
        let names = try FileManager.default.contentsOfDirectory(atPath: out)
        #expect(names.count == 4)
        for name in names {
            let key = try #require(ExportName.decode(name))
            let payload = try String(contentsOfFile: out + "/" + name, encoding: .utf8)
            #expect(items[key] == payload, "\(name) → \(key)")
        }
    }

    @Test func exportSkipsCorruptSPTRecords() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let out = temp.path("out")
        let result = larder(["export", out, "--dir", dir])
        #expect(result.code == 1)
        let sound = manifest.records.filter { $0.corruption == nil }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).count == sound.count)
        for record in sound {
            let data = try Data(contentsOf: URL(fileURLWithPath: out + "/" + record.key))
            #expect(sha256(data) == record.payloadSha256)
        }
    }

    @Test func reportIsOneSelfContainedPageWithTheTotals() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let page = temp.path("report.html")
        let result = larder(["report", "--dir", dir, "--html", page] + Fixtures.clockArguments(manifest))
        #expect(result.code == 0, "\(result.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let records = manifest.records.filter { !$0.isForeign }
        let total = try records.reduce(0) { sum, record in
            sum + (try FileManager.default.attributesOfItem(atPath: dir + "/" + record.file)[.size] as! Int)
        }
        #expect(html.contains("\(records.count) records"))
        #expect(html.contains("\(total) bytes"))
        #expect(html.contains(HumanFormat.size(total)))
        #expect(html.contains("<svg"))
        #expect(html.contains("data:image/png;base64,"))
        #expect(!html.contains("http://") && !html.contains("https://"), "no network")
        for record in records where record.corruption != nil {
            #expect(html.contains(record.key))
        }
        #expect(larder(["report", "--dir", dir]).code == 2, "--html is required")
    }
}

@Suite struct ReportThumbnailTests {
    @Test func thumbnailsAreCappedInCountAndSize() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let cache = try DiskCache(options: DiskCacheOptions(directory: temp.url.appendingPathComponent("c")))
        for i in 0 ..< ReportPage.maximumThumbnails + 2 {
            try cache.store(DemoData.gradientPNG(width: 4, height: 4, seed: i), forKey: "img-\(i).png")
        }
        // An image over the size cap: a PNG signature followed by padding.
        var large = DemoData.gradientPNG(width: 4, height: 4, seed: 0)
        large.append(Data(count: ReportPage.maximumThumbnailBytes))
        try cache.store(large, forKey: "aaa-large.png")
        cache.close()
        let page = temp.path("r.html")
        #expect(larder(["report", "--dir", temp.path("c"), "--html", page]).code == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.components(separatedBy: "data:image/png;base64,").count - 1 == ReportPage.maximumThumbnails)
        #expect(
            ReportPage.maximumThumbnails == 48 && ReportPage.maximumThumbnailBytes == 256 * 1024, "the numbers in 'larder report --help'")
        #expect(!html.contains("alt=\"aaa-large.png\""))
    }
}
