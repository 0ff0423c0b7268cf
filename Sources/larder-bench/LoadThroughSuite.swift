import Foundation
import Larder
import LarderTestSupport
import Synchronization

// The load-through suite: `HybridCache.value(forKey:expiry:staleWindows:orLoad:)`.
//
// - `coalesce-1000` (impl `larder`): 1,000 tasks ask at once for one missing key whose loader
//   sleeps 10 ms. `ns_per_op` is the wall time of the whole burst (the median of the bursts, each
//   on a fresh key), close to one load if the callers share it and near 10 s if they do not;
//   `loads` is the largest number of loader calls any burst made (must be 1).
// - `hit`: a memory hit through the load-through read (impl `orload`, with a loader closure that
//   captures its payload, as an app's would) beside a plain hybrid memory hit (impl `plain`, the
//   `async` `value(forKey:)`, so that both pay for an async call), measured alternately five
//   times each. Target: orload <= 1.1 x plain.

/// Counts loader calls across tasks.
private final class LoaderCalls: Sendable {
    let count = Atomic<Int>(0)
}

func runLoadThroughSuite(_ context: BenchContext) throws {
    let directory = try BenchDirectory("loadthrough")
    defer { directory.remove() }
    let payload = randomPayload(4096, seed: 14)

    // One burst of 1,000 callers per fresh key.
    do {
        let cache = try HybridCache(options: HybridCacheOptions(directory: URL(fileURLWithPath: directory.sub("coalesce"))))
        let callers = 1_000
        let bursts = context.quick ? 3 : 7
        let (nsPerBurst, mostLoads) = try blockingAwait { () async throws -> (Double, Int) in
            var samples: [Double] = []
            var mostLoads = 0
            for burst in 0 ... bursts {
                let calls = LoaderCalls()
                let key = "cover-\(burst)"
                let start = monotonicNanoseconds()
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0 ..< callers {
                        group.addTask {
                            try await cache.value(forKey: key, expiry: .seconds(3600)) {
                                calls.count.add(1, ordering: .relaxed)
                                try await Task.sleep(nanoseconds: 10_000_000)
                                return payload
                            }.count
                        }
                    }
                    for try await count in group where count != payload.count {
                        throw BenchError("a caller got \(count) bytes, expected \(payload.count)")
                    }
                }
                let elapsed = Double(monotonicNanoseconds() - start)
                mostLoads = max(mostLoads, calls.count.load(ordering: .relaxed))
                if burst > 0 { samples.append(elapsed) }  // the first burst warms up
            }
            samples.sort()
            return (samples[samples.count / 2], mostLoads)
        }
        context.report(
            suite: "loadthrough", case: "coalesce-1000", impl: "larder", n: callers, bytes: payload.count, nsPerOp: nsPerBurst,
            extra: ["loads": mostLoads])
        cache.close()
    }

    // Memory hits, through the load-through read and through the plain one.
    do {
        let n = context.quick ? 2_000 : 10_000
        let repeats = context.quick ? 3 : 5
        let keys = (0 ..< n).map { "asset-\($0)" }
        var random = SplitMix64(seed: 5)
        let probes = keys.shuffled(using: &random)
        let cache = try HybridCache(options: HybridCacheOptions(directory: URL(fileURLWithPath: directory.sub("hit"))))
        for key in keys { try cache.store(payload, forKey: key) }
        let expected = n * payload.count
        let (orLoad, plain) = try blockingAwait { () async throws -> (Double, Double) in
            // Five alternations, the median of each: a burst of load from elsewhere on the
            // machine hits both.
            var orLoad: [Double] = []
            var plain: [Double] = []
            for _ in 0 ..< 5 {
                orLoad.append(
                    try await context.measureAsync(iterations: n, repeats: repeats) {
                        var total = 0
                        for key in probes { total &+= try await cache.value(forKey: key) { payload }.count }
                        guard total == expected else { throw BenchError("reads returned \(total) bytes, expected \(expected)") }
                    })
                plain.append(
                    try await context.measureAsync(iterations: n, repeats: repeats) {
                        var total = 0
                        for key in probes { total &+= try await cache.value(forKey: key)?.count ?? -1 }
                        guard total == expected else { throw BenchError("reads returned \(total) bytes, expected \(expected)") }
                    })
            }
            return (orLoad.sorted()[2], plain.sorted()[2])
        }
        if cache.statistics.loads != 0 { throw BenchError("a hit called the loader") }
        context.report(suite: "loadthrough", case: "hit", impl: "orload", n: n, bytes: payload.count, nsPerOp: orLoad)
        context.report(suite: "loadthrough", case: "hit", impl: "plain", n: n, bytes: payload.count, nsPerOp: plain)
        cache.close()
    }
}
