import Foundation

/// The sized request traces of `shared/traces/sized` (see its README): each request a key and
/// the object's size in bytes, and `expected.csv`, what a reference simulator (libCacheSim)
/// measures for each policy at 1 %, 5 % and 10 % of a trace's working set.
public enum SizedTraces {
    /// The folder: `sized` inside ``Traces/root``.
    public static var root: URL {
        Traces.root.appendingPathComponent("sized", isDirectory: true)
    }

    /// One request: a key (dense, in first-seen order) and the object's size in bytes.
    public struct Request: Sendable, Hashable {
        /// The key.
        public var key: UInt32
        /// The object's size in bytes.
        public var size: Int
    }

    /// The `.kv32` trace files in `folder`, sorted by name.
    public static func files(in folder: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "kv32" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// Reads a trace: per request, two little-endian `UInt32`s, the key and the size.
    public static func load(_ url: URL) throws -> [Request] {
        let data = try Data(contentsOf: url)
        return data.withUnsafeBytes { raw in
            (0 ..< data.count / 8).map {
                Request(
                    key: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt32.self)),
                    size: Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8 + 4, as: UInt32.self))))
            }
        }
    }

    /// The working set: the sum of every distinct key's size (its last size, should one change).
    public static func workingSet(_ trace: [Request]) -> Int {
        var sizes: [UInt32: Int] = [:]
        for request in trace { sizes[request.key] = request.size }
        return sizes.values.reduce(0, +)
    }

    /// The fractions of the working set a trace is replayed at.
    public static let fractions = [0.01, 0.05, 0.1]

    /// The capacity in bytes for `fraction` of a working set of `workingSet` bytes: `floor(W × f)`.
    public static func capacity(workingSet: Int, fraction: Double) -> Int {
        Int((Double(workingSet) * fraction).rounded(.down))
    }

    /// One row of `expected.csv`.
    public struct Expectation: Sendable, Hashable {
        /// The trace's name, without `.kv32`.
        public var trace: String
        /// The fraction of the working set.
        public var fraction: Double
        /// The capacity in bytes.
        public var capacity: Int
        /// The policy, as the reference simulator names it (`LRU`, `GDSF`, `BeladySize`, ...).
        public var policy: String
        /// Misses over requests.
        public var objectMissRatio: Double
        /// The bytes of the missed requests over the bytes of all requests.
        public var byteMissRatio: Double
    }

    /// The rows of `expected.csv` in `folder`, or none when it has no such file.
    public static func expectations(in folder: URL) throws -> [Expectation] {
        let url = folder.appendingPathComponent("expected.csv")
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(whereSeparator: \.isNewline).dropFirst().compactMap { line in
            let fields = line.split(separator: ",").map(String.init)
            guard fields.count == 6, let fraction = Double(fields[1]), let capacity = Int(fields[2]),
                let objects = Double(fields[4]), let bytes = Double(fields[5])
            else { return nil }
            return Expectation(
                trace: fields[0], fraction: fraction, capacity: capacity, policy: fields[3], objectMissRatio: objects, byteMissRatio: bytes)
        }
    }

    /// The misses of one replay.
    public struct Misses: Sendable, Hashable {
        /// Requests that missed.
        public var objects = 0
        /// The bytes of the requests that missed.
        public var bytes = 0

        /// Nothing missed yet.
        public init() {}

        /// Counts a missed request of `size` bytes.
        public mutating func add(size: Int) {
            objects += 1
            bytes += size
        }
    }
}
