import Foundation
import Larder
import LarderRedis

// The remote suite's `get-throughput` case: GETs of one 4 KiB value by `n` concurrent callers
// (1, 16, 64), Larder's store beside Redis's own client benchmark on the same server.
//
// - Impl `store`: `RedisRemoteStore` alone. At n = 1, one caller of `values(forKeys:)` of the
//   one key, back to back; at 16 and 64, as many concurrent tasks, each calling the async
//   `fetchValues(forKeys:)` of the one key back to back (their commands share one connection).
// - Impl `redis-benchmark`: `redis-benchmark -t get -d 4096 -c N -n OPS --csv`, run by the suite
//   against the same server and the same key (`key:__rand_int__`, which `-t get` reads, holding
//   the same 4,096 bytes), its GETs a second turned into nanoseconds per GET.
//
// `ns_per_op` is the wall time of the whole run over its GETs (the inverse of the throughput).
// The two run in turn, three times each (once with `--quick`), and each reports its median, so
// that a busy neighbour on a shared machine reaches both alike. Without `redis-benchmark` on
// `PATH` only `store` is reported.

/// The key `redis-benchmark -t get` reads.
private let benchmarkKey = "key:__rand_int__"

func runThroughputCase(_ context: BenchContext, store: RedisRemoteStore, address: String) throws {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)
    let value = randomPayload(4096, seed: 16)
    _ = try store.store(value, forKey: benchmarkKey, expiresIn: 3_600_000, onlyIfAbsent: false, timeouts: timeouts)
    defer { try? store.remove(forKeys: [benchmarkKey], timeouts: timeouts) }
    let operations = context.quick ? 20_000 : 100_000
    let rounds = context.quick ? 1 : 3
    let tool = redisBenchmarkPath()
    if tool == nil { print("remote: get-throughput without redis-benchmark (not on PATH)") }
    // Warms up the connections, the shared one included.
    _ = try timeStore(store, callers: 1, operations: 1_000, size: value.count, timeouts: timeouts)
    _ = try timeStore(store, callers: 16, operations: 1_000, size: value.count, timeouts: timeouts)
    for callers in [1, 16, 64] {
        var storeSamples: [Double] = []
        var toolSamples: [Double] = []
        for _ in 0 ..< rounds {
            storeSamples.append(try timeStore(store, callers: callers, operations: operations, size: value.count, timeouts: timeouts))
            if let tool {
                toolSamples.append(try runRedisBenchmark(tool, address: address, callers: callers, operations: operations))
            }
        }
        context.report(
            suite: "remote", case: "get-throughput", impl: "store", n: callers, bytes: value.count, nsPerOp: middle(storeSamples))
        if !toolSamples.isEmpty {
            context.report(
                suite: "remote", case: "get-throughput", impl: "redis-benchmark", n: callers, bytes: value.count,
                nsPerOp: middle(toolSamples))
        }
    }
}

/// Nanoseconds a GET when `callers` read the benchmark key `operations` times in all.
private func timeStore(_ store: RedisRemoteStore, callers: Int, operations: Int, size: Int, timeouts: RemoteTimeouts) throws -> Double {
    let keys = [benchmarkKey]
    if callers == 1 {
        let start = monotonicNanoseconds()
        for _ in 0 ..< operations where try store.values(forKeys: keys, timeouts: timeouts).first??.data.count != size {
            throw BenchError("the store missed \(benchmarkKey)")
        }
        return Double(monotonicNanoseconds() - start) / Double(operations)
    }
    let each = operations / callers
    let elapsed = try blockingAwait { () async throws -> UInt64 in
        let start = monotonicNanoseconds()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0 ..< callers {
                group.addTask {
                    for _ in 0 ..< each where try await store.fetchValues(forKeys: keys, timeouts: timeouts).first??.data.count != size {
                        throw BenchError("the store missed \(benchmarkKey)")
                    }
                }
            }
            try await group.waitForAll()
        }
        return monotonicNanoseconds() - start
    }
    return Double(elapsed) / Double(each * callers)
}

/// Runs `redis-benchmark -t get -d 4096 -c callers -n operations --csv` against `address`:
/// nanoseconds a GET (10⁹ over its GETs a second).
private func runRedisBenchmark(_ tool: String, address: String, callers: Int, operations: Int) throws -> Double {
    guard let colon = address.lastIndex(of: ":") else { throw BenchError("--redis wants HOST:PORT, not \(address)") }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = [
        "-h", String(address[..<colon]), "-p", String(address[address.index(after: colon)...]), "-t", "get", "-d", "4096", "-c",
        String(callers), "-n", String(operations), "--csv",
    ]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    // `"GET","168350.17",...`: the second field is the GETs a second.
    for line in text.split(separator: "\n") where line.hasPrefix("\"GET\"") {
        let fields = line.split(separator: ",")
        if fields.count > 1, let rate = Double(fields[1].filter { $0 != "\"" }), rate > 0 { return 1e9 / rate }
    }
    throw BenchError("redis-benchmark printed no GET figure: \(text.prefix(200))")
}

/// `redis-benchmark` on `PATH`, or `nil`.
private func redisBenchmarkPath() -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for folder in path.split(separator: ":") {
        let candidate = "\(folder)/redis-benchmark"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

private func middle(_ samples: [Double]) -> Double {
    samples.sorted()[samples.count / 2]
}
