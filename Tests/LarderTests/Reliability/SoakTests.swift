import Foundation
import Testing

/// A short run of `larder-stress soak`: every tier under load from several threads and a
/// read-only second process. Four seconds say nothing about growth (the CI's 60-second release
/// run in `.ci/run` judges that), so this run checks what a short one can: every payload read
/// back verified, no call failed, the reader process verified what it read, and the report came out.
@Suite struct SoakTests {
    @Test func shortSoakVerifiesEveryTier() throws {
        let dir = TemporaryDirectory("larder-soak")
        defer { dir.remove() }
        let soak = try HelperProcess(
            "larder-stress",
            [
                "soak", "--seconds", "4", "--threads", "3", "--dir", dir.path, "--growth-check", "no", "--report", dir.path("samples.csv"),
            ])
        var lines: [String] = []
        while let line = soak.readLine() { lines.append(line) }
        soak.process.waitUntilExit()
        #expect(
            soak.process.terminationStatus == 0,
            "exit \(soak.process.terminationStatus) (3: wrong bytes, 4: a failed call, 6: the reader failed): \(lines)")
        let summary = try #require(lines.first { $0.hasPrefix("soak: ") && $0.contains("operations") })
        func number(before label: String) -> Int? {
            guard let range = summary.range(of: " " + label) else { return nil }
            return Int(summary[..<range.lowerBound].split(separator: " ").last ?? "")
        }
        #expect((number(before: "operations") ?? 0) > 0)
        #expect((number(before: "payloads verified") ?? 0) > 0)
        #expect(summary.contains("reader: ok hits="))
        #expect(lines.contains("soak: ok"))
        let samples = try String(contentsOfFile: dir.path("samples.csv"), encoding: .utf8).split(separator: "\n")
        #expect(samples.first == "seconds,rss_bytes,fds")
        #expect(samples.count > 10)
    }
}
