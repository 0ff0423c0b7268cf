import Foundation
import LarderTestSupport

/// `count` draws from a Zipf distribution with exponent `exponent` over `keys`: the key of rank
/// *r* (1-based) comes with probability proportional to 1 / *r*^`exponent`. Ranks are given to the
/// keys in a shuffled order, so that the hot keys are spread over the folder as any keys are.
/// Seeded: the same arguments give the same probes.
func zipfProbes(over keys: [String], exponent: Double, count: Int, seed: UInt64) -> [String] {
    guard !keys.isEmpty else { return [] }
    var random = SplitMix64(seed: seed)
    let ranked = keys.shuffled(using: &random)
    var cumulative: [Double] = []
    cumulative.reserveCapacity(ranked.count)
    var total = 0.0
    for rank in 1 ... ranked.count {
        total += 1 / pow(Double(rank), exponent)
        cumulative.append(total)
    }
    return (0 ..< count).map { _ in
        let target = Double.random(in: 0 ..< total, using: &random)
        // The first rank whose cumulative weight exceeds the target.
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] > target { high = middle } else { low = middle + 1 }
        }
        return ranked[low]
    }
}
