#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LarderTestSupport

/// What every suite is told about the run.
struct BenchContext {
    /// Use smaller sizes, so the whole run takes seconds.
    var quick: Bool
    /// Print one JSON object per line instead of aligned rows.
    var json: Bool
    /// The folder of `*.u32` traces the hitratio suite replays (`--traces`); `nil` for the default.
    var traces: String? = nil

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

    /// Prints one result: the exact JSON line with `--json`, else an aligned row.
    func report(suite: String, case name: String, impl: String, n: Int, bytes: Int, nsPerOp: Double) {
        let rounded = (nsPerOp * 10).rounded() / 10
        if json {
            print(
                #"{"suite": "\#(jsonEscaped(suite))", "case": "\#(jsonEscaped(name))", "impl": "\#(jsonEscaped(impl))", "n": \#(n), "bytes": \#(bytes), "ns_per_op": \#(rounded)}"#
            )
        } else {
            print(pad(suite, 8) + pad(name, 14) + pad(impl, 18) + pad("n=\(n)", 12) + pad("bytes=\(bytes)", 12) + "\(rounded) ns/op")
        }
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
