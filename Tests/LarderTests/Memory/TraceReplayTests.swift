import Foundation
@testable import Larder
import LarderTestSupport
import Testing

/// Replays the small recorded traces of `shared/traces` (cache2k's web traces, CC BY 4.0) as
/// `larder-bench hitratio` does: get; on a miss, store.
@Suite("Trace replay")
struct TraceReplayTests {
    static let smallTraces = ["c2k_web07", "c2k_web12"]

    /// The trace and its `expected.csv` rows; fails, rather than skips, when the shared folder is
    /// missing (CI keeps `shared/` beside the checkout; `$LARDER_TRACES` points elsewhere).
    func load(_ name: String) throws -> (trace: [UInt32], expected: [Traces.Expectation]) {
        let folder = Traces.root
        let file = folder.appendingPathComponent("\(name).u32")
        try #require(
            FileManager.default.fileExists(atPath: file.path),
            "trace \(file.path) is missing: put shared/traces beside the checkout or set LARDER_TRACES")
        let expected = try Traces.expectations(in: folder).filter { $0.trace == name }
        try #require(!expected.isEmpty, "expected.csv in \(folder.path) has no rows for \(name)")
        return (try Traces.load(file), expected)
    }

    func misses(_ trace: [UInt32], capacity: Int, policy: EvictionPolicy) throws -> Int {
        let cache = try MemoryCache<UInt32, UInt32>(countLimit: capacity, policy: policy)
        var misses = 0
        for key in trace where cache.value(forKey: key) == nil {
            misses += 1
            try cache.store(key, forKey: key)
        }
        #expect(cache.statistics.misses == misses)
        #expect(cache.count == min(capacity, Traces.distinctKeys(trace)))
        return misses
    }

    @Test("LRU misses exactly as many times as the reference simulator's LRU", arguments: smallTraces)
    func lruIsExact(name: String) throws {
        let (trace, expected) = try load(name)
        let capacities = Traces.capacities(distinctKeys: Traces.distinctKeys(trace))
        #expect(capacities.count == 3)
        for capacity in capacities {
            let row = try #require(expected.first { $0.capacity == capacity && $0.policy == "LRU" }, "no LRU row at \(capacity)")
            #expect(try misses(trace, capacity: capacity, policy: .lru) == row.misses, "\(name) at \(capacity)")
        }
    }

    @Test("TinyLFU misses less than LRU on the web traces", arguments: smallTraces)
    func tinyLFUBeatsLRU(name: String) throws {
        let (trace, expected) = try load(name)
        for capacity in Traces.capacities(distinctKeys: Traces.distinctKeys(trace)) {
            let lru = try #require(expected.first { $0.capacity == capacity && $0.policy == "LRU" }).misses
            let tiny = try misses(trace, capacity: capacity, policy: .recommended)
            // Measured 0.87-0.95 of LRU; the frequency sketch's hashing varies from run to run.
            #expect(Double(tiny) < 0.98 * Double(lru), "\(name) at \(capacity): \(tiny) misses against LRU's \(lru)")
        }
    }
}
