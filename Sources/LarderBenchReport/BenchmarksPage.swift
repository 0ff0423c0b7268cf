import Foundation

/// BENCHMARKS.md and its charts, rendered from one run's JSON lines.
public struct BenchmarksPage {
    /// The folder of the charts, relative to the page.
    public static let chartFolder = "docs/benchmarks"
    /// The command that regenerates the page, as the page states it.
    public static let command = "scripts/benchmarks.sh"

    /// The run rendered.
    public var run: BenchRun

    /// A page for `run`.
    public init(run: BenchRun) {
        self.run = run
    }

    /// Every file of the page, by path relative to the repository's root: `BENCHMARKS.md`, then
    /// the charts under ``chartFolder``.
    public func files() -> [(path: String, contents: String)] {
        var charts: [(name: String, svg: String)] = []
        var page = introduction()
        for note in SuiteNote.all {
            page += section(note, charts: &charts)
        }
        page += hitRatioSection(charts: &charts)
        page += "\n" + sizedHitRatioSection(charts: &charts)
        return [("BENCHMARKS.md", page)] + charts.map { ("\(Self.chartFolder)/\($0.name).svg", $0.svg) }
    }

    // MARK: Introduction

    private func introduction() -> String {
        var text = """
            # Benchmarks

            What Larder costs, measured by the project's own benchmark (`larder-bench`, in
            `Sources/larder-bench`) beside the alternatives a user would otherwise pick. Every figure on this page
            and every chart under `\(Self.chartFolder)/` comes from one run of one command:

            ```
            \(Self.command)                  # every suite but the remote one
            \(Self.command) --start-redis    # with the remote suite, against a throwaway redis-server
            ```

            It builds `larder-bench` in release mode, runs each suite once, keeps the JSON lines in
            `\(Self.chartFolder)/results.jsonl` and renders this page from them
            (`larder-bench report \(Self.chartFolder)/results.jsonl`).

            How to read it: each time is the median over repeated runs after a warm-up, per operation. The
            implementations of a suite run in one process on the same keys and values, taking turns, so the
            **ratio** (this row's time over the named implementation's, in the same case and size; below 1 is
            faster) is steadier than the times on a busy machine. The **target** column gives the bound the project
            holds itself to, the measured value, and whether this run met it.


            """
        text += machine()
        return text
    }

    private func machine() -> String {
        let info = run.machine
        var lines = ["## Machine", ""]
        var facts: [String] = []
        if let cpu = info["cpu"] { facts.append(cpu + (info["cores"].map { ", \($0) cores" } ?? "")) }
        if let memory = info["memory"] { facts.append(memory + " of memory") }
        if let kernel = info["kernel"] { facts.append(kernel) }
        if let swift = info["swift"] { facts.append(swift) }
        if !facts.isEmpty { lines.append("- " + facts.joined(separator: "; ") + ".") }
        if let filesystem = info["filesystem"] { lines.append("- Scratch folders (`$TMPDIR`): \(filesystem).") }
        var when: [String] = []
        if let date = info["date"] { when.append("started \(date)") }
        if let load = info["load"] { when.append("load average \(load) at the start") }
        let total = run.suites.compactMap(\.seconds).reduce(0, +)
        if total > 0 { when.append("the suites took \(Self.duration(total))") }
        if !when.isEmpty { lines.append("- The run: " + when.joined(separator: ", ") + ".") }
        if let command = info["command"] {
            lines.append("- Made by `\(command)`.")
            if command.contains("--quick") {
                lines.append(
                    "- **This run used `--quick`**: smaller sizes and fewer repeats than the default, so some targets at n = "
                        + "100,000 are not measured and the figures are noisier.")
            }
        }
        return lines.joined(separator: "\n") + "\n\n"
    }

    // MARK: Suites

    private func section(_ note: SuiteNote, charts: inout [(name: String, svg: String)]) -> String {
        let results = run.results(of: note.suite)
        var text = "## \(note.title)\n\n" + note.text + "\n\n"
        guard !results.isEmpty else {
            if note.suite == "remote" {
                text += """
                    Not in this run: the remote suite needs a Redis server. `\(Self.command) --start-redis` starts a \
                    throwaway one on loopback; `\(Self.command) --redis HOST:PORT` uses yours.


                    """
            } else {
                text += "Not in this run.\n\n"
            }
            return text
        }
        text += commandBlock(note.suite)
        let verdicts = Target.all.filter { $0.suite == note.suite }.flatMap { $0.verdicts(in: run) }
        text += "| case | n | impl | time | ratio | target |\n|---|---:|---|---:|---:|---|\n"
        for result in results {
            var figure = Format.time(result.nanosecondsPerOperation)
            if result.caseName == "index-memory" {
                figure = "\(Format.count(Double(result.bytes))) B a record"
            } else if let loads = result.numbers["loads"] {
                figure += ", \(Format.count(loads)) load\(loads == 1 ? "" : "s")"
            } else if note.throughputCases.contains(result.caseName), result.nanosecondsPerOperation > 0 {
                figure += ", \(Format.count((1e9 / result.nanosecondsPerOperation).rounded()))/s"
            }
            var ratio = ""
            if let baseline = note.baseline(of: result, in: run), baseline.nanosecondsPerOperation > 0 {
                ratio = Format.ratio(result.nanosecondsPerOperation / baseline.nanosecondsPerOperation) + " " + baseline.impl
            }
            let target = verdicts.filter { $0.result == result }.map(Self.cell).joined(separator: "; ")
            text += "| \(result.caseName) | \(Format.count(Double(result.n))) | \(result.impl) | \(figure) | \(ratio) | \(target) |\n"
        }
        text += "\n"
        if let name = note.chart {
            let bars = results.filter { $0.caseName != "index-memory" && $0.nanosecondsPerOperation > 0 }.map {
                SVGChart.Bar(
                    group: "\($0.caseName) n=\(Format.count(Double($0.n)))", series: $0.impl, nanoseconds: $0.nanosecondsPerOperation)
            }
            charts.append((name, SVGChart.bars(title: "\(note.title): time per operation", bars: bars)))
            text += "![\(note.title): time per operation, by case and implementation](\(Self.chartFolder)/\(name).svg)\n\n"
        }
        return text
    }

    /// "≤ 1.25 × posix-floor: 1.19 ×, met".
    static func cell(_ verdict: Verdict) -> String {
        "\(verdict.requirement): \(verdict.measured), " + (verdict.isMet ? "met" : "**missed**")
    }

    func commandBlock(_ suite: String) -> String {
        guard let recorded = run.command(of: suite) else { return "" }
        let took = recorded.seconds.map { " (\(Self.duration($0)))" } ?? ""
        return "Measured by this command\(took):\n\n```\n\(recorded.command)\n```\n\n"
    }

    /// "45 s", "7 min 45 s".
    static func duration(_ seconds: Int) -> String {
        seconds < 60 ? "\(seconds) s" : "\(seconds / 60) min \(seconds % 60) s"
    }
}
