import Dispatch
import Foundation
import Larder
import Synchronization
import LarderTestSupport

// The concurrency suite: a mix of 90 % loads and 10 % stores (overwrites) of 4 KiB over 10,000
// keys, from one thread and from two. ns_per_op is wall time divided by the operations of all
// threads, so a lower mixed-2t than mixed-1t means the threads ran in parallel.
//
// `mixed-2p` and `mixed-4p`: the same workload from two and four processes (this binary, run as
// `--mixed-worker`), each a writer sharing the one folder with the others; mixed-2p's two lists are
// mixed-2t's. `larder-shared`'s mixed-1t is mixed-1t from a writer opened as one that shares its
// folder (`DiskCacheOptions.sharesFolderWithWriters`), alone on it: what sharing costs a writer.
// The larder cases are measured in rounds, one sample of each per round, each in a cache opened
// for it, so that a machine whose load changes during the run weighs on every case alike.
//
// `read-beside-writer`: loads of the first half of the keys on one thread while a second thread
// overwrites keys of the other half without pause; ns_per_op is per load. The keys differ, so a
// load waits for the writer only where the cache makes it wait: larder's loads and stores share 64
// key-lock stripes, and a store holds its stripe for the rename only, not while it writes the
// file: a load whose record falls in that stripe does not wait for the write.

/// The suite's keys, payload and operation lists, which the worker processes make again.
enum ConcurrencyWorkload {
    static let keyCount = 10_000
    static let keys = (0 ..< keyCount).map { "asset-\($0)" }
    static let payload = randomPayload(4096, seed: 99)
    /// The seeds of the lists of mixed-2t and mixed-2p (the first two) and of mixed-4p.
    static let seeds: [UInt64] = [2, 3, 5, 6]

    /// One operation list: the key's number, with the top bit set for a store.
    static func operations(count: Int, seed: UInt64) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        return (0 ..< count).map { _ in
            let key = UInt32(random.next() % UInt64(keyCount))
            return random.next() % 10 == 0 ? key | 0x8000_0000 : key
        }
    }

    /// Runs `list` on `store`.
    static func run(_ list: [UInt32], on store: any BenchStore) {
        do {
            var total = 0
            for op in list {
                let key = keys[Int(op & 0x7FFF_FFFF)]
                if op & 0x8000_0000 != 0 {
                    try store.store(payload, forKey: key)
                } else {
                    total &+= try store.load(forKey: key)?.count ?? 0
                }
            }
            blackHole(total)
        } catch {
            fatalError("concurrency: \(error)")
        }
    }
}

func runConcurrencySuite(_ context: BenchContext) throws {
    let keyCount = ConcurrencyWorkload.keyCount
    let keys = ConcurrencyWorkload.keys
    let payload = ConcurrencyWorkload.payload
    let operations = context.quick ? 20_000 : 100_000
    let repeats = context.quick ? 3 : 5
    let directory = try BenchDirectory("concurrency")
    defer { directory.remove() }

    let single = ConcurrencyWorkload.operations(count: operations, seed: 1)
    let readsOfTheFirstHalf = ConcurrencyWorkload.operations(count: operations, seed: 4).map {
        ($0 & 0x7FFF_FFFF) % UInt32(keyCount / 2)
    }
    let pair = ConcurrencyWorkload.seeds.prefix(2).map { ConcurrencyWorkload.operations(count: operations / 2, seed: $0) }

    let kinds: [(name: String, open: (String) throws -> any BenchStore & Sendable)] = [
        ("larder", { try LarderStore(directory: $0, sharesFolder: false) }),
        ("posix-floor", { try PosixFloorStore(directory: $0) }),
    ]
    // `LARDER_BENCH_MIXED_ONLY=1`: larder's mixed rows alone (no read-beside-writer, no posix-floor).
    let mixedOnly = ProcessInfo.processInfo.environment["LARDER_BENCH_MIXED_ONLY"] == "1"
    for kind in kinds where !mixedOnly || kind.name == "larder" {
        let folder = directory.sub(kind.name)
        let store = try kind.open(folder)
        let name = kind.name
        for key in keys { try store.store(payload, forKey: key) }
        if mixedOnly {
            store.close()
            try measureLarderRounds(context, folder: folder, operations: operations, repeats: repeats)
            removeTree(folder)
            continue
        }

        let besideWriter = context.measure(iterations: operations, repeats: repeats) {
            let stop = StopFlag()
            let writer = DispatchGroup()
            DispatchQueue.global().async(group: writer) {
                var i = 0
                while !stop.isSet {
                    do {
                        try store.store(payload, forKey: keys[keyCount / 2 + i % (keyCount / 2)])
                    } catch {
                        fatalError("\(name): \(error)")
                    }
                    i += 1
                }
            }
            ConcurrencyWorkload.run(readsOfTheFirstHalf, on: store)
            stop.set()
            writer.wait()
        }
        if name == "larder" {
            store.close()
            try measureLarderRounds(context, folder: folder, operations: operations, repeats: repeats)
        } else {
            let oneThread = context.measure(iterations: operations, repeats: repeats) { ConcurrencyWorkload.run(single, on: store) }
            let twoThreads = context.measure(iterations: operations, repeats: repeats) {
                DispatchQueue.concurrentPerform(iterations: 2) { ConcurrencyWorkload.run(pair[$0], on: store) }
            }
            context.report(suite: "concurrency", case: "mixed-1t", impl: name, n: keyCount, bytes: 4096, nsPerOp: oneThread)
            context.report(suite: "concurrency", case: "mixed-2t", impl: name, n: keyCount, bytes: 4096, nsPerOp: twoThreads)
            store.close()
        }
        context.report(suite: "concurrency", case: "read-beside-writer", impl: name, n: keyCount, bytes: 4096, nsPerOp: besideWriter)
        removeTree(folder)
    }
}

/// larder's mixed cases on `folder` (which holds the suite's keys): in `repeats` passes, after a
/// first pass that warms the caches and is not counted, one sample of each case, each in a cache
/// (or processes) opened for it and closed after; the median of each case's samples.
private func measureLarderRounds(_ context: BenchContext, folder: String, operations: Int, repeats: Int) throws {
    let single = ConcurrencyWorkload.operations(count: operations, seed: 1)
    let pair = ConcurrencyWorkload.seeds.prefix(2).map { ConcurrencyWorkload.operations(count: operations / 2, seed: $0) }
    var samples: [String: [Double]] = [:]

    /// One timed run of `body`, after an untimed one.
    func sample(_ name: String, counted: Bool, _ body: () throws -> Void) rethrows {
        try body()
        let start = monotonicNanoseconds()
        try body()
        if counted { samples[name, default: []].append(Double(monotonicNanoseconds() - start) / Double(operations)) }
    }

    for round in 0 ... repeats {
        let counted = round > 0
        let alone = try LarderStore(directory: folder, sharesFolder: false)
        sample("mixed-1t larder", counted: counted) { ConcurrencyWorkload.run(single, on: alone) }
        sample("mixed-2t larder", counted: counted) {
            DispatchQueue.concurrentPerform(iterations: 2) { ConcurrencyWorkload.run(pair[$0], on: alone) }
        }
        alone.close()
        let shared = try LarderStore(directory: folder, sharesFolder: true)
        sample("mixed-1t larder-shared", counted: counted) { ConcurrencyWorkload.run(single, on: shared) }
        shared.close()
        for processes in [2, 4] {
            let workers = try MixedWorkers(
                folder: folder, seeds: Array(ConcurrencyWorkload.seeds.prefix(processes)), operations: operations / processes)
            defer { workers.close() }
            try sample("mixed-\(processes)p larder", counted: counted) { try workers.runOnce() }
        }
    }
    for (name, impl) in [
        ("mixed-1t", "larder"), ("mixed-2t", "larder"), ("mixed-1t", "larder-shared"), ("mixed-2p", "larder"), ("mixed-4p", "larder"),
    ] {
        let sorted = (samples["\(name) \(impl)"] ?? []).sorted()
        guard !sorted.isEmpty else { continue }
        context.report(
            suite: "concurrency", case: name, impl: impl, n: ConcurrencyWorkload.keyCount, bytes: 4096, nsPerOp: sorted[sorted.count / 2])
    }
}

/// A flag one thread sets and another polls.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}
