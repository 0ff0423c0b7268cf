import Foundation
import Larder
import LarderTestSupport

// The hybrid suite: reads through HybridCache of 4 KiB payloads over n keys, beside the tier
// that serves them used on its own, to show what the hybrid layer adds.
//
// - `get-hit-memory`: every key is in memory. `hybrid` = `HybridCache.data(forKey:)`;
//   `memory-only` = `MemoryCache.value(forKey:)` on the same keys.
// - `get-hit-disk`: the memory tier holds one entry (count limit 1), so every read misses
//   memory, loads from disk and promotes the value (evicting the previous one). `hybrid` =
//   `HybridCache.data(forKey:)`; `disk-only` = `DiskCache.load(forKey:)` on the same keys.

func runHybridSuite(_ context: BenchContext) throws {
    let n = context.quick ? 2_000 : 10_000
    let repeats = context.quick ? 3 : 5
    let payload = randomPayload(4096, seed: 12)
    let keys = (0 ..< n).map { "asset-\($0)" }
    var random = SplitMix64(seed: 5)
    let probes = keys.shuffled(using: &random)
    let directory = try BenchDirectory("hybrid")
    defer { directory.remove() }

    func readLoop(_ read: (String) throws -> Data?) throws -> Double {
        try context.measure(iterations: n, repeats: repeats) {
            var total = 0
            for key in probes { total &+= try read(key)?.count ?? -1 }
            guard total == n * payload.count else { throw BenchError("reads returned \(total) bytes, expected \(n * payload.count)") }
        }
    }

    // Memory hits.
    do {
        let hybrid = try HybridCache(options: HybridCacheOptions(directory: URL(fileURLWithPath: directory.sub("memory"))))
        for key in keys { try hybrid.store(payload, forKey: key) }
        let memory = MemoryCache<String, Data>()
        for key in keys { try memory.store(payload, forKey: key) }
        let viaHybrid = try readLoop { try hybrid.value(forKey: $0) }
        let direct = try readLoop { memory.value(forKey: $0) }
        context.report(suite: "hybrid", case: "get-hit-memory", impl: "hybrid", n: n, bytes: payload.count, nsPerOp: viaHybrid)
        context.report(suite: "hybrid", case: "get-hit-memory", impl: "memory-only", n: n, bytes: payload.count, nsPerOp: direct)
        hybrid.close()
    }

    // Disk hits, with promotion.
    do {
        var options = HybridCacheOptions(directory: URL(fileURLWithPath: directory.sub("disk")))
        options.countLimit = 1
        let hybrid = try HybridCache(options: options)
        for key in keys { try hybrid.store(payload, forKey: key, in: .disk) }
        let viaHybrid = try readLoop { try hybrid.value(forKey: $0) }
        hybrid.close()
        let disk = try DiskCache(options: DiskCacheOptions(directory: URL(fileURLWithPath: directory.sub("disk"))))
        let direct = try readLoop { try disk.value(forKey: $0) }
        disk.close()
        context.report(suite: "hybrid", case: "get-hit-disk", impl: "hybrid", n: n, bytes: payload.count, nsPerOp: viaHybrid)
        context.report(suite: "hybrid", case: "get-hit-disk", impl: "disk-only", n: n, bytes: payload.count, nsPerOp: direct)
    }
}
