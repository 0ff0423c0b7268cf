import Foundation
import LarderBenchReport
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The fixtures: `sample.jsonl` (hand-made: the script's run lines, a skipped suite's note,
/// targets met and missed, hit-ratio cells with and without expected.csv's lines) and
/// `quick.jsonl` (a real `larder-bench --quick --json --references` run of every suite).
private func fixture(_ name: String) throws -> String {
    let url = try #require(Bundle.module.url(forResource: name, withExtension: "jsonl", subdirectory: "Fixtures"))
    return try String(contentsOf: url, encoding: .utf8)
}

private func page(_ name: String) throws -> (markdown: String, charts: [(path: String, contents: String)]) {
    let files = BenchmarksPage(run: try BenchRun(jsonLines: try fixture(name))).files()
    let markdown = try #require(files.first { $0.path == "BENCHMARKS.md" }).contents
    return (markdown, files.filter { $0.path.hasSuffix(".svg") })
}

@Suite struct BenchRunTests {
    @Test func readsRunLinesAndResultsAndSkipsNotes() throws {
        let run = try BenchRun(jsonLines: try fixture("sample"))
        #expect(run.machine["cpu"] == "Test CPU 9000")
        #expect(run.machine["cores"] == "2")
        #expect(run.suites.map(\.suite) == ["memory", "disk", "open", "hitratio", "hitratio-sized"])
        #expect(run.suites.first?.seconds == 42)
        #expect(run.results.count == 35)
        #expect(run.result("loadthrough", "coalesce-1000", "larder", n: 1000)?.numbers["loads"] == 1)
        #expect(run.result("hitratio", "c2k_web07", "best-online", n: 205)?.strings["policy"] == "S3-FIFO")
    }

    @Test func aLineThatIsNotAResultNamesItsNumber() {
        #expect(throws: ReportError(line: 2, "not a JSON object")) {
            try BenchRun(jsonLines: #"{"suite": "disk", "case": "load-4k", "impl": "larder", "n": 1, "ns_per_op": 2}"# + "\n{oops")
        }
        #expect(throws: ReportError.self) { try BenchRun(jsonLines: #"{"suite": "disk", "impl": "larder", "n": 1, "ns_per_op": 2}"#) }
        #expect(throws: ReportError.self) { try BenchRun(jsonLines: #"{"run": "weather"}"#) }
    }
}

@Suite struct TargetTests {
    @Test func ratiosAgainstTheirReferenceAreMetOrMissed() throws {
        let run = try BenchRun(jsonLines: try fixture("sample"))
        let verdicts = Target.all.flatMap { $0.verdicts(in: run) }
        let load = try #require(verdicts.first { $0.result.caseName == "load-4k" && $0.requirement.contains("posix-floor") })
        #expect(!load.isMet && abs(load.value - 8500 / 5640) < 1e-9)
        let zipf = try #require(verdicts.first { $0.result.caseName == "load-4k-zipf" })
        #expect(zipf.isMet && zipf.requirement == "≤ 0.60 × sqlite" && zipf.measured == "0.58 ×")
        let memory = verdicts.filter { $0.result.suite == "open" }.map(\.isMet)
        #expect(memory == [true, false])
        // larder's load-4k at n = 1,000 has no posix-floor row beside it: no verdict.
        #expect(!verdicts.contains { $0.result.n == 1000 && $0.result.caseName == "load-4k" })
    }

    @Test func aThroughputTargetComparesTheOtherWay() throws {
        let run = try BenchRun(
            jsonLines: """
                {"suite": "concurrency", "case": "mixed-1t", "impl": "larder", "n": 10000, "ns_per_op": 30000}
                {"suite": "concurrency", "case": "mixed-2t", "impl": "larder", "n": 10000, "ns_per_op": 20000}
                """)
        let verdict = try #require(Target.all.flatMap { $0.verdicts(in: run) }.first)
        #expect(verdict.value == 1.5 && !verdict.isMet)
        #expect(verdict.requirement == "throughput ≥ 1.60 × mixed-1t")
    }

    @Test func processesSharingAFolderAreHeldToTwoThreadsAndSharingToAWriterAlone() throws {
        let run = try BenchRun(
            jsonLines: """
                {"suite": "concurrency", "case": "mixed-1t", "impl": "larder", "n": 10000, "ns_per_op": 30000}
                {"suite": "concurrency", "case": "mixed-2t", "impl": "larder", "n": 10000, "ns_per_op": 20000}
                {"suite": "concurrency", "case": "mixed-1t", "impl": "larder-shared", "n": 10000, "ns_per_op": 31000}
                {"suite": "concurrency", "case": "mixed-2p", "impl": "larder", "n": 10000, "ns_per_op": 26000}
                {"suite": "concurrency", "case": "mixed-4p", "impl": "larder", "n": 10000, "ns_per_op": 24000}
                """)
        let verdicts = Target.all.flatMap { $0.verdicts(in: run) }
        let processes = try #require(verdicts.first { $0.result.caseName == "mixed-2p" })
        // 20,000 ns over 26,000 ns: 0.77, under 0.8.
        #expect(!processes.isMet && processes.requirement == "throughput ≥ 0.80 × mixed-2t")
        let shared = try #require(verdicts.first { $0.result.impl == "larder-shared" })
        // 30,000 ns over 31,000 ns: 0.968, within 5 %.
        #expect(shared.isMet && shared.requirement == "throughput ≥ 0.95 × larder")
        #expect(!verdicts.contains { $0.result.caseName == "mixed-4p" })
    }
}

@Suite struct BenchmarksPageTests {
    @Test func tablesHoldTheFiguresAndTheTargetBesideThem() throws {
        let markdown = try page("sample").markdown
        #expect(
            markdown.contains("| load-4k | 20,000 | larder | 8.50 µs | 1.51 × posix-floor | ≤ 1.25 × posix-floor: 1.51 ×, **missed** |"))
        #expect(markdown.contains("| load-4k-zipf | 20,000 | larder | 4.32 µs | 0.72 × posix-floor | ≤ 0.60 × sqlite: 0.58 ×, met |"))
        #expect(markdown.contains("| load-4k | 1,000 | larder | 7.07 µs |  |  |"))
        #expect(
            markdown.contains(
                "| get-hit | 100,000 | larder-recommended | 81.1 ns | 1.05 × mutex-dictionary | ≤ 1.10 × mutex-dictionary: 1.05 ×, met |"))
        #expect(
            markdown.contains(
                "| index-memory | 100,000 | larder-no-snapshot | 151 B a record |  | ≤ 150 B a record: 151 B a record, **missed** |"))
        #expect(markdown.contains("| coalesce-1000 | 1,000 | larder | 18.2 ms, 1 load |  | ≤ 1 load a burst: 1 load a burst, met |"))
    }

    @Test func theRemoteTableShowsTheStoreBesideRedisBenchmarkAndTheByHandReads() throws {
        let run = try BenchRun(
            jsonLines: """
                {"suite": "remote", "case": "get-hit-remote", "impl": "larder", "n": 1000, "bytes": 4096, "ns_per_op": 23000}
                {"suite": "remote", "case": "get-hit-remote", "impl": "by-hand", "n": 1000, "bytes": 4096, "ns_per_op": 20000}
                {"suite": "remote", "case": "get-hit-remote", "impl": "raw", "n": 1000, "bytes": 4096, "ns_per_op": 19000}
                {"suite": "remote", "case": "get-throughput", "impl": "store", "n": 16, "bytes": 4096, "ns_per_op": 5000}
                {"suite": "remote", "case": "get-throughput", "impl": "redis-benchmark", "n": 16, "bytes": 4096, "ns_per_op": 6000}
                {"suite": "remote", "case": "get-throughput", "impl": "store", "n": 64, "bytes": 4096, "ns_per_op": 8000}
                {"suite": "remote", "case": "get-throughput", "impl": "redis-benchmark", "n": 64, "bytes": 4096, "ns_per_op": 6000}
                """)
        let markdown = try #require(BenchmarksPage(run: run).files().first { $0.path == "BENCHMARKS.md" }).contents
        #expect(markdown.contains("| get-hit-remote | 1,000 | larder | 23.0 µs | 1.15 × by-hand | ≤ 1.20 × by-hand: 1.15 ×, met |"))
        #expect(markdown.contains("| get-hit-remote | 1,000 | raw | 19.0 µs | 0.95 × by-hand |  |"))
        #expect(
            markdown.contains(
                "| get-throughput | 16 | store | 5.00 µs, 200,000/s | 0.83 × redis-benchmark | throughput ≥ 0.90 × redis-benchmark: 1.20 ×, met |"
            ))
        #expect(markdown.contains("| get-throughput | 16 | redis-benchmark | 6.00 µs, 166,667/s |  |  |"))
        #expect(
            markdown.contains(
                "| get-throughput | 64 | store | 8.00 µs, 125,000/s | 1.33 × redis-benchmark | throughput ≥ 0.90 × redis-benchmark: 0.75 ×, **missed** |"
            ))
    }

    @Test func eachTableHasItsCommandAboveItAndTheMachineOnce() throws {
        let markdown = try page("sample").markdown
        for (command, row) in [
            (".build/release/larder-bench --json disk", "| load-4k | 20,000 |"),
            (".build/release/larder-bench --json memory", "| get-hit |"),
            (".build/release/larder-bench --json --references hitratio", "| c2k_web07 | 205 |"),
        ] {
            let commandAt = try #require(markdown.range(of: "```\n\(command)\n```"))
            let rowAt = try #require(markdown.range(of: row))
            #expect(commandAt.upperBound < rowAt.lowerBound)
            let between = markdown[commandAt.upperBound ..< rowAt.lowerBound]
            #expect(!between.contains("## "), "another section between \(command) and its table")
        }
        #expect(markdown.components(separatedBy: "Test CPU 9000").count == 2)
        #expect(markdown.contains("Measured by this command (12 min 5 s):"))
        #expect(markdown.contains("`scripts/benchmarks.sh --start-redis`"))
    }

    @Test func hitRatioTableAndTargets() throws {
        let markdown = try page("sample").markdown
        #expect(markdown.contains("| c2k_web07 | 205 | 0.608 | 0.558 | 0.562 (S3-FIFO) | 0.466 | 0.917 × | 0.992 × |"))
        // No expected.csv lines for this trace: the best replayed policy other than Larder's (CLOCK).
        #expect(markdown.contains("| synthetic<&> | 100 | 0.500 | 0.525 | 0.495 (CLOCK) |  | 1.050 × | 1.061 × |"))
        #expect(markdown.contains("| worst 1.050 × (synthetic<&> at 100) | **missed** |"))
        #expect(markdown.contains("| 1.004 × over 4 cells | met |"))
    }

    @Test func sizedHitRatioTableAndTargets() throws {
        let run = try BenchRun(jsonLines: fixture("sample"))
        #expect(run.result("hitratio-sized", "cdn", "gdsf", n: 3_042_135)?.numbers["byte_miss_ratio"] == 0.759916)
        let markdown = try page("sample").markdown
        #expect(markdown.contains("```\n.build/release/larder-bench --json --sized hitratio\n```"))
        #expect(
            markdown.contains(
                "| cdn | 1 % | 0.800 / 0.750 | 0.760 / 0.765 | 0.712 / 0.760 | 0.755 / 0.752 (S3-FIFO) | 0.950 × / 1.020 × | 1.007 × |"))
        #expect(markdown.contains("| cdn | 10 % | 0.700 / 0.700 | 0.560 / 0.630 |  |  | 0.800 × / 0.900 × |  |"))
        // Geometric means: objects sqrt(0.95 × 0.8), bytes sqrt(1.02 × 0.9).
        #expect(markdown.contains("| 0.872 × over 2 cells | met |"))
        #expect(markdown.contains("| 0.958 × over 2 cells | **missed** |"))
        #expect(markdown.contains("| worst 1.020 × (cdn at 1 %) | **missed** |"))
    }

    @Test func chartsAreWellFormedSVGWithOneLinePerPolicy() throws {
        let charts = try page("sample").charts
        #expect(
            Set(charts.map(\.path)) == [
                "docs/benchmarks/latency-memory.svg", "docs/benchmarks/latency-disk.svg", "docs/benchmarks/hitratio-c2k_web07.svg",
                "docs/benchmarks/hitratio-synthetic---.svg", "docs/benchmarks/hitratio-sized-cdn-objects.svg",
                "docs/benchmarks/hitratio-sized-cdn-bytes.svg",
            ])
        for chart in charts {
            let elements = try svgElements(chart.contents)
            #expect(elements.first == "svg", "\(chart.path)")
            #expect(!elements.contains("script") && !elements.contains("image"), "\(chart.path)")
        }
        let web = try #require(charts.first { $0.path.hasSuffix("c2k_web07.svg") })
        // LRU, recommended (TinyLFU misses the same, so it is one line) and Belady.
        #expect(try svgElements(web.contents).filter { $0 == "polyline" }.count == 3)
        #expect(web.contents.contains("Belady (offline optimum)") && !web.contents.contains(">TinyLFU<"))
        let disk = try #require(charts.first { $0.path.hasSuffix("latency-disk.svg") })
        #expect(try svgElements(disk.contents).filter { $0 == "rect" }.count == 1 + 3 + 6)  // background, legend, bars
        #expect(disk.contents.contains(">8.50 µs<"))
    }

    @Test(arguments: ["sample", "quick"])
    func thePageHasNoHistoryAndStaysShort(_ name: String) throws {
        let markdown = try page(name).markdown
        // Words that tell the page's history (a trace's owner, headissue GmbH, may be named).
        let history = try Regex(#"\b(rounds?|issues?|merged?|previous(ly)?|no longer|used to|before|after the)\b"#).ignoresCase()
        #expect(
            markdown.firstMatch(of: history) == nil,
            "\(name): \(markdown.firstMatch(of: history).map { String($0.output[0].substring ?? "") } ?? "")")
        #expect(markdown.split(separator: "\n", omittingEmptySubsequences: false).count <= 400)
    }

    @Test func aQuickRunSaysSoAndAMissingRemoteSuiteSaysHowToRunIt() throws {
        let quick = try page("quick").markdown
        #expect(!quick.contains("--quick"))  // the fixture has no machine line: nothing claims a command
        var run = try BenchRun(jsonLines: try fixture("quick"))
        run.machine["command"] = "scripts/benchmarks.sh --quick"
        let labelled = try #require(BenchmarksPage(run: run).files().first).contents
        #expect(labelled.contains("**This run used `--quick`**"))
        let sample = try page("sample").markdown
        #expect(sample.contains("Not in this run: the remote suite needs a Redis server."))
    }

    @Test func writeReplacesTheChartsItNoLongerMakes() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("bench-report-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let charts = root.appendingPathComponent("docs/benchmarks")
        try FileManager.default.createDirectory(at: charts, withIntermediateDirectories: true)
        try Data("stale".utf8).write(to: charts.appendingPathComponent("hitratio-gone.svg"))
        try Data("kept".utf8).write(to: charts.appendingPathComponent("results.jsonl"))
        let written = try BenchmarksPage(run: try BenchRun(jsonLines: try fixture("sample"))).write(to: root)
        #expect(written.first == "BENCHMARKS.md")
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("BENCHMARKS.md").path))
        #expect(!FileManager.default.fileExists(atPath: charts.appendingPathComponent("hitratio-gone.svg").path))
        #expect(FileManager.default.fileExists(atPath: charts.appendingPathComponent("results.jsonl").path))
        #expect(FileManager.default.fileExists(atPath: charts.appendingPathComponent("latency-disk.svg").path))
    }
}

@Suite struct FormatTests {
    @Test func timesRatiosAndCounts() {
        #expect(Format.time(61.6) == "61.6 ns")
        #expect(Format.time(8_500) == "8.50 µs")
        #expect(Format.time(43_460) == "43.5 µs")
        #expect(Format.time(826_080) == "826 µs")
        #expect(Format.time(1_410_000) == "1.41 ms")
        #expect(Format.time(1_230_000_000) == "1.23 s")
        #expect(Format.ratio(1.507) == "1.51 ×")
        #expect(Format.ratio(0.0164) == "0.016 ×")
        #expect(Format.ratio(0.02041, beside: 0.02) == "0.0204 ×")
        #expect(Format.ratio(1.2499, beside: 1.25) == "1.2499 ×")
        #expect(Format.ratio(1.31, beside: 1.25) == "1.31 ×")
        #expect(Format.ratio(0.02, beside: 0.02) == "0.020 ×")
        #expect(Format.count(100_000) == "100,000")
        #expect(Format.count(763) == "763")
    }
}

/// The names of an SVG document's elements, in order, as Foundation's XML parser reads them.
/// - Throws: The parser's error, if the document is not well-formed.
private func svgElements(_ text: String) throws -> [String] {
    let collector = ElementCollector()
    let parser = XMLParser(data: Data(text.utf8))
    parser.delegate = collector
    guard parser.parse() else { throw parser.parserError ?? CocoaError(.propertyListReadCorrupt) }
    return collector.names
}

private final class ElementCollector: NSObject, XMLParserDelegate {
    var names: [String] = []

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        names.append(elementName)
    }
}
