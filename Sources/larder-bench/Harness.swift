#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization
import Foundation
import LarderTestSupport

/// What every suite is told about the run.
struct BenchContext {
    /// Use smaller sizes, so the whole run takes seconds.
    var quick: Bool
    /// Print one JSON object per line instead of aligned rows.
    var json: Bool
    /// The Redis server of the remote suite (`--redis HOST:PORT`); without it, that suite skips.
    var redis: String? = nil
    /// The folder of `*.u32` traces the hitratio suite replays (`--traces`); `nil` for the default.
    var traces: String? = nil
    /// The record counts of the open and gc suites (`--sizes`); `nil` for their defaults.
    var sizes: [Int]? = nil
    /// Replay the synthetic traces instead of the folder's (`hitratio --synthetic`).
    var synthetic = false
    /// Replay the reference simulators too (`--references`; always with `--synthetic`).
    var references = false
    /// hitratio replays the sized traces through the disk tier's policies instead (`--sized`).
    var sized = false
    /// The seed of the recommended disk policy's victim draws in `hitratio --sized` (`--seed`).
    var seed: UInt64 = 0

    /// The traces folder: `--traces`, else `../shared/traces` from the current folder (the package
    /// root, in a checkout beside `shared/`), else the shared traces found from the source tree.
    var tracesFolder: URL {
        if let traces { return URL(fileURLWithPath: traces, isDirectory: true) }
        let beside = URL(fileURLWithPath: "../shared/traces", isDirectory: true)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: beside.path, isDirectory: &isDirectory), isDirectory.boolValue {
            return beside.standardizedFileURL
        }
        return Traces.root
    }

    /// Runs `body` once to warm up, then `repeats` more times, each run performing `iterations`
    /// operations, and returns the median time per operation in nanoseconds.
    ///
    /// The loop lives in `body`, so that a closure call per operation does not blur fast cases.
    func measure(iterations: Int, repeats: Int = 5, _ body: () throws -> Void) rethrows -> Double {
        precondition(iterations > 0 && repeats > 0)
        try body()
        var samples: [Double] = []
        for _ in 0 ..< repeats {
            let start = monotonicNanoseconds()
            try body()
            let elapsed = monotonicNanoseconds() - start
            samples.append(Double(elapsed) / Double(iterations))
        }
        samples.sort()
        return samples[samples.count / 2]
    }

    /// Prints one result: the exact JSON line with `--json`, else an aligned row. `extra` adds
    /// integer fields after `ns_per_op` (as `"loads": 1`).
    func report(
        suite: String, case name: String, impl: String, n: Int, bytes: Int, nsPerOp: Double, extra: KeyValuePairs<String, Int> = [:]
    ) {
        let rounded = (nsPerOp * 10).rounded() / 10
        if json {
            let fields = extra.map { #", "\#(jsonEscaped($0.key))": \#($0.value)"# }.joined()
            print(
                #"{"suite": "\#(jsonEscaped(suite))", "case": "\#(jsonEscaped(name))", "impl": "\#(jsonEscaped(impl))", "n": \#(n), "bytes": \#(bytes), "ns_per_op": \#(rounded)\#(fields)}"#
            )
        } else {
            let fields = extra.map { " \($0.key)=\($0.value)" }.joined()
            print(
                pad(suite, 8) + pad(name, 14) + pad(impl, 18) + pad("n=\(n)", 12) + pad("bytes=\(bytes)", 12) + "\(rounded) ns/op" + fields)
        }
        // Each row reaches a file or a pipe as it is printed, not when the run ends.
        fflush(nil)
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    private func jsonEscaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20:
                result += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Keeps a value alive as far as the optimizer can tell, so that measured work is not removed.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

extension BenchContext {
    /// `measure(iterations:repeats:_:)` for async work: a warm-up run, then the median of
    /// `repeats` runs, in nanoseconds per operation.
    func measureAsync(iterations: Int, repeats: Int = 5, _ body: () async throws -> Void) async rethrows -> Double {
        precondition(iterations > 0 && repeats > 0)
        try await body()
        var samples: [Double] = []
        for _ in 0 ..< repeats {
            let start = monotonicNanoseconds()
            try await body()
            samples.append(Double(monotonicNanoseconds() - start) / Double(iterations))
        }
        samples.sort()
        return samples[samples.count / 2]
    }
}

/// Runs async work from a synchronous suite and waits for it (suites are synchronous; the
/// load-through cases are async). Blocks the calling thread, never a thread of the pool.
func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        box.set(result)
        done.signal()
    }
    done.wait()
    return try box.get()
}

/// One result handed from a task to the thread waiting for it.
private final class ResultBox<T: Sendable>: Sendable {
    private let value = Mutex<Result<T, any Error>?>(nil)
    func set(_ result: Result<T, any Error>) { value.withLock { $0 = result } }
    func get() throws -> T { try value.withLock { $0! }.get() }
}
