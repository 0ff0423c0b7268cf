import Foundation
import Larder
import LarderTestSupport

// The hitratio suite: replays recorded request traces through MemoryCache under each eviction
// policy and counts the misses (get; on a miss, store with cost 0). Each trace runs at 1 %, 5 %
// and 10 % of its distinct keys. With --json, one line per trace, capacity and policy; without,
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
    let cache = MemoryCache<UInt32, UInt32>(countLimit: capacity, policy: policy)
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
    let folder = context.tracesFolder
    let files = try Traces.files(in: folder)
    guard !files.isEmpty else { throw BenchError("no *.u32 traces in \(folder.path)") }
    let expectations = try Traces.expectations(in: folder)

    if !context.json {
        print("hitratio: traces in \(folder.path); misses per policy, and their ratio to lru and to the best")
        print("online policy in expected.csv (its name in brackets), where it has the cell")
    }
    for file in files {
        let name = file.deletingPathExtension().lastPathComponent
        let trace = try Traces.load(file)
        guard !trace.isEmpty else { continue }
        for capacity in Traces.capacities(distinctKeys: Traces.distinctKeys(trace)) where capacity > 0 {
            var lruMisses = 0
            let cell = expectations.filter { $0.trace == name && $0.capacity == capacity && $0.policy != "Belady" }
            let best = cell.min { $0.misses < $1.misses }
            for (impl, policy) in hitRatioPolicies {
                let (misses, nanoseconds) = replay(trace, capacity: capacity, policy: policy)
                if impl == "lru" { lruMisses = misses }
                let nsPerOp = (Double(nanoseconds) / Double(trace.count) * 10).rounded() / 10
                let ratio = Double(misses) / Double(trace.count)
                if context.json {
                    print(
                        #"{"suite":"hitratio","case":"\#(name)","impl":"\#(impl)","n":\#(capacity),"bytes":0,"ns_per_op":\#(nsPerOp),"misses":\#(misses),"miss_ratio":\#(String(format: "%.6f", ratio))}"#
                    )
                } else {
                    var line = pad(name, 16) + pad(impl, 13) + pad("n=\(capacity)", 9) + pad("misses=\(misses)", 16)
                    line +=
                        pad(String(format: "ratio=%.4f", ratio), 14)
                        + pad(String(format: "vs-lru=%.3f", Double(misses) / Double(lruMisses)), 14)
                    if let best {
                        line += pad(String(format: "vs-best=%.3f", Double(misses) / Double(best.misses)) + " [\(best.policy)]", 28)
                    }
                    print(line + "\(nsPerOp) ns/req")
                }
            }
        }
    }
}

private func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}
