import Foundation
import Larder
import LarderTestSupport

// `hitratio --sized`: replays the sized traces (key and size per request) through the disk
// tier's policy objects, no files written, at capacities of 1 %, 5 % and 10 % of each trace's
// working set (floor(W × f) bytes), with libCacheSim's replay rule: get; on a miss insert,
// evicting until the object fits; an object larger than the capacity is never inserted. With
// --json, one line per trace, fraction and impl, and, where expected.csv has the cell, one for
// its best online policy whose byte misses are no worse than LRU's (impl `best-online`, its name
// in `policy`); without, a table with each impl's ratios to LRU and to that best online policy.

/// The impls replayed, by the names the suite prints.
private let sizedImpls: [(name: String, replay: @Sendable ([SizedTraces.Request], Int, UInt64) -> SizedTraces.Misses)] = [
    ("larder-lru", { trace, capacity, _ in replayDiskLRU(trace, capacity: capacity) }),
    ("larder-recommended", replayDiskRecommended),
    ("gdsf", { trace, capacity, _ in gdsfMisses(trace, capacity: capacity) }),
]

/// Replays `trace` through the disk tier's LRU of `capacity` bytes.
func replayDiskLRU(_ trace: [SizedTraces.Request], capacity: Int) -> SizedTraces.Misses {
    var policy = DiskLRUPolicy(capacity: capacity)
    var misses = SizedTraces.Misses()
    for request in trace {
        let id = Int32(bitPattern: request.key)
        if policy.contains(id) {
            policy.access(id)
        } else {
            misses.add(size: request.size)
            policy.insert(id, size: request.size) { _ in }
        }
    }
    return misses
}

/// Replays `trace` through the disk tier's recommended policy of `capacity` bytes, its victim
/// draws seeded with `seed`.
func replayDiskRecommended(_ trace: [SizedTraces.Request], capacity: Int, seed: UInt64) -> SizedTraces.Misses {
    var policy = DiskAdaptivePolicy(capacity: capacity, seed: seed)
    var misses = SizedTraces.Misses()
    for request in trace {
        let id = Int32(bitPattern: request.key)
        // The key is the id and its hash.
        if policy.contains(id) {
            policy.access(id, hash: request.key)
        } else {
            misses.add(size: request.size)
            policy.insert(id, size: request.size, hash: request.key, hashOf: { UInt32(bitPattern: $0) }, evicting: { _ in })
        }
    }
    return misses
}

/// The sized traces folder: `--traces`, else `../shared/traces/sized` from the current folder,
/// else the shared one found from the source tree.
private func sizedTracesFolder(_ context: BenchContext) -> URL {
    if let traces = context.traces { return URL(fileURLWithPath: traces, isDirectory: true) }
    let beside = URL(fileURLWithPath: "../shared/traces/sized", isDirectory: true)
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: beside.path, isDirectory: &isDirectory), isDirectory.boolValue {
        return beside.standardizedFileURL
    }
    return SizedTraces.root
}

func runSizedHitRatioSuite(_ context: BenchContext) throws {
    let folder = sizedTracesFolder(context)
    let files = try SizedTraces.files(in: folder)
    guard !files.isEmpty else { throw BenchError("no *.kv32 traces in \(folder.path)") }
    let expectations = try SizedTraces.expectations(in: folder)
    if !context.json {
        print("hitratio --sized: traces in \(folder.path)")
        print("object and byte miss ratios per impl; vs-lru: their ratios to LRU's; vs-best: to the best online policy")
        print("of expected.csv whose byte misses are no worse than LRU's (fewest object misses; its name in brackets)")
    }
    var summary = SizedSummary()
    for file in files {
        let name = file.deletingPathExtension().lastPathComponent
        let trace = try SizedTraces.load(file)
        guard !trace.isEmpty else { continue }
        let workingSet = SizedTraces.workingSet(trace)
        let requestedBytes = trace.reduce(0) { $0 + $1.size }
        for fraction in SizedTraces.fractions {
            let capacity = SizedTraces.capacity(workingSet: workingSet, fraction: fraction)
            let rows = sizedImpls.map { impl in
                let misses = impl.replay(trace, capacity, context.seed)
                return (
                    impl: impl.name, objects: Double(misses.objects) / Double(trace.count),
                    bytes: Double(misses.bytes) / Double(max(requestedBytes, 1))
                )
            }
            let lru = rows.first { $0.impl == "larder-lru" }!
            let cell = expectations.filter { $0.trace == name && $0.fraction == fraction && $0.policy != "BeladySize" }
            let lruBytes = cell.first { $0.policy == "LRU" }?.byteMissRatio ?? lru.bytes
            let best = cell.filter { $0.byteMissRatio <= lruBytes }.min { $0.objectMissRatio < $1.objectMissRatio }
            if let recommended = rows.first(where: { $0.impl == "larder-recommended" }) {
                summary.add(
                    "\(name) f=\(fraction)", objects: recommended.objects / lru.objects, bytes: recommended.bytes / lru.bytes,
                    vsBest: best.map { recommended.objects / $0.objectMissRatio })
            }
            let fractionText = String(format: "%g", fraction)
            if context.json {
                if let best {
                    print(
                        #"{"suite":"hitratio-sized","trace":"\#(name)","fraction":\#(fractionText),"impl":"best-online","policy":"\#(best.policy)","capacity_bytes":\#(capacity),"object_miss_ratio":\#(String(format: "%.6f", best.objectMissRatio)),"byte_miss_ratio":\#(String(format: "%.6f", best.byteMissRatio))}"#
                    )
                }
                for row in rows {
                    print(
                        #"{"suite":"hitratio-sized","trace":"\#(name)","fraction":\#(fractionText),"impl":"\#(row.impl)","capacity_bytes":\#(capacity),"object_miss_ratio":\#(String(format: "%.6f", row.objects)),"byte_miss_ratio":\#(String(format: "%.6f", row.bytes))}"#
                    )
                }
            } else {
                for row in rows {
                    var line = sizedPad(name, 19) + sizedPad("f=\(fractionText)", 7) + sizedPad(row.impl, 20)
                    line += String(
                        format: "objects=%.6f bytes=%.6f  vs-lru=%.3f/%.3f", row.objects, row.bytes, row.objects / lru.objects,
                        row.bytes / lru.bytes)
                    if let best {
                        line +=
                            String(format: "  vs-best=%.3f/%.3f", row.objects / best.objectMissRatio, row.bytes / best.byteMissRatio)
                            + " [\(best.policy)]"
                    }
                    print(line)
                }
            }
        }
    }
    if !context.json { summary.print() }
}

/// The targets over the cells replayed, for larder-recommended: the geometric means against
/// LRU (objects and bytes), the worst cell against LRU, and the worst against the best online policy.
private struct SizedSummary {
    private var logObjects = 0.0
    private var logBytes = 0.0
    private var cells = 0
    private var worstLRU: (ratio: Double, cell: String) = (0, "")
    private var worstBest: (ratio: Double, cell: String) = (0, "")

    mutating func add(_ cell: String, objects: Double, bytes: Double, vsBest: Double?) {
        logObjects += log(objects)
        logBytes += log(bytes)
        cells += 1
        if max(objects, bytes) > worstLRU.ratio { worstLRU = (max(objects, bytes), cell) }
        if let vsBest, vsBest > worstBest.ratio { worstBest = (vsBest, cell) }
    }

    func print() {
        guard cells > 0 else { return }
        Swift.print(
            String(
                format: "larder-recommended over %d cells: geomean vs lru objects %.3f, bytes %.3f; ", cells,
                exp(logObjects / Double(cells)), exp(logBytes / Double(cells)))
                + String(format: "worst cell vs lru %.3f", worstLRU.ratio) + " (\(worstLRU.cell)); "
                + String(format: "worst objects vs best %.3f", worstBest.ratio) + " (\(worstBest.cell))"
        )
    }
}

private func sizedPad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}
