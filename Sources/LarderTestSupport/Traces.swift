import Foundation

/// The shared cache traces (`shared/traces`, see its README): request sequences of `UInt32` keys
/// and `expected.csv`, the misses a reference simulator counts for each policy and capacity.
public enum Traces {
    /// The traces folder: `$LARDER_TRACES`, else the nearest `shared/traces` folder above this
    /// file that holds an `expected.csv` (beside the checkout in CI), else `/work/shared/traces`.
    public static var root: URL {
        if let override = ProcessInfo.processInfo.environment["LARDER_TRACES"] {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            let candidate = folder.appendingPathComponent("shared/traces", isDirectory: true)
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("expected.csv").path) {
                return candidate
            }
            folder.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: "/work/shared/traces", isDirectory: true)
    }

    /// The `.u32` trace files in `folder`, sorted by name.
    public static func files(in folder: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "u32" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// Reads a trace: one little-endian `UInt32` key per request.
    public static func load(_ url: URL) throws -> [UInt32] {
        let data = try Data(contentsOf: url)
        return data.withUnsafeBytes { raw in
            (0 ..< data.count / 4).map { UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)) }
        }
    }

    /// The number of distinct keys in a trace.
    public static func distinctKeys(_ trace: [UInt32]) -> Int {
        Set(trace).count
    }

    /// The capacities a trace is replayed at: 1 %, 5 % and 10 % of its distinct keys, rounded to
    /// the nearest entry (halves away from zero).
    public static func capacities(distinctKeys: Int) -> [Int] {
        [0.01, 0.05, 0.10].map { Int((Double(distinctKeys) * $0).rounded()) }
    }

    /// One row of `expected.csv`.
    public struct Expectation: Sendable, Hashable {
        /// The trace's name, without `.u32`.
        public var trace: String
        /// The cache's capacity, in entries.
        public var capacity: Int
        /// The policy, as the reference simulator names it (`LRU`, `S3-FIFO`, `Belady`, ...).
        public var policy: String
        /// The misses it counts.
        public var misses: Int
        /// Misses over requests.
        public var missRatio: Double
    }

    /// The rows of `expected.csv` in `folder`, or none when it has no such file.
    public static func expectations(in folder: URL) throws -> [Expectation] {
        let url = folder.appendingPathComponent("expected.csv")
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        let text = try String(contentsOf: url, encoding: .utf8)
        // Split on any line break: "\r\n" is one Character in Swift, so splitting on "\n" misses it.
        return text.split(whereSeparator: \.isNewline).dropFirst().compactMap { line in
            let fields = line.split(separator: ",").map(String.init)
            guard fields.count == 7, let capacity = Int(fields[3]), let misses = Int(fields[5]), let ratio = Double(fields[6]) else {
                return nil
            }
            return Expectation(trace: fields[0], capacity: capacity, policy: fields[4], misses: misses, missRatio: ratio)
        }
    }
}
