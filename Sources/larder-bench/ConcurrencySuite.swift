import Dispatch
import Foundation
import Larder
import Synchronization
import LarderTestSupport

// The concurrency suite: a mix of 90 % loads and 10 % stores (overwrites) of 4 KiB over 10,000
// keys, from one thread and from two. ns_per_op is wall time divided by the operations of all
// threads, so a lower mixed-2t than mixed-1t means the threads ran in parallel.
//
// `read-beside-writer`: loads of the first half of the keys on one thread while a second thread
// overwrites keys of the other half without pause; ns_per_op is per load. The keys differ, so a
// load waits for the writer only where the cache makes it wait: larder's loads and stores share 64
// key-lock stripes, and a store holds its stripe for the rename only, not while it writes the
// file: a load whose record falls in that stripe does not wait for the write.

func runConcurrencySuite(_ context: BenchContext) throws {
    let keyCount = 10_000
    let operations = context.quick ? 20_000 : 100_000
    let repeats = context.quick ? 3 : 5
    let payload = randomPayload(4096, seed: 99)
    let keys = (0 ..< keyCount).map { "asset-\($0)" }
    let directory = try BenchDirectory("concurrency")
    defer { directory.remove() }

    // One operation list per thread: the key's number, with the top bit set for a store.
    func operationList(count: Int, seed: UInt64) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        return (0 ..< count).map { _ in
            let key = UInt32(random.next() % UInt64(keyCount))
            return random.next() % 10 == 0 ? key | 0x8000_0000 : key
        }
    }
    let single = operationList(count: operations, seed: 1)
    let readsOfTheFirstHalf = operationList(count: operations, seed: 4).map { ($0 & 0x7FFF_FFFF) % UInt32(keyCount / 2) }
    let pair = [operationList(count: operations / 2, seed: 2), operationList(count: operations / 2, seed: 3)]

    let kinds: [(name: String, open: (String) throws -> any BenchStore & Sendable)] = [
        ("larder", { try LarderStore(directory: $0) }),
        ("posix-floor", { try PosixFloorStore(directory: $0) }),
    ]
    for kind in kinds {
        let folder = directory.sub(kind.name)
        let store = try kind.open(folder)
        let name = kind.name
        for key in keys { try store.store(payload, forKey: key) }

        @Sendable func run(_ list: [UInt32]) {
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
                fatalError("\(name): \(error)")
            }
        }
        let oneThread = context.measure(iterations: operations, repeats: repeats) { run(single) }
        let twoThreads = context.measure(iterations: operations, repeats: repeats) {
            DispatchQueue.concurrentPerform(iterations: 2) { run(pair[$0]) }
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
            run(readsOfTheFirstHalf)
            stop.set()
            writer.wait()
        }
        context.report(suite: "concurrency", case: "mixed-1t", impl: kind.name, n: keyCount, bytes: 4096, nsPerOp: oneThread)
        context.report(suite: "concurrency", case: "mixed-2t", impl: kind.name, n: keyCount, bytes: 4096, nsPerOp: twoThreads)
        context.report(suite: "concurrency", case: "read-beside-writer", impl: kind.name, n: keyCount, bytes: 4096, nsPerOp: besideWriter)
        store.close()
        removeTree(folder)
    }
}

/// A flag one thread sets and another polls.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}
