import Foundation

extension BenchmarksPage {
    /// The sized suite's impls on the page, by the names it prints.
    static let sizedNames: [String: String] = [
        "larder-lru": "LRU", "larder-recommended": "recommended", "gdsf": "GDSF", "best-online": "best online",
    ]

    /// One cell of `hitratio --sized`: a trace at a fraction of its working set, every impl's ratios.
    struct SizedCell {
        var trace: String
        var fraction: Double
        var rows: [BenchResult]

        func objects(_ impl: String) -> Double? { rows.first { $0.impl == impl }?.numbers["object_miss_ratio"] }
        func bytes(_ impl: String) -> Double? { rows.first { $0.impl == impl }?.numbers["byte_miss_ratio"] }
        var bestPolicy: String? { rows.first { $0.impl == "best-online" }?.strings["policy"] }
    }

    /// The sized cells of the run, by trace in the order printed, then by fraction.
    var sizedCells: [SizedCell] {
        var cells: [SizedCell] = []
        for result in run.results(of: "hitratio-sized") {
            let fraction = result.numbers["fraction"] ?? 0
            if let index = cells.firstIndex(where: { $0.trace == result.caseName && $0.fraction == fraction }) {
                cells[index].rows.append(result)
            } else {
                cells.append(SizedCell(trace: result.caseName, fraction: fraction, rows: [result]))
            }
        }
        return cells
    }

    func sizedHitRatioSection(charts: inout [(name: String, svg: String)]) -> String {
        var text = """
            ## Hit ratio of the disk tier's policies

            `larder-bench hitratio --sized` replays sized request traces (each request a key and the object's size)
            through the disk tier's policy objects, no files written, at 1 %, 5 % and 10 % of each trace's working set
            (the sum of its objects' sizes), by libCacheSim's rule: get; on a miss insert, evicting until the object
            fits; an object larger than the cache is never inserted. `best online` is, of the online policies
            libCacheSim 0.3.5 measures (`expected.csv`), the one with the fewest object misses among those whose byte
            misses are no worse than LRU's; GDSF is the benchmark's own simulator. Figures are object and byte miss
            ratios (lower is better).


            """
        let cells = sizedCells
        guard !cells.isEmpty else { return text + "Not in this run.\n" }
        text += commandBlock("hitratio-sized")
        text += "| trace | cache | LRU objects / bytes | recommended | GDSF | best online | recommended ÷ LRU | recommended ÷ best |\n"
        text += "|---|---:|---:|---:|---:|---:|---:|---:|\n"
        var logObjects = 0.0
        var logBytes = 0.0
        var counted = 0
        var worst: (ratio: Double, cell: String)?
        for cell in cells {
            func pair(_ impl: String) -> String {
                guard let objects = cell.objects(impl), let bytes = cell.bytes(impl) else { return "" }
                return "\(Format.fraction(objects)) / \(Format.fraction(bytes))"
            }
            var versusLRU = ""
            if let objects = cell.objects("larder-recommended"), let bytes = cell.bytes("larder-recommended"),
                let lruObjects = cell.objects("larder-lru"), let lruBytes = cell.bytes("larder-lru"), lruObjects > 0, lruBytes > 0
            {
                let (o, b) = (objects / lruObjects, bytes / lruBytes)
                versusLRU = "\(Format.ratio(o, decimals: 3)) / \(Format.ratio(b, decimals: 3))"
                logObjects += log(o)
                logBytes += log(b)
                counted += 1
                if max(o, b) > worst?.ratio ?? -1 { worst = (max(o, b), "\(cell.trace) at \(percent(cell.fraction))") }
            }
            let versusBest =
                both(cell.objects("larder-recommended"), cell.objects("best-online")).map { Format.ratio($0 / max($1, 1e-9), decimals: 3) }
                ?? ""
            let best = pair("best-online") + (cell.bestPolicy.map { " (\($0))" } ?? "")
            let columns = [
                cell.trace, percent(cell.fraction), pair("larder-lru"), pair("larder-recommended"), pair("gdsf"), best, versusLRU,
                versusBest,
            ]
            text += "| " + columns.joined(separator: " | ") + " |\n"
        }
        if counted > 0 {
            let objects = exp(logObjects / Double(counted))
            let bytes = exp(logBytes / Double(counted))
            text += "\n| target | measured | |\n|---|---|---|\n"
            text +=
                "| geometric mean of recommended ÷ LRU, objects ≤ \(Format.ratio(Target.sizedObjectsVersusLRU)) | \(Format.ratio(objects, decimals: 3)) over \(counted) cells | "
                + (objects <= Target.sizedObjectsVersusLRU ? "met" : "**missed**") + " |\n"
            text +=
                "| geometric mean of recommended ÷ LRU, bytes ≤ \(Format.ratio(Target.sizedBytesVersusLRU)) | \(Format.ratio(bytes, decimals: 3)) over \(counted) cells | "
                + (bytes <= Target.sizedBytesVersusLRU ? "met" : "**missed**") + " |\n"
            if let worst {
                text +=
                    "| recommended ≤ \(Format.ratio(Target.sizedWorstVersusLRU)) LRU in every cell, objects and bytes | worst \(Format.ratio(worst.ratio, decimals: 3)) (\(worst.cell)) | "
                    + (worst.ratio <= Target.sizedWorstVersusLRU ? "met" : "**missed**") + " |\n"
            }
        }
        text += "\n"
        for trace in cells.map(\.trace).reduce(into: [String](), { if !$0.contains($1) { $0.append($1) } }) {
            let safe = trace.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" }.reduce("") { $0 + String($1) }
            let traceCells = cells.filter { $0.trace == trace }
            for (measure, key) in [("objects", "object_miss_ratio"), ("bytes", "byte_miss_ratio")] {
                let name = "hitratio-sized-\(safe)-\(measure)"
                charts.append((name, sizedChart(trace, measure: measure, key: key, cells: traceCells)))
                text += "![\(trace): \(measure) miss ratio against cache size, one line per policy](\(Self.chartFolder)/\(name).svg)\n"
            }
        }
        return text
    }

    private func sizedChart(_ trace: String, measure: String, key: String, cells: [SizedCell]) -> String {
        var impls: [String] = []
        for row in cells.flatMap(\.rows) where !impls.contains(row.impl) { impls.append(row.impl) }
        let series = impls.map { impl in
            SVGChart.Series(
                name: Self.sizedNames[impl] ?? impl,
                points: cells.compactMap { cell in
                    cell.rows.first { $0.impl == impl }?.numbers[key].map { (x: cell.fraction * 100, y: $0) }
                },
                dashed: impl == "best-online")
        }
        return SVGChart.lines(
            title: "\(trace): \(measure) miss ratio by cache size", xLabel: "cache size (% of the working set)",
            yLabel: "\(measure) miss ratio",
            series: series)
    }
}

/// A fraction of the working set as a percentage: `0.05` as `5 %`.
private func percent(_ fraction: Double) -> String {
    String(format: "%g %%", fraction * 100)
}

/// Both values, or `nil` if either is missing.
private func both<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
