import Foundation
import Larder
import Testing
@testable import LarderCLI

/// `ls`, `show`, `cat`, `stats` on a copy of the SPT fixture, checked against its manifest.
@Suite struct InspectCommandTests {
    @Test func lsJSONAgreesWithTheManifest() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let result = larder(["ls", "--dir", dir, "--json"] + Fixtures.clockArguments(manifest))
        #expect(result.code == 0, "\(result.stderr)")
        let rows = try #require(try parseJSON(result.stdout) as? [[String: Any]])
        #expect(rows.count == manifest.records.count)
        let byFile = Dictionary(uniqueKeysWithValues: rows.map { ($0["file"] as! String, $0) })
        for record in manifest.records {
            let row = try #require(byFile[record.file], "\(record.file)")
            #expect(row["status"] as? String == record.expectedStatus, "\(record.file)")
            // A file without the magic is no record: no key, no corruption, listed as foreign.
            #expect(row["key"] as? String == (record.isForeign ? nil : record.key))
            #expect(row["corruption"] as? String == (record.isForeign ? nil : record.corruption))
            if record.corruption == nil {
                #expect(row["lockCount"] as? Int == record.refCount)
                #expect(row["ttl"] as? Int == record.ttl)
                #expect(row["updateTime"] as? Int == record.updateTime)
                #expect(row["payloadSize"] as? Int == record.payloadSize)
                #expect((row["expirationTime"] is NSNull) == (record.refCount > 0))
            }
        }
    }

    @Test func lsTableSortsAndStaysPlainWithoutATerminal() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let result = larder(["ls", "--dir", dir, "--sort", "size"] + Fixtures.clockArguments(manifest))
        #expect(result.code == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("KEY") == true)
        // The records, the header and the totals, and the foreign file and its line.
        #expect(lines.count == manifest.records.count + 3)
        #expect(!result.stdout.contains("\u{1B}"))
        let largest = manifest.records.max { $0.payloadSize < $1.payloadSize }!
        #expect(lines[1].hasPrefix(largest.key))
        #expect(!result.stdout.contains("corrupt (magic)") && result.stdout.contains("foreign"))
        #expect(lines[lines.count - 2].contains("\(manifest.records.count - 1) records"))
        #expect(lines.last!.hasPrefix("1 foreign file"))
        let coloured = larder(["ls", "--dir", dir] + Fixtures.clockArguments(manifest), terminal: true)
        #expect(coloured.stdout.contains("\u{1B}[31m"))
    }

    @Test func catWritesThePayloadAlone() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        for record in manifest.records where record.corruption == nil {
            let result = larder(["cat", "--dir", dir, record.key] + Fixtures.clockArguments(manifest))
            #expect(result.code == 0)
            #expect(result.stdoutData.count == record.payloadSize)
            #expect(sha256(result.stdoutData) == record.payloadSha256, "\(record.key)")
            #expect(result.stderr.contains("expired") == !record.readable)
        }
        let corrupt = manifest.records.first { $0.corruption != nil && !$0.isForeign }!
        let refused = larder(["cat", "--dir", dir, corrupt.key])
        #expect(refused.code == 1)
        #expect(refused.stdoutData.isEmpty)
        #expect(refused.stderr.contains("corrupt"))
        let missing = larder(["cat", "--dir", dir, "no-such-key"])
        #expect(missing.code == 1)
        #expect(missing.stderr.contains("no record for key 'no-such-key'"))
    }

    @Test func showDecodesEveryHeaderField() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let record = manifest.records.first { $0.corruption == nil && $0.refCount > 0 }!
        let result = larder(["show", "--dir", dir, record.key] + Fixtures.clockArguments(manifest))
        #expect(result.code == 0)
        for field in [
            "magic", "headerSize", "refCount", "reserved1", "ttl", "updateTimeSec", "payloadSizeBytes", "reserved2", "reserved3",
            "reserved4", "flags", "crc",
        ] {
            #expect(result.stdout.contains("\n\(field) "), "\(field)")
        }
        #expect(result.stdout.contains("\(record.updateTime)"))
        #expect(result.stdout.contains("\(record.payloadSize)"))
        #expect(result.stdout.contains("(locked)"))
        #expect(result.stdout.contains("PNG image"))
        let corrupt = manifest.records.first { $0.corruption == "crc" }!
        let bad = larder(["show", "--dir", dir, corrupt.key])
        #expect(bad.code == 1)
        #expect(bad.stdout.contains("corrupt (crc)"))
    }

    @Test func statsCountsWhatTheManifestSays() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let result = larder(["stats", "--dir", dir, "--json"] + Fixtures.clockArguments(manifest))
        #expect(result.code == 0)
        let stats = try #require(try parseJSON(result.stdout) as? [String: Any])
        #expect(stats["records"] as? Int == manifest.records.count { !$0.isForeign })
        #expect(stats["corrupt"] as? Int == manifest.records.count { $0.corruption != nil && !$0.isForeign })
        #expect(stats["foreign"] as? Int == manifest.records.count { $0.isForeign })
        #expect(stats["ok"] as? Int == manifest.records.count { $0.readable })
        #expect(stats["keyEncoding"] as? String == "verbatim")
        #expect(stats["hasMetadata"] as? Bool == false)
        let text = larder(["stats", "--dir", dir] + Fixtures.clockArguments(manifest))
        #expect(text.stdout.contains("SPTPersistentCache"))
        #expect(text.stdout.contains("\(manifest.records.count { !$0.isForeign }) ("))
    }

    @Test func inspectingLeavesTheDirectoryUnchangedAndWorksWhileAWriterHoldsIt() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        var options = DiskCacheOptions(directory: temp.url.appendingPathComponent("c"))
        options.keyEncoding = .sha256
        let writer = try DiskCache(options: options)
        defer { writer.close() }
        try writer.store(Data("hello".utf8), forKey: "greeting")
        let dir = options.directory.path
        let ls = larder(["ls", "--dir", dir, "--json"])
        #expect(ls.code == 0)
        let rows = try #require(try parseJSON(ls.stdout) as? [[String: Any]])
        #expect(rows.map { $0["key"] as? String } == ["greeting"])
        #expect(larder(["cat", "--dir", dir, "greeting"]).stdout == "hello")
        #expect(larder(["stats", "--dir", dir]).stdout.contains("process \(getpid())") == false, "the tool does not report itself")
    }
}
