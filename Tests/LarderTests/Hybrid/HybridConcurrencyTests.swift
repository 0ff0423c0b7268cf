import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Larder

/// A log of concurrent operations on one key, stamped with a global tick, from which a read can
/// be judged without knowing the order the cache chose.
///
/// After a thread's store or remove that *started* at tick `s` returns, a read by the same thread
/// may return the value of a store, or nil from a remove, only if that store or remove had not
/// finished before `s` (its end tick, recorded after it returned, is above `s`, or not recorded
/// yet). A read of memory alone may miss (a store to the disk alone leaves memory empty), but
/// must not be stale. Anything that finished before `s` was ordered before the thread's own write and was
/// replaced by it: seeing it is a stale read. End ticks are taken after the call returns, so they
/// can only be late: a late tick can hide a violation, never invent one.
private final class OperationLog: Sendable {
    private struct State {
        var storeEnd: [UInt64: Int] = [:]
        var storeStarted: Set<UInt64> = []
        var removes: [(start: Int, end: Int?)] = []
        var violations: [String] = []
        var hits = 0
        var misses = 0
    }
    private let clock = Atomic<Int>(0)
    private let state = LarderMutex(State())

    func tick() -> Int { clock.add(1, ordering: .sequentiallyConsistent).newValue }

    func storeStarting(_ version: UInt64) -> Int {
        state.withLock { _ = $0.storeStarted.insert(version) }
        return tick()
    }
    func storeFinished(_ version: UInt64) {
        let t = tick()
        state.withLock { $0.storeEnd[version] = t }
    }

    func removeStarting() -> (id: Int, start: Int) {
        let start = tick()
        let id = state.withLock { s in
            s.removes.append((start, nil))
            return s.removes.count - 1
        }
        return (id, start)
    }
    func removeFinished(_ id: Int) {
        let t = tick()
        state.withLock { $0.removes[id].end = t }
    }

    /// Judges a read that returned `version` (nil for no value) after the reader's own write started at `barrier`.
    func check(read version: UInt64?, barrier: Int?, thread: Int, tiers: CacheTiers) {
        state.withLock { s in
            if version == nil { s.misses += 1 } else { s.hits += 1 }
            if let version, !s.storeStarted.contains(version) {
                s.violations.append("thread \(thread) read version \(version), which nobody stored")
                return
            }
            guard let barrier else { return }
            if let version {
                if let end = s.storeEnd[version], end <= barrier {
                    s.violations.append(
                        "thread \(thread) read stale version \(version) (finished at \(end), before its write at \(barrier)) from \(tiers)")
                }
            } else if tiers != .memory, !s.removes.contains(where: { ($0.end ?? .max) > barrier }) {
                s.violations.append(
                    "thread \(thread) read nothing from \(tiers) though no remove overlapped or followed its write at \(barrier)")
            }
        }
    }

    var violations: [String] { state.withLock { $0.violations } }
    var counts: (hits: Int, misses: Int) { state.withLock { ($0.hits, $0.misses) } }
}

/// A clock stuck at one time that sometimes pauses the thread reading it: the cache reads the
/// clock between loading a record and promoting it, so the pauses widen the windows in which a
/// missing per-key lock would let a store or remove slip in. Not a timing assertion: nothing
/// depends on how long the pauses last. Which reads pause, and for how long, follows from the
/// seed and the read's place in the sequence of reads.
private final class JitteryClock: CacheClock, Sendable {
    private let seed: UInt64
    private let reads = Atomic<UInt64>(0)

    init(seed: UInt64) {
        self.seed = seed
    }

    var now: Double {
        var random = SplitMix64(seed: seed &+ reads.wrappingAdd(1, ordering: .relaxed).oldValue)
        let roll = random.next()
        if roll % 4 == 0 { usleep(UInt32((roll >> 8) % 300)) }
        return 1_700_000_000
    }
}

@Suite struct HybridConcurrencyTests {
    @Test(arguments: [UInt64(1), 2, 3])
    func sameKeyStoresRemovesAndReadsNeverServeStaleValues(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = hybridOptions(dir.url)
        options.disk.clock = JitteryClock(seed: seed)
        let cache = try HybridCache(options: options)
        let log = OperationLog()
        let threads = 4
        let operations = 400
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SplitMix64(seed: seed &* 1_000 &+ UInt64(thread))
            var barrier: Int?
            for i in 0 ..< operations {
                let roll = Int.random(in: 0 ..< 10, using: &random)
                do {
                    if roll < 3 {
                        let version = UInt64(thread) << 32 | UInt64(i + 1)
                        let start = log.storeStarting(version)
                        // Stores to the disk alone drop the memory copy, so that reads go to the disk and promote.
                        let tiers: CacheTiers = roll == 0 ? .disk : .all
                        try cache.store(withUnsafeBytes(of: version) { Data($0) }, forKey: "k", in: tiers)
                        log.storeFinished(version)
                        barrier = start
                    } else if roll < 4 {
                        let (id, start) = log.removeStarting()
                        try cache.remove(forKey: "k")
                        log.removeFinished(id)
                        barrier = start
                    } else {
                        let tiers: CacheTiers = [.all, .disk, .memory][roll % 3]
                        let data = try cache.value(forKey: "k", from: tiers)
                        let version = data.map { $0.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } }
                        log.check(read: version, barrier: barrier, thread: thread, tiers: tiers)
                    }
                } catch {
                    log.check(read: UInt64.max, barrier: nil, thread: thread, tiers: [])  // recorded as a violation
                }
            }
        }
        #expect(log.violations.isEmpty, "\(log.violations.prefix(5))")
        let counts = log.counts
        #expect(counts.hits > 0 && counts.misses > 0)  // both outcomes were exercised
    }
}
