import Foundation
import Larder
import LarderTestSupport

// The hitratio suite: replays recorded request traces through MemoryCache under each eviction
// policy and counts the misses (get; on a miss, store with cost 0). Each trace runs at 1 %, 5 %
// and 10 % of its distinct keys. With --json, one line per trace, capacity and policy, and where the
// folder's expected.csv has the cell, one for its best online policy (impl `best-online`, the
// policy's name in `policy`) and one for Belady's offline optimum (impl `belady`); without,
// a table that also compares with LRU and, where the folder's expected.csv has the cell, with the
// best online policy the reference simulator measured (Belady's offline optimum excluded).

/// The policies replayed, by the names the suite prints.
private let hitRatioPolicies: [(name: String, policy: EvictionPolicy)] = [
    ("lru", .lru),
    ("tinylfu", .tinyLFU),
    ("recommended", .recommended),
]

/// Replays `trace` through a cache of `capacity` entries and returns its misses and the time taken.
func replay(_ trace: [UInt32], capacity: Int, policy: EvictionPolicy) -> (misses: Int, nanoseconds: UInt64) {
    let cache: MemoryCache<UInt32, UInt32> = benchMemoryCache(countLimit: capacity, policy: policy)
    var misses = 0
    let start = monotonicNanoseconds()
    for key in trace where cache.value(forKey: key) == nil {
        misses += 1
        try? cache.store(key, forKey: key)
    }
    let elapsed = monotonicNanoseconds() - start
    return (misses, elapsed)
}

func runHitRatioSuite(_ context: BenchContext) throws {
    if context.sized { return try runSizedHitRatioSuite(context) }
    let folder = context.tracesFolder
    let files = try Traces.files(in: folder)
    let expectations = try Traces.expectations(in: folder)
    var traces: [SyntheticTrace] = []
    for file in files {
        let trace = try Traces.load(file)
        if !trace.isEmpty { traces.append(SyntheticTrace(name: file.deletingPathExtension().lastPathComponent, keys: trace)) }
    }
    if context.synthetic {
        let recorded = Dictionary(traces.map { ($0.name, $0.keys) }, uniquingKeysWith: { first, _ in first })
        traces = SyntheticTraces.all(recorded: recorded)
    }
    // `LARDER_BENCH_TRACES=drift,c2k_orm_busy` replays those traces alone (policy experiments).
    if let chosen = ProcessInfo.processInfo.environment["LARDER_BENCH_TRACES"]?.split(separator: ",").map(String.init) {
        traces = traces.filter { chosen.contains($0.name) }
    }
    guard !traces.isEmpty else { throw BenchError("no *.u32 traces in \(folder.path)") }
    let references = context.synthetic || context.references

    if !context.json {
        print(
            context.synthetic
                ? "hitratio: synthetic traces (and concatenations of the recorded ones in \(folder.path))"
                : "hitratio: traces in \(folder.path)")
        print("misses per policy, and their ratio to lru and to the best online policy: in expected.csv where it has")
        print("the cell (its name in brackets), else the best of the reference simulators (clock, sieve, s3fifo, arc, 2q)")
    }
    var summary = HitRatioSummary()
    for trace in traces {
        for capacity in Traces.capacities(distinctKeys: Traces.distinctKeys(trace.keys)) where capacity > 0 {
            var rows: [(impl: String, misses: Int, nanoseconds: UInt64)] = []
            for (impl, policy) in hitRatioPolicies {
                let (misses, nanoseconds) = replay(trace.keys, capacity: capacity, policy: policy)
                rows.append((impl, misses, nanoseconds))
            }
            if references {
                for (impl, misses) in referencePolicies {
                    let start = monotonicNanoseconds()
                    let count = misses(trace.keys, capacity)
                    rows.append((impl, count, monotonicNanoseconds() - start))
                }
            }
            let cell = expectations.filter { $0.trace == trace.name && $0.capacity == capacity && $0.policy != "Belady" }
            let best: (policy: String, misses: Int)? =
                cell.min { $0.misses < $1.misses }.map { ($0.policy, $0.misses) }
                ?? rows.filter { !["tinylfu", "recommended"].contains($0.impl) }.min { $0.misses < $1.misses }.map { ($0.impl, $0.misses) }
            let lruMisses = rows.first { $0.impl == "lru" }!.misses
            if let recommended = rows.first(where: { $0.impl == "recommended" }), let best {
                summary.add(trace.name, capacity: capacity, recommended: recommended.misses, lru: lruMisses, best: best.misses)
            }
            if context.json {
                // The yardsticks from expected.csv, for the page: the best online policy and
                // Belady's offline optimum.
                let bounds = [
                    ("best-online", cell.min { $0.misses < $1.misses }),
                    ("belady", expectations.first { $0.trace == trace.name && $0.capacity == capacity && $0.policy == "Belady" }),
                ]
                for case (let impl, let row?) in bounds {
                    print(
                        #"{"suite":"hitratio","case":"\#(trace.name)","impl":"\#(impl)","n":\#(capacity),"bytes":0,"ns_per_op":0,"misses":\#(row.misses),"miss_ratio":\#(String(format: "%.6f", row.missRatio)),"policy":"\#(row.policy)"}"#
                    )
                }
            }
            for row in rows {
                let nsPerOp = (Double(row.nanoseconds) / Double(trace.keys.count) * 10).rounded() / 10
                let ratio = Double(row.misses) / Double(trace.keys.count)
                if context.json {
                    print(
                        #"{"suite":"hitratio","case":"\#(trace.name)","impl":"\#(row.impl)","n":\#(capacity),"bytes":0,"ns_per_op":\#(nsPerOp),"misses":\#(row.misses),"miss_ratio":\#(String(format: "%.6f", ratio))}"#
                    )
                } else {
                    var line = pad(trace.name, 16) + pad(row.impl, 13) + pad("n=\(capacity)", 9) + pad("misses=\(row.misses)", 16)
                    line +=
                        pad(String(format: "ratio=%.4f", ratio), 14)
                        + pad(String(format: "vs-lru=%.3f", Double(row.misses) / Double(lruMisses)), 14)
                    if let best {
                        line += pad(String(format: "vs-best=%.3f", Double(row.misses) / Double(best.misses)) + " [\(best.policy)]", 28)
                    }
                    print(line + "\(nsPerOp) ns/req")
                }
            }
        }
    }
    if !context.json { summary.print() }
}

/// The two targets over the cells replayed: recommended's worst cell against LRU, and the
/// geometric mean of its misses over the best online policy's.
struct HitRatioSummary {
    private var worst: (ratio: Double, cell: String) = (0, "")
    private var logSum = 0.0
    private var cells = 0

    mutating func add(_ trace: String, capacity: Int, recommended: Int, lru: Int, best: Int) {
        let vsLRU = Double(recommended) / Double(max(lru, 1))
        if vsLRU > worst.ratio { worst = (vsLRU, "\(trace) n=\(capacity)") }
        logSum += log(Double(max(recommended, 1)) / Double(max(best, 1)))
        cells += 1
    }

    func print() {
        guard cells > 0 else { return }
        Swift.print(
            String(format: "recommended: worst cell vs lru %.3f", worst.ratio) + " (\(worst.cell)); "
                + String(format: "geomean vs best %.3f over %d cells", exp(logSum / Double(cells)), cells)
        )
    }
}

private func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}
