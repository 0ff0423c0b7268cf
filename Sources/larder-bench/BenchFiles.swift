#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LarderTestSupport

/// A scratch folder for one suite, under the temporary directory (same file system as `/tmp`),
/// removed by ``remove()``.
struct BenchDirectory {
    let path: String

    /// Makes `$TMPDIR/larder-bench-<name>-XXXXXX`.
    init(_ name: String) throws {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/larder-bench-\(name)-XXXXXX"
        var template = Array(base.utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchError("mkdtemp \(base): errno \(errno)")
        }
        path = String(cString: made)
    }

    /// A path inside the folder.
    func sub(_ name: String) -> String { path + "/" + name }

    /// Removes the folder and everything in it.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Removes a folder and everything in it, ignoring a missing one.
func removeTree(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// `count` random bytes from a seeded generator.
func randomPayload(_ count: Int, seed: UInt64) -> Data {
    var random = SplitMix64(seed: seed)
    var bytes = [UInt8](repeating: 0, count: count)
    for i in stride(from: 0, to: count, by: 8) {
        let word = random.next()
        for j in 0 ..< min(8, count - i) { bytes[i + j] = UInt8(truncatingIfNeeded: word >> (8 * j)) }
    }
    return Data(bytes)
}

/// The median of some samples.
func median(_ samples: [Double]) -> Double {
    let sorted = samples.sorted()
    return sorted[sorted.count / 2]
}
