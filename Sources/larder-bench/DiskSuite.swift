import Foundation
import Larder
import LarderTestSupport

// The disk suite: DiskCache against the floor for one-file-per-entry storage (raw syscalls, no
// header, checksum or index), against SQLite and against the naive Foundation cache, on the
// same keys, payloads and access order.
//
// Stores are fresh inserts: every round opens each implementation on a new empty folder and
// stores n new keys (the first round is a warm-up, later rounds give the median). No round
// deletes an earlier round's files: on ext4 a creator that follows a mass delete pays the
// kernel's search past the recently freed inodes, which would measure the file system more than
// the store. Every round's folders stay until the end of the suite (the space they need is
// checked first). Loads and misses then run against the last round's n records, in a shuffled
// order, with the files in the page cache (a warm cache: what a hit costs once the OS has the
// data). Implementations take turns within each round, every 500 loads, so that a noisy
// neighbour slows all of them alike. `load-4k-zipf` loads the same 4 KiB records with a skew, Zipf(0.9) over the n
// keys (n draws per round, the same each round), as an app rereads its hot records.
//
// The 4 KiB loads also run on two caches with a size limit, twice what their records take, so
// that nothing is evicted but the index keeps its eviction policy's order on every hit:
// `larder-limit-lru` (`DiskEvictionPolicy.lru`) and `larder-limit-adaptive` (the default,
// `.adaptive`). Their stores are not measured; they hold the same keys as the others.

func runDiskSuite(_ context: BenchContext) throws {
    // `LARDER_BENCH_DISK_KINDS=larder,sqlite` runs those implementations alone (profiling).
    let chosenKinds = ProcessInfo.processInfo.environment["LARDER_BENCH_DISK_KINDS"]?.split(separator: ",").map(String.init)
    let kinds: [BenchStoreKind] = [.larder, .larderNoVerify, .posixFloor, .sqlite, .foundationNaive].filter {
        chosenKinds?.contains($0.name) ?? true
    }
    let repeats = context.quick ? 3 : 5
    // 256 KiB payloads use fewer keys so that a round writes 512 MiB rather than 5 GiB.
    // `LARDER_BENCH_DISK_4K=1` runs the 4 KiB loads alone (one unmeasured store round, no 256 KiB
    // cases, no growth): the hit path alone, in a minute instead of many.
    let only4k = ProcessInfo.processInfo.environment["LARDER_BENCH_DISK_4K"] == "1"
    let sizes: [(label: String, bytes: Int, n: Int)] =
        [("4k", 4096, context.quick ? 2_000 : 20_000)] + (only4k ? [] : [("256k", 256 * 1024, context.quick ? 200 : 2_000)])
    let growthSizes = only4k ? [] : context.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]
    let directory = try BenchDirectory("disk")
    defer { directory.remove() }
    // Every store round of every size stays on disk until the end: (repeats + 1) rounds of n
    // records per implementation and size (about 18 GiB in a full run, 1.2 GiB with --quick).
    let limited: [(name: String, policy: DiskEvictionPolicy)] =
        [("larder-limit-lru", .lru), ("larder-limit-adaptive", .adaptive)].filter { chosenKinds?.contains($0.name) ?? true }
    let needed = sizes.reduce(0) { $0 + (repeats + 1) * kinds.count * $1.n * ($1.bytes + 4096) } + limited.count * sizes[0].n * 8192
    try requireFreeSpace(needed, at: directory.path)
    var random = SplitMix64(seed: 7)

    for size in sizes {
        let payload = randomPayload(size.bytes, seed: UInt64(size.bytes))
        var lines: [(name: String, impl: String, nsPerOp: Double)] = []

        // Stores: each round opens every implementation on a new folder and stores n new keys
        // into it, one implementation after the other, so that all see the same machine state.
        // Earlier rounds' folders are kept (see the top of the file).
        var storeSamples = Array(repeating: [Double](), count: kinds.count)
        var kept: [(any BenchStore)?] = Array(repeating: nil, count: kinds.count)
        var keys: [String] = []
        // The 4 KiB-only mode stores one round, unmeasured: it is for the loads.
        let storeRounds = only4k ? 0 : repeats
        for round in 0 ... storeRounds {
            keys = (0 ..< size.n).map { "asset-\(round)-\($0)" }
            // The order turns each round, so that no implementation is always first or last.
            for turn in 0 ..< kinds.count {
                let k = (turn + round) % kinds.count
                let kind = kinds[k]
                let store = try kind.open(directory.sub("\(kind.name)-\(size.label)-\(round)"))
                let start = monotonicNanoseconds()
                for key in keys { try store.store(payload, forKey: key) }
                let elapsed = monotonicNanoseconds() - start
                if round > 0 { storeSamples[k].append(Double(elapsed) / Double(size.n)) }
                if round == storeRounds { kept[k] = store } else { store.close() }
            }
            // Unmeasured: write the round's dirty pages back before the next round starts.
            sync()
        }
        if !only4k {
            for (k, kind) in kinds.enumerated() { lines.append(("store-\(size.label)", kind.name, median(storeSamples[k]))) }
        }

        // Loads of the last round's keys, and misses, interleaved the same way.
        var stores = kept.compactMap { $0 }
        var names = kinds.map(\.name)
        if size.label == "4k" {
            // The same records under a size limit (see the top of the file), stored unmeasured.
            for (name, policy) in limited {
                let store = try LarderStore(
                    directory: directory.sub("\(name)-\(size.label)"), sizeLimit: 2 * size.n * (size.bytes + 4096), policy: policy)
                for key in keys { try store.store(payload, forKey: key) }
                stores.append(store)
                names.append(name)
            }
            sync()
        }
        let probes = keys.shuffled(using: &random)
        let hits = try interleavedLoads(stores, probes: probes, repeats: repeats, expectedBytes: size.bytes)
        for (k, name) in names.enumerated() { lines.append(("load-\(size.label)", name, hits[k])) }
        if size.label == "4k" {
            // Hot records: Zipf(0.9) over the same keys, where kept descriptors pay off.
            let skewed = zipfProbes(over: keys, exponent: 0.9, count: size.n, seed: 9)
            let zipf = try interleavedLoads(stores, probes: skewed, repeats: repeats, expectedBytes: size.bytes)
            for (k, name) in names.enumerated() { lines.append(("load-4k-zipf", name, zipf[k])) }
            let misses = (0 ..< size.n).map { "missing-\($0)" }
            let missed = try interleavedLoads(stores, probes: misses, repeats: repeats, expectedBytes: nil)
            for (k, name) in names.enumerated() { lines.append(("load-miss", name, missed[k])) }
        }
        for store in stores { store.close() }
        for line in lines.sorted(by: { $0.name < $1.name }) {
            context.report(suite: "disk", case: line.name, impl: line.impl, n: size.n, bytes: size.bytes, nsPerOp: line.nsPerOp)
        }
    }

    // Growth: how a larder hit's cost changes with the number of records.
    let payload = randomPayload(4096, seed: 4096)
    for n in growthSizes {
        let folder = directory.sub("growth-\(n)")
        let store = try BenchStoreKind.larder.open(folder)
        let keys = (0 ..< n).map { "asset-\($0)" }
        for key in keys { try store.store(payload, forKey: key) }
        let nsPerOp = try interleavedLoads([store], probes: keys.shuffled(using: &random), repeats: repeats, expectedBytes: 4096)[0]
        context.report(suite: "disk", case: "load-4k", impl: "larder", n: n, bytes: 4096, nsPerOp: nsPerOp)
        store.close()
        removeTree(folder)
    }
}

/// Loads every probe once per round in each store (a first round warms up); returns each
/// store's median ns per load. Checks that every load hit (`expectedBytes`) or missed (`nil`).
///
/// The stores take turns every `turnLength` probes, not once a round: a round of 20,000 loads
/// takes 100-150 ms a store, and on a shared machine a neighbour's burst of that length slowed
/// one store's whole round and not the next one's (ratios from one run moved by 10-20 % between
/// runs of the same binary). With turns of 500 loads (a few milliseconds), a burst lands on every
/// store's share of the round alike. The order rotates every turn, so that no store always goes
/// first (after the others have filled the processor's caches with their own data).
private func interleavedLoads(
    _ stores: [any BenchStore], probes: [String], repeats: Int, expectedBytes: Int?, turnLength: Int = 500
) throws -> [Double] {
    var samples = Array(repeating: [Double](), count: stores.count)
    let expected = expectedBytes.map { $0 * probes.count } ?? -probes.count
    for round in 0 ... repeats {
        var elapsed = Array(repeating: UInt64(0), count: stores.count)
        var totals = Array(repeating: 0, count: stores.count)
        for (turn, start) in stride(from: 0, to: probes.count, by: turnLength).enumerated() {
            let chunk = probes[start ..< min(start + turnLength, probes.count)]
            for offset in 0 ..< stores.count {
                let k = (offset + turn + round) % stores.count
                let store = stores[k]
                let begin = loadClock()
                var total = 0
                for key in chunk {
                    total &+= try store.load(forKey: key)?.count ?? -1
                }
                elapsed[k] += loadClock() - begin
                totals[k] &+= total
            }
        }
        for k in stores.indices {
            blackHole(totals[k])
            guard totals[k] == expected else { throw BenchError("loads returned \(totals[k]) bytes in all, expected \(expected)") }
            if round > 0 { samples[k].append(Double(elapsed[k]) / Double(probes.count)) }
        }
    }
    return samples.map(median)
}

/// The loads' clock: wall time, or with `LARDER_BENCH_CPU_TIME=1` the thread's CPU time (user and
/// system), which a busy neighbour on a shared machine does not inflate.
private func loadClock() -> UInt64 {
    guard timesLoadsInCPUTime else { return monotonicNanoseconds() }
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

private let timesLoadsInCPUTime = ProcessInfo.processInfo.environment["LARDER_BENCH_CPU_TIME"] == "1"

/// Throws unless the file system holding `path` has `bytes` free, plus a gigabyte to spare.
private func requireFreeSpace(_ bytes: Int, at path: String) throws {
    var info = statvfs()
    guard statvfs(path, &info) == 0 else { throw BenchError("statvfs \(path): errno \(errno)") }
    let free = Int(info.f_bavail) * Int(info.f_frsize)
    let wanted = bytes + (1 << 30)
    guard free >= wanted else {
        throw BenchError(
            "the disk suite keeps every store round until it ends and needs \(wanted >> 20) MiB free in \(path); "
                + "it has \(free >> 20) MiB (try --quick, or TMPDIR on a larger volume)")
    }
}
