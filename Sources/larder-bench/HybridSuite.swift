import Foundation
import Larder
import LarderTestSupport

// The hybrid suite: reads through HybridCache of 4 KiB payloads over n keys, beside the tier
// that serves them used on its own, to show what the hybrid layer adds.
//
// - `get-hit-memory`: every key is in memory. `hybrid` = `HybridCache.value(forKey:)` with
//   default options (memory policy `.recommended`, TinyLFU); `memory-only` =
//   `MemoryCache.value(forKey:)` on the same keys, with the same policy. `hybrid-lru` and
//   `memory-only-lru`: the same pair under LRU (the `MemoryCache` default). The hybrid's entries carry the disk's
//   expiry, the plain cache's none.
// - `get-hit-memory-typed`: every key is in a typed view's memory (`try HybridCache.typed(_:)`),
//   values of a small Codable struct holding a 4 KiB payload. `typed` = `TypedCache.value(forKey:)`;
//   `memory-only` = `MemoryCache<String, BenchProfile>.value(forKey:)` with the same policy.
// - `get-hit-disk`: the memory tier holds one entry (count limit 1), so every read misses
//   memory, loads from disk and promotes the value (evicting the previous one). `hybrid` =
//   `HybridCache.value(forKey:)`; `disk-only` = `DiskCache.value(forKey:)` on the same keys,
//   in a folder of its own, with the hybrid's disk options (no payloads kept in memory: the
//   hybrid turns that off, its memory tier keeping values instead).
//
// With `LARDER_BENCH_SHARED_FOLDER=1` every disk tier shares its folder with other writers, so
// that each memory look first checks the folder's change log.
//
// Each pair is measured alternately (five rounds for the memory cases, `repeats` rounds of
// `repeats` loops for the disk case), each side's median kept: a burst of load from other
// processes then hits both sides of a ratio alike.

/// The typed case's value: what an app might keep decoded.
struct BenchProfile: Codable, Sendable {
    var id: Int
    var name: String
    var payload: Data
}

func runHybridSuite(_ context: BenchContext) throws {
    let sharesFolder = ProcessInfo.processInfo.environment["LARDER_BENCH_SHARED_FOLDER"] == "1"
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

    // Memory hits: untyped and typed, each beside a plain MemoryCache with the same policy.
    do {
        func hybrid(_ name: String, policy: EvictionPolicy) throws -> HybridCache {
            var options = HybridCacheOptions(directory: URL(fileURLWithPath: directory.sub(name)))
            options.disk.sharesFolderWithWriters = sharesFolder
            options.memory.policy = policy
            let hybrid = try HybridCache(options: options)
            for key in keys { try hybrid.store(payload, forKey: key) }
            return hybrid
        }
        func memoryOnly(policy: EvictionPolicy) throws -> MemoryCache<String, Data> {
            let memory = try MemoryCache<String, Data>(policy: policy)
            for key in keys { try memory.store(payload, forKey: key) }
            return memory
        }
        let recommended = try hybrid("memory", policy: .recommended)
        let lru = try hybrid("memory-lru", policy: .lru)
        let plain = try memoryOnly(policy: .recommended)
        let plainLRU = try memoryOnly(policy: .lru)
        let profiles = try recommended.typed(BenchProfile.self)
        let plainProfiles = try MemoryCache<String, BenchProfile>(policy: .recommended)
        for (index, key) in keys.enumerated() {
            let profile = BenchProfile(id: index, name: key, payload: payload)
            try profiles.store(profile, forKey: "typed/" + key)
            try plainProfiles.store(profile, forKey: "typed/" + key)
        }
        let typedProbes = probes.map { "typed/" + $0 }
        func typedLoop(_ read: (String) throws -> BenchProfile?) throws -> Double {
            try context.measure(iterations: n, repeats: repeats) {
                var total = 0
                for key in typedProbes { total &+= try read(key)?.payload.count ?? -1 }
                guard total == n * payload.count else { throw BenchError("reads returned \(total) bytes, expected \(n * payload.count)") }
            }
        }
        let cases: [(name: String, impl: String, run: () throws -> Double)] = [
            ("get-hit-memory", "hybrid", { try readLoop { try recommended.value(forKey: $0) } }),
            ("get-hit-memory", "memory-only", { try readLoop { plain.value(forKey: $0) } }),
            ("get-hit-memory", "hybrid-lru", { try readLoop { try lru.value(forKey: $0) } }),
            ("get-hit-memory", "memory-only-lru", { try readLoop { plainLRU.value(forKey: $0) } }),
            ("get-hit-memory-typed", "typed", { try typedLoop { try profiles.value(forKey: $0) } }),
            ("get-hit-memory-typed", "memory-only", { try typedLoop { plainProfiles.value(forKey: $0) } }),
        ]
        var samples = [[Double]](repeating: [], count: cases.count)
        for _ in 0 ..< 5 {
            for (index, item) in cases.enumerated() { samples[index].append(try item.run()) }
        }
        for (index, item) in cases.enumerated() {
            let median = samples[index].sorted()[samples[index].count / 2]
            context.report(suite: "hybrid", case: item.name, impl: item.impl, n: n, bytes: payload.count, nsPerOp: median)
        }
        recommended.close()
        lru.close()
    }

    // Disk hits, with promotion: each side in a folder of its own, both open at once and
    // measured alternately, as the memory cases are.
    do {
        var options = HybridCacheOptions(directory: URL(fileURLWithPath: directory.sub("disk-hybrid")))
        options.disk.sharesFolderWithWriters = sharesFolder
        options.memory.countLimit = 1
        let hybrid = try HybridCache(options: options)
        // The disk tier as the hybrid configures it: no payloads kept in memory, a job the
        // hybrid's memory tier does.
        var diskOptions = DiskCacheOptions(directory: URL(fileURLWithPath: directory.sub("disk-only")))
        diskOptions.sharesFolderWithWriters = sharesFolder
        diskOptions.maximumPayloadMemory = 0
        let disk = try DiskCache(options: diskOptions)
        for key in keys {
            try hybrid.store(payload, forKey: key, in: .disk)
            try disk.store(payload, forKey: key)
        }
        var viaHybrid: [Double] = []
        var direct: [Double] = []
        for _ in 0 ..< repeats {
            viaHybrid.append(try readLoop { try hybrid.value(forKey: $0) })
            direct.append(try readLoop { try disk.value(forKey: $0) })
        }
        hybrid.close()
        disk.close()
        context.report(
            suite: "hybrid", case: "get-hit-disk", impl: "hybrid", n: n, bytes: payload.count, nsPerOp: viaHybrid.sorted()[repeats / 2])
        context.report(
            suite: "hybrid", case: "get-hit-disk", impl: "disk-only", n: n, bytes: payload.count, nsPerOp: direct.sorted()[repeats / 2])
    }
}
