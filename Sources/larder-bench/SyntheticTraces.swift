import Foundation
import LarderTestSupport

// Synthetic traces for `hitratio --synthetic`: workloads the recorded traces do not cover, made
// in-process from fixed seeds, so every run replays exactly the same requests. Keys are `UInt32`
// as in a `.u32` file; each trace's distinct keys set its capacities (1 %, 5 % and 10 %), as for
// a recorded one, and the shapes are chosen so that those capacities fall where the workload is
// interesting (a loop larger or smaller than the cache, a cache at half or 110 % of a working set).

/// One synthetic trace: a name (as `hitratio` prints it) and its requests.
struct SyntheticTrace {
    var name: String
    var keys: [UInt32]
}

/// Draws ranks `0 ..< count` with probability proportional to `1 / (rank + 1)^exponent`.
struct ZipfSampler {
    private let cumulative: [Double]

    init(count: Int, exponent: Double) {
        var total = 0.0
        var cumulative: [Double] = []
        cumulative.reserveCapacity(count)
        for rank in 0 ..< count {
            total += 1 / pow(Double(rank + 1), exponent)
            cumulative.append(total)
        }
        self.cumulative = cumulative.map { $0 / total }
    }

    /// One rank.
    func next(using random: inout SplitMix64) -> Int {
        let u = Double(random.next() >> 11) / Double(1 << 53)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < u { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

enum SyntheticTraces {
    /// Every synthetic trace, in the order `hitratio --synthetic` replays them. `recorded` are the
    /// shipped traces by name (for the concatenations); missing ones are left out of those.
    static func all(recorded: [String: [UInt32]]) -> [SyntheticTrace] {
        var traces: [SyntheticTrace] = [
            SyntheticTrace(name: "loop", keys: loop(length: 20_000, requests: 1_000_000)),
            SyntheticTrace(name: "loop-zipf", keys: loopWithZipf(seed: 11)),
            SyntheticTrace(name: "loops-mixed", keys: mixedLoops(seed: 12)),
            SyntheticTrace(name: "scan-zipf", keys: zipfWithScans(seed: 13)),
            SyntheticTrace(name: "zipf0.6", keys: zipf(seed: 14, exponent: 0.6)),
            SyntheticTrace(name: "zipf0.9", keys: zipf(seed: 15, exponent: 0.9)),
            SyntheticTrace(name: "zipf1.2", keys: zipf(seed: 16, exponent: 1.2)),
            SyntheticTrace(name: "drift-fast", keys: drift(seed: 17, workingSet: 2_000, requestsPerKey: 10)),
            SyntheticTrace(name: "drift", keys: drift(seed: 18, workingSet: 2_000, requestsPerKey: 50)),
            SyntheticTrace(name: "drift-slow", keys: drift(seed: 19, workingSet: 1_000, requestsPerKey: 200)),
            SyntheticTrace(name: "feed", keys: feed(seed: 20)),
            SyntheticTrace(name: "phases-new", keys: phases(seed: 21, sets: 5, revisit: false)),
            SyntheticTrace(name: "phases-back", keys: phases(seed: 22, sets: 3, revisit: true)),
        ]
        let order = ["c2k_web07", "c2k_web12", "c2k_orm_busy", "c2k_web07"]
        if order.allSatisfy({ recorded[$0] != nil }) {
            // The first 600,000 requests of orm_busy keep the concatenation's parts of a size.
            let parts = order.map { name in Array(recorded[name]!.prefix(name == "c2k_orm_busy" ? 600_000 : .max)) }
            traces.append(SyntheticTrace(name: "concat-recorded", keys: concatenated(parts)))
            traces.append(SyntheticTrace(name: "concat-reversed", keys: concatenated(parts.reversed())))
        }
        return traces
    }

    /// `0, 1, ..., length - 1` over and over.
    static func loop(length: Int, requests: Int) -> [UInt32] {
        (0 ..< requests).map { UInt32($0 % length) }
    }

    /// Half the requests walk a loop of 1,000 keys, half draw from Zipf 0.9 over 100,000 others:
    /// the loop fits the cache at 5 % and 10 %, not at 1 %.
    static func loopWithZipf(seed: UInt64) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        let zipf = ZipfSampler(count: 100_000, exponent: 0.9)
        var position = 0
        return (0 ..< 1_000_000).map { _ in
            if random.below(2) == 0 {
                position = (position + 1) % 1_000
                return UInt32(position)
            }
            return UInt32(1_000 + zipf.next(using: &random))
        }
    }

    /// Loops of several lengths (300 to 30,000 keys), each run a few times, over one key space.
    static func mixedLoops(seed: UInt64) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        let lengths = [300, 1_000, 3_000, 10_000, 30_000]
        var keys: [UInt32] = []
        while keys.count < 1_500_000 {
            let length = lengths[random.below(lengths.count)]
            let start = random.below(30_000 - length + 1)
            for _ in 0 ..< 2 + random.below(4) { keys += (start ..< start + length).map { UInt32($0) } }
        }
        return keys
    }

    /// Zipf 0.9 over 50,000 keys, with a scan of 20,000 keys never seen again every 100,000 requests.
    static func zipfWithScans(seed: UInt64) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        let zipf = ZipfSampler(count: 50_000, exponent: 0.9)
        var keys: [UInt32] = []
        var fresh = 50_000
        for round in 0 ..< 10 {
            keys += (0 ..< 100_000).map { _ in UInt32(zipf.next(using: &random)) }
            if round < 9 {
                keys += (fresh ..< fresh + 20_000).map { UInt32($0) }
                fresh += 20_000
            }
        }
        return keys
    }

    /// One million requests drawn from Zipf over 100,000 keys.
    static func zipf(seed: UInt64, exponent: Double) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        let zipf = ZipfSampler(count: 100_000, exponent: exponent)
        return (0 ..< 1_000_000).map { _ in UInt32(zipf.next(using: &random)) }
    }

    /// A working set of `workingSet` consecutive keys, read uniformly, that slides forward by one
    /// key every `requestsPerKey` requests: ten working sets' worth of keys in all, so that the 5 %
    /// and 10 % capacities hold 55 % and 110 % of the working set.
    static func drift(seed: UInt64, workingSet: Int, requestsPerKey: Int) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        let requests = 10 * workingSet * requestsPerKey
        return (0 ..< requests).map { i in UInt32(i / requestsPerKey + random.below(workingSet)) }
    }

    /// A news feed: a new key every 20 requests, and reads that favour the newest keys (Zipf 0.8
    /// over how many keys ago the key was new, up to 20,000).
    static func feed(seed: UInt64) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        let age = ZipfSampler(count: 20_000, exponent: 0.8)
        return (0 ..< 1_000_000).map { i in
            let newest = 20_000 + i / 20
            return UInt32(newest - age.next(using: &random))
        }
    }

    /// Abrupt changes of workload: phases of 200,000 requests, each Zipf 0.9 over its own set of
    /// 20,000 keys. With `revisit`, `sets` sets take turns (A B C A B C ...), eight phases in all;
    /// without, each of `sets` phases has a set never seen before.
    static func phases(seed: UInt64, sets: Int, revisit: Bool) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        let zipf = ZipfSampler(count: 20_000, exponent: 0.9)
        var keys: [UInt32] = []
        for phase in 0 ..< (revisit ? 8 : sets) {
            let base = (phase % sets) * 20_000
            keys += (0 ..< 200_000).map { _ in UInt32(base + zipf.next(using: &random)) }
        }
        return keys
    }

    /// The traces one after another, each part's keys moved past the previous parts' so that no
    /// two parts share a key: an abrupt change between unrelated recorded workloads.
    static func concatenated(_ parts: [[UInt32]]) -> [UInt32] {
        var keys: [UInt32] = []
        var offset: UInt32 = 0
        for part in parts {
            keys += part.map { $0 &+ offset }
            offset &+= (part.max() ?? 0) &+ 1
        }
        return keys
    }
}
