import Foundation

extension BenchmarksPage {
    /// The policies' names on the page, by the names the suite prints.
    static let policyNames: [String: String] = [
        "lru": "LRU", "tinylfu": "TinyLFU", "recommended": "recommended (TinyLFU)", "clock": "CLOCK", "sieve": "SIEVE",
        "s3fifo": "S3-FIFO", "arc": "ARC", "2q": "2Q", "belady": "Belady (offline optimum)",
    ]

    /// One cell of the hit-ratio suite: a trace at a capacity, with every policy's misses.
    struct HitRatioCell {
        var trace: String
        var capacity: Int
        var rows: [BenchResult]

        func misses(_ impl: String) -> Double? { rows.first { $0.impl == impl }?.numbers["misses"] }
        func missRatio(_ impl: String) -> Double? { rows.first { $0.impl == impl }?.numbers["miss_ratio"] }

        /// The best online policy: `best-online` (expected.csv) if the run printed it, else the
        /// fewest misses of the policies replayed other than Larder's own.
        var best: (name: String, misses: Double, ratio: Double)? {
            if let row = rows.first(where: { $0.impl == "best-online" }), let misses = row.numbers["misses"] {
                return (row.strings["policy"] ?? "best", misses, row.numbers["miss_ratio"] ?? 0)
            }
            let others = rows.filter { !["tinylfu", "recommended", "belady", "best-online"].contains($0.impl) }
            guard let row = others.min(by: { ($0.numbers["misses"] ?? .infinity) < ($1.numbers["misses"] ?? .infinity) }),
                let misses = row.numbers["misses"]
            else { return nil }
            return (BenchmarksPage.policyNames[row.impl] ?? row.impl, misses, row.numbers["miss_ratio"] ?? 0)
        }
    }

    /// The cells of the run, by trace in the order printed, then by capacity.
    var hitRatioCells: [HitRatioCell] {
        var cells: [HitRatioCell] = []
        for result in run.results(of: "hitratio") {
            if let index = cells.firstIndex(where: { $0.trace == result.caseName && $0.capacity == result.n }) {
                cells[index].rows.append(result)
            } else {
                cells.append(HitRatioCell(trace: result.caseName, capacity: result.n, rows: [result]))
            }
        }
        return cells
    }

    /// The two hit-ratio targets over `cells`: recommended's worst cell against LRU, and the
    /// geometric mean of its misses over the best online policy's.
    static func hitRatioSummary(_ cells: [HitRatioCell]) -> (worst: (ratio: Double, cell: String)?, mean: (ratio: Double, cells: Int)?) {
        var worst: (ratio: Double, cell: String)?
        var logSum = 0.0
        var counted = 0
        for cell in cells {
            guard let recommended = cell.misses("recommended") else { continue }
            if let lru = cell.misses("lru") {
                let ratio = recommended / max(lru, 1)
                if ratio > worst?.ratio ?? -1 { worst = (ratio, "\(cell.trace) at \(Format.count(Double(cell.capacity)))") }
            }
            if let best = cell.best {
                logSum += log(max(recommended, 1) / max(best.misses, 1))
                counted += 1
            }
        }
        return (worst, counted > 0 ? (exp(logSum / Double(counted)), counted) : nil)
    }

    func hitRatioSection(charts: inout [(name: String, svg: String)]) -> String {
        var text = """
            ## Hit ratio

            `MemoryCache` replays recorded request traces under each eviction policy (get, and on a miss, store) at
            1 %, 5 % and 10 % of each trace's distinct keys, and counts the misses. The traces: cache2k's e-commerce
            database (`c2k_orm_busy`) and web (`c2k_web07`, `c2k_web12`) traces by headissue GmbH, CC BY 4.0, and a
            Zipf(0.9) trace. `best online` is the fewest misses of eleven online policies as the research simulator
            libCacheSim 0.3.5 counts them; Belady is the offline optimum no online policy reaches. CLOCK, SIEVE,
            S3-FIFO, ARC and 2Q in the charts are the benchmark's own simulators of those policies. The figures are
            miss ratios (lower is better).


            """
        let cells = hitRatioCells
        guard !cells.isEmpty else { return text + "Not in this run.\n" }
        text += commandBlock("hitratio")
        text += "| trace | capacity | LRU | recommended | best online | Belady | recommended ÷ LRU | recommended ÷ best |\n"
        text += "|---|---:|---:|---:|---:|---:|---:|---:|\n"
        for cell in cells {
            let best = cell.best
            let recommended = cell.misses("recommended")
            let versusLRU = both(recommended, cell.misses("lru")).map { Format.ratio($0 / max($1, 1), decimals: 3) } ?? ""
            let versusBest = both(recommended, best?.misses).map { Format.ratio($0 / max($1, 1), decimals: 3) } ?? ""
            let columns = [
                cell.trace, Format.count(Double(cell.capacity)), cell.missRatio("lru").map(Format.fraction) ?? "",
                cell.missRatio("recommended").map(Format.fraction) ?? "", best.map { "\(Format.fraction($0.ratio)) (\($0.name))" } ?? "",
                cell.missRatio("belady").map(Format.fraction) ?? "", versusLRU, versusBest,
            ]
            text += "| " + columns.joined(separator: " | ") + " |\n"
        }
        let summary = Self.hitRatioSummary(cells)
        text += "\n| target | measured | |\n|---|---|---|\n"
        if let worst = summary.worst {
            let met = worst.ratio <= Target.hitRatioWorstVersusLRU
            text +=
                "| recommended ≤ \(Format.ratio(Target.hitRatioWorstVersusLRU)) LRU in every cell | worst \(Format.ratio(worst.ratio, decimals: 3)) (\(worst.cell)) | "
                + (met ? "met" : "**missed**") + " |\n"
        }
        if let mean = summary.mean {
            let met = mean.ratio <= Target.hitRatioMeanVersusBest
            text +=
                "| geometric mean of recommended ÷ best online ≤ \(Format.ratio(Target.hitRatioMeanVersusBest)) | \(Format.ratio(mean.ratio, decimals: 3)) over \(mean.cells) cells | "
                + (met ? "met" : "**missed**") + " |\n"
        }
        text += "\n"
        for trace in cells.map(\.trace).reduce(into: [String](), { if !$0.contains($1) { $0.append($1) } }) {
            let name =
                "hitratio-" + trace.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" }.reduce("") { $0 + String($1) }
            charts.append((name, hitRatioChart(trace, cells: cells.filter { $0.trace == trace })))
            text += "![\(trace): miss ratio against cache size, one line per policy](\(Self.chartFolder)/\(name).svg)\n"
        }
        return text
    }

    private func hitRatioChart(_ trace: String, cells: [HitRatioCell]) -> String {
        var impls: [String] = []
        for row in cells.flatMap(\.rows) where row.impl != "best-online" && !impls.contains(row.impl) { impls.append(row.impl) }
        // TinyLFU is the recommended policy: one line, unless this run shows them apart.
        if impls.contains("recommended"), cells.allSatisfy({ $0.misses("tinylfu") == $0.misses("recommended") }) {
            impls.removeAll { $0 == "tinylfu" }
        }
        if impls.contains("belady") {
            impls.removeAll { $0 == "belady" }
            impls.append("belady")
        }
        let series = impls.map { impl in
            SVGChart.Series(
                name: Self.policyNames[impl] ?? impl,
                points: cells.compactMap { cell in cell.missRatio(impl).map { (x: Double(cell.capacity), y: $0) } },
                dashed: impl == "belady")
        }
        return SVGChart.lines(
            title: "\(trace): miss ratio by cache size", xLabel: "cache size (entries)", yLabel: "miss ratio", series: series)
    }
}

/// Both values, or `nil` if either is missing.
private func both<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
