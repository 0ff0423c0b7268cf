import Foundation
import Testing

/// Runs the built `larder` executable (the test target depends on it, so `swift test` builds it).
@Suite struct EndToEndTests {
    /// `.build/<config>/larder`, beside the test bundle.
    static var executable: URL? {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0 ..< 4 {
            directory = directory.deletingLastPathComponent()
            let candidate = directory.appendingPathComponent("larder")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: candidate.path)
            {
                return candidate
            }
        }
        // Tests/LarderCLITests/<this file> → the checkout.
        let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let fallback = checkout.appendingPathComponent(".build/debug/larder")
        return FileManager.default.isExecutableFile(atPath: fallback.path) ? fallback : nil
    }

    static func run(_ arguments: [String]) throws -> (code: Int32, stdout: Data, stderr: String) {
        let process = Process()
        let executable: URL = try #require(Self.executable, "the larder executable was not built")
        process.executableURL = executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "LARDER_NOW")
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, stdout, String(decoding: stderr, as: UTF8.self))
    }

    @Test func lsJSONAndCatOnTheSPTFixture() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let ls = try Self.run(["ls", "--dir", dir, "--json"] + Fixtures.clockArguments(manifest))
        #expect(ls.code == 0, "\(ls.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: ls.stdout) as? [[String: Any]])
        let statuses = Dictionary(uniqueKeysWithValues: rows.map { ($0["file"] as! String, $0["status"] as! String) })
        for record in manifest.records {
            #expect(statuses[record.file] == record.expectedStatus)
        }
        let readable = manifest.records.first { $0.readable }!
        let cat = try Self.run(["cat", "--dir", dir, readable.key])
        #expect(cat.code == 0)
        #expect(sha256(cat.stdout) == readable.payloadSha256)
    }

    @Test func verifyFindsPlantedCorruptionAndReportHasTheTotals() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let (dir, _) = try VerifyExportReportTests.plantedCorruption(in: temp)
        let verify = try Self.run(["verify", "--dir", dir])
        #expect(verify.code == 1)
        #expect(String(decoding: verify.stdout, as: UTF8.self).contains("payload-crc"))
        let page = temp.path("r.html")
        let report = try Self.run(["report", "--dir", dir, "--html", page])
        #expect(report.code == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("3 records"))
        #expect(html.contains("payload-crc"))
    }

    @Test func usageErrorsExitWith2() throws {
        let result = try Self.run(["ls", "--no-such-option"])
        #expect(result.code == 2)
        #expect(result.stderr.contains("unknown option '--no-such-option'"))
        #expect(try Self.run(["--help"]).code == 0)
    }
}
