import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// The kept-descriptor cache on its own, over made-up descriptor numbers whose closes are
/// recorded instead of performed: who owns each descriptor, and which ones admission keeps.
@Suite("Kept record descriptors: admission and ownership")
struct DescriptorCacheAdmissionTests {
    /// Records the closes of a ``DescriptorCache``; closes nothing real.
    typealias Closes = RecordedCloses

    /// `count` draws of Zipf(`exponent`) over names `r0` ... (rank order), seeded.
    static func zipfDraws(names: Int, exponent: Double, count: Int, seed: UInt64) -> [String] {
        var random = SplitMix64(seed: seed)
        var cumulative: [Double] = []
        var total = 0.0
        for rank in 1 ... names {
            total += 1 / pow(Double(rank), exponent)
            cumulative.append(total)
        }
        return (0 ..< count).map { _ in
            let target = Double.random(in: 0 ..< total, using: &random)
            var low = 0
            var high = names - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] > target { high = middle } else { low = middle + 1 }
            }
            return "r\(low)"
        }
    }

    /// Replays `draws` `rounds` times as reads (lend, else open and offer); returns the share of
    /// reads after the first round that found a kept descriptor, and the closes the cache made.
    static func hitRate(limit: Int, draws: [String], rounds: Int) -> (hits: Double, closes: Int) {
        let closes = Closes(performing: false)
        let cache = DescriptorCache(limit: limit, calls: closes.calls)
        var next: Int32 = 1_000
        var hits = 0
        for round in 0 ..< rounds {
            for name in draws {
                if let fd = cache.lend(name) {
                    cache.giveBack(fd)
                    if round > 0 { hits += 1 }
                } else {
                    next += 1
                    _ = cache.keep(next, as: name)
                }
            }
        }
        return (Double(hits) / Double(draws.count * (rounds - 1)), closes.all.count)
    }

    @Test("under Zipf(0.9) reads the most read records hold the descriptors: above what an exact LRU reaches")
    func skewedReadsKeepTheHotRecords() {
        let draws = Self.zipfDraws(names: 20_000, exponent: 0.9, count: 20_000, seed: 9)
        // An exact LRU of 2,500 over these draws hits 61 % (simulated); the 2,500 most read hold 78 %.
        let kept = Self.hitRate(limit: 2_500, draws: draws, rounds: 6)
        #expect(kept.hits >= 0.75, "hit rate \(kept.hits)")
        let small = Self.hitRate(limit: 256, draws: draws, rounds: 6)
        // An exact LRU of 256 hits 32 %; the 256 most read hold 47 %.
        #expect(small.hits >= 0.40, "hit rate \(small.hits)")
    }

    @Test("a loop over more records than the bound keeps the first it reached instead of churning")
    func loopsDoNotChurn() {
        let names = (0 ..< 1_000).map { "n\($0)" }
        let result = Self.hitRate(limit: 100, draws: names, rounds: 6)
        // 100 of 1,000 names kept, each hit once a round; hardly any kept descriptor evicted for another.
        #expect(result.hits >= 0.09)
        #expect(result.closes <= 10, "\(result.closes) evictions")
    }

    @Test("records read once displace no kept descriptor of a record read often")
    func oneOffsDisplaceNothing() {
        let closes = Closes(performing: false)
        let cache = DescriptorCache(limit: 64, calls: closes.calls)
        var next: Int32 = 100
        for round in 0 ..< 4 {
            for i in 0 ..< 64 {
                let name = "hot-\(i)"
                if let fd = cache.lend(name) {
                    cache.giveBack(fd)
                } else {
                    next += 1
                    _ = cache.keep(next, as: name)
                }
            }
            if round == 3 { #expect(cache.counts.kept == 64) }
        }
        for i in 0 ..< 500 {
            next += 1
            #expect(!cache.keep(next, as: "once-\(i)"))
        }
        #expect(closes.all.isEmpty)
        #expect((0 ..< 64).allSatisfy { cache.isKeeping("hot-\($0)") })
    }

    @Test(
        "randomized against a model of ownership: each descriptor closed once, never while lent, the bound kept",
        arguments: [UInt64(1), 2, 3, 4])
    func ownershipAgainstModel(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let closes = Closes(performing: false)
        let limit = 4
        let cache = DescriptorCache(limit: limit, calls: closes.calls)
        let names = (0 ..< 10).map { "k\($0)" }
        // The model: who holds each descriptor handed to the cache.
        var owned: Set<Int32> = []  // taken by the cache, not closed yet
        var lent: [Int32: Int] = [:]  // lent and not given back
        var callerClosed: Set<Int32> = []  // refused by keep: the caller's to close
        var next: Int32 = 10
        var closedSoFar = 0
        for _ in 0 ..< 3_000 {
            let name = names[Int(random.next() % UInt64(names.count))]
            switch random.next() % 10 {
            case 0 ..< 4:
                if let fd = cache.lend(name) {
                    #expect(owned.contains(fd), "lent a descriptor the cache does not hold")
                    lent[fd, default: 0] += 1
                } else {
                    next += 1
                    if cache.keep(next, as: name) { owned.insert(next) } else { callerClosed.insert(next) }
                }
            case 4 ..< 7:
                // Give back one lent descriptor.
                if let fd = lent.keys.sorted().first {
                    cache.giveBack(fd)
                    lent[fd] = lent[fd]! > 1 ? lent[fd]! - 1 : nil
                }
            case 7, 8:
                cache.retire(name)
                #expect(!cache.isKeeping(name))
            default:
                if random.next() % 8 == 0 { _ = cache.relieve() } else { cache.retire(names[0]) }
            }
            // New closes: each of a descriptor the cache held, none lent, none twice.
            let all = closes.all
            for fd in all[closedSoFar...] {
                #expect(owned.remove(fd) != nil, "closed \(fd), which the cache did not hold (or closed it twice)")
                #expect(lent[fd] == nil, "closed \(fd) while lent")
                #expect(!callerClosed.contains(fd))
            }
            closedSoFar = all.count
            let counts = cache.counts
            #expect(counts.kept <= limit)
            #expect(counts.kept + counts.draining == owned.count, "every descriptor held is kept or draining")
        }
        // Giving everything back and retiring everything closes what the cache still held.
        for (fd, users) in lent { for _ in 0 ..< users { cache.giveBack(fd) } }
        cache.retireAll(closing: true)
        for fd in closes.all[closedSoFar...] { #expect(owned.remove(fd) != nil) }
        #expect(owned.isEmpty, "descriptors never closed: \(owned)")
        #expect(cache.counts.kept == 0 && cache.counts.draining == 0)
    }
}
