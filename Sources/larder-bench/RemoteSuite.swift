import Foundation
import Larder
import LarderRedis
import LarderTestSupport
import Synchronization

// The remote suite (`larder-bench remote --redis HOST:PORT`): the shared remote tier on Redis.
// Without `--redis` it says so and skips. Each case is measured beside what a user would write
// by hand (impl `by-hand`: a blocking RESP client's read, the value then kept in a
// `Mutex<[String: Data]>`), and beside that client's read alone (impl `raw`), on the same server
// and the same 4 KiB values.
//
// - `get-hit-remote`: a read that memory and disk miss and Redis serves, promoted to memory at
//   once and to disk through the promotion queue (`HybridCache.value(forKey:)` on keys another
//   instance stored), beside one by-hand `GET` (impl `raw`). Impl `larder`: the caller's latency,
//   reads in bursts of the promotion backlog (128), the queue drained between bursts, untimed.
//   Impl `larder-drained`: the reads back to back, then `flushRemoteWrites()`, all timed: the
//   throughput once the disk writes are paid for. Impl `larder-memory`: promoted to memory only
//   (`from: [.memory, .remote]`). Impl `store`: `RedisRemoteStore.values(forKeys:)` of the one
//   key, the remote read without the hybrid. Impl `by-hand`: one `GET`, then the value inserted
//   into a `Mutex<[String: Data]>`; impl `raw`: the `GET` alone. `larder`, `larder-memory`,
//   `store`, `raw` and `by-hand` are timed side by side, 16 keys each in turn, the first impl
//   of a group moving on by one from group to group (each goes first, and right after the
//   queue's drain, about as often), so that the machine's drift and the drain's aftermath reach
//   them alike. Target: larder <= 1.2 x by-hand.
// - `get-many-remote`: 100 keys at once (`values(forKeys:)`: one `MGET`), beside one by-hand
//   `MGET` of 100 keys and 100 inserts into a `Mutex<[String: Data]>` (impl `by-hand`; `raw`: the
//   `MGET` alone); `ns_per_op` is per batch. Impl `larder`: the caller's latency, the promotion
//   queue drained after each batch, untimed; `larder-drained`: ten batches back to back, then
//   `flushRemoteWrites()`, all timed. `larder`, `by-hand` and `raw` are timed side by side, a
//   batch each in turn, in an order that changes from batch to batch (each impl first, second and
//   third as often, and as often right after larder's queue was drained), so that the machine's
//   drift, and the aftermath of the disk copies' file writes, reach them alike.
//   Target: larder <= 1.5 x by-hand.
// - `get-throughput`: one 4 KiB value read by 1, 16 and 64 concurrent callers, the store beside
//   `redis-benchmark` (see `RemoteThroughput.swift`). Target: store >= 0.9 x its throughput.
// - `invalidation`: a remove on one instance until the other instance's local read misses (impl
//   `larder`, median over the rounds), measured by polling the other instance.
//
// The readers of `get-hit-remote` and `get-many-remote` keep as many entries in memory as the
// by-hand dictionary does: the keys of one run (`HybridCacheOptions.memory.countLimit`; the
// dictionary is emptied between runs). Both then reuse the memory of the values they let go, as a
// full cache does, instead of growing into new pages whose first touch (a page fault each) would
// be paid by whichever read came next. `LARDER_BENCH_REMOTE_COUNT_LIMIT=N` sets another limit
// (0: none).
//
// `LARDER_BENCH_REMOTE_POLICY=lru` gives the readers' memory tier that eviction policy instead
// of the hybrid's default (TinyLFU): what the policy's bookkeeping costs a promotion.
//
// `LARDER_BENCH_REMOTE_CASES=get-hit-remote,invalidation` runs only the named cases (profiling).
//
// `LARDER_BENCH_CPU_TIME=1` times `get-hit-remote` and `get-many-remote` in the calling thread's
// CPU time (user and system) instead of wall time: what the read costs the caller, which a busy
// neighbour on a shared machine does not inflate (the drained impls then leave out the worker's
// file writes, which run on another thread).

func runRemoteSuite(_ context: BenchContext) throws {
    guard let address = context.redis else {
        print("remote: skipped (give --redis HOST:PORT to run it against a Redis server)")
        return
    }
    guard let store = try? RedisRemoteStore(address: address) else { throw BenchError("--redis wants HOST:PORT, not \(address)") }
    let directory = try BenchDirectory("remote")
    defer { directory.remove() }
    let payload = randomPayload(4096, seed: 15)
    let namespace = "larder-bench-\(UUID().uuidString.prefix(8))"
    let raw = try RawRedis(address: address)
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    /// A cache on the shared Redis; a reader's memory tier keeps at most `entries` entries.
    func open(_ name: String, entries: Int? = nil) throws -> HybridCache {
        var options = HybridCacheOptions(directory: URL(fileURLWithPath: directory.sub(name)))
        var remote = RemoteTierOptions(store: store, namespace: namespace)
        remote.commandTimeout = 5
        remote.connectTimeout = 5
        options.remote = remote
        if let limit = readerCountLimit ?? entries, limit > 0 { options.memory.countLimit = limit }
        if let policy = readerPolicy { options.memory.policy = policy }
        return try HybridCache(options: options)
    }
    let writer = try open("writer")
    defer {
        try? writer.removeAll()
        writer.close()
    }

    let n = context.quick ? 200 : 1_000
    let repeats = 5
    // Fresh keys for every run of every case: the reader must miss memory and disk each time.
    var round = 0
    /// Stores `count` new keys on the writer, then waits until each of `readers` has applied
    /// the writer's invalidation of every one (each store publishes one), so that the work they
    /// cause (a key lock and a file lookup each, on the readers' subscription threads) is not
    /// measured as part of the reads. Waiting for the counts to stop changing was not enough on
    /// a loaded machine: deliveries paused longer than the wait, then ran during the reads.
    func received(_ reader: HybridCache) -> Int { reader.statistics.remote?.invalidationsReceived ?? 0 }

    /// Waits until each of `readers` listens to the invalidations (its subscription starts in
    /// the background): the writer stores a probe key until every reader has received one.
    func awaitListening(_ readers: [HybridCache]) throws {
        let before = readers.map(received)
        let deadline = monotonicNanoseconds() + 30_000_000_000
        var probe = 0
        while zip(readers, before).contains(where: { received($0) <= $1 }) {
            guard monotonicNanoseconds() < deadline else { throw BenchError("a reader's invalidation subscription never listened") }
            probe += 1
            try writer.store(payload, forKey: "listening/\(probe)", expiry: .seconds(60))
            Thread.sleep(forTimeInterval: 0.01)
        }
        // The last probes' invalidations, still on their way, are not counted as a round's.
        var last = -1
        while last != readers.reduce(0, { $0 + received($1) }) {
            last = readers.reduce(0) { $0 + received($1) }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func freshKeys(_ count: Int, settling readers: [HybridCache]) throws -> [String] {
        let before = readers.map(received)
        round += 1
        let keys = (0 ..< count).map { "r\(round)/k\($0)" }
        for key in keys { try writer.store(payload, forKey: key, expiry: .seconds(3600)) }
        let deadline = monotonicNanoseconds() + 30_000_000_000
        while zip(readers, before).contains(where: { received($0) < $1 + count }) {
            guard monotonicNanoseconds() < deadline else { throw BenchError("a reader missed the writer's invalidations") }
            Thread.sleep(forTimeInterval: 0.002)
        }
        return keys
    }

    // get-hit-remote
    if remoteCaseRuns("get-hit-remote") {
        let reader = try open("reader-hit", entries: n)
        let drainedReader = try open("reader-hit-drained", entries: n)
        let memoryReader = try open("reader-hit-memory", entries: n)
        defer {
            reader.close()
            drainedReader.close()
            memoryReader.close()
        }
        try awaitListening([reader, drainedReader, memoryReader])
        // Bursts no longer than the promotion backlog: every disk copy is queued, none written
        // by the reader; the queue is drained between bursts, untimed (see `larder-drained`).
        let burst = RemoteTierOptions(store: store, namespace: namespace).diskPromotionBacklog
        var larder: [Double] = []
        var drained: [Double] = []
        var memoryOnly: [Double] = []
        var storeOnly: [Double] = []
        var rawOnly: [Double] = []
        var byHand: [Double] = []
        // What a user would write by hand: the GET, then the value kept in a locked dictionary.
        let kept = Mutex<[String: Data]>([:])
        var switches = SwitchCounts()
        // Interleaved a few keys at a time: on a shared machine the raw round trip itself drifts
        // between 20 and 90 µs from one second to the next, so the reads are timed side by side,
        // each key read once by each impl. The impl that goes first moves on by one each group:
        // each impl goes first, and comes right after the queue's untimed drain, about as often.
        enum HitImpl: String, CaseIterable {
            case larder
            case memory = "larder-memory"
            case store, raw
            case byHand = "by-hand"
        }
        var turn = 0
        let step = 16
        for _ in 0 ... repeats {
            let keys = try freshKeys(n, settling: [reader, drainedReader, memoryReader])
            kept.withLock { $0.removeAll(keepingCapacity: true) }
            var elapsed: (larder: UInt64, memory: UInt64, store: UInt64, raw: UInt64, byHand: UInt64) = (0, 0, 0, 0, 0)
            for start in stride(from: 0, to: keys.count, by: step) {
                let group = keys[start ..< min(start + step, keys.count)]
                turn += 1
                for offset in 0 ..< HitImpl.allCases.count {
                    let impl = HitImpl.allCases[(turn + offset) % HitImpl.allCases.count]
                    let switchesBefore = threadSwitches()
                    let begin = remoteClock()
                    switch impl {
                    case .larder:
                        for key in group where try reader.value(forKey: key)?.count != payload.count {
                            throw BenchError("larder missed \(key)")
                        }
                        elapsed.larder += remoteClock() - begin
                    case .memory:
                        for key in group where try memoryReader.value(forKey: key, from: [.memory, .remote])?.count != payload.count {
                            throw BenchError("larder missed \(key)")
                        }
                        elapsed.memory += remoteClock() - begin
                    case .store:
                        for key in group {
                            let found = try store.values(forKeys: ["\(namespace):v:\(key)"], timeouts: timeouts)
                            guard found.first??.data.count == payload.count + RemotePayload.headerSize else {
                                throw BenchError("store missed \(key)")
                            }
                        }
                        elapsed.store += remoteClock() - begin
                    case .raw:
                        for key in group where try raw.get("\(namespace):v:\(key)")?.count != payload.count + RemotePayload.headerSize {
                            throw BenchError("the by-hand GET missed \(key)")
                        }
                        elapsed.raw += remoteClock() - begin
                    case .byHand:
                        for key in group {
                            guard let value = try raw.get("\(namespace):v:\(key)") else {
                                throw BenchError("the by-hand GET missed \(key)")
                            }
                            kept.withLock { $0[key] = value }
                        }
                        elapsed.byHand += remoteClock() - begin
                    }
                    switches.add(impl.rawValue, since: switchesBefore)
                }
                // The queue drained untimed before it fills (see `larder-drained`).
                if (start + step) % burst == 0 { reader.flushRemoteWrites() }
            }
            reader.flushRemoteWrites()
            larder.append(Double(elapsed.larder) / Double(n))
            memoryOnly.append(Double(elapsed.memory) / Double(n))
            storeOnly.append(Double(elapsed.store) / Double(n))
            rawOnly.append(Double(elapsed.raw) / Double(n))
            byHand.append(Double(elapsed.byHand) / Double(n))
            // Back to back, then until every disk copy is written: the throughput the disk allows.
            let begin = remoteClock()
            for key in keys where try drainedReader.value(forKey: key)?.count != payload.count {
                throw BenchError("larder missed \(key)")
            }
            drainedReader.flushRemoteWrites()
            drained.append(Double(remoteClock() - begin) / Double(n))
        }
        if countsSwitches { switches.print("get-hit-remote", reads: n * (repeats + 1)) }
        // The first run warms up.
        for (impl, samples) in [
            ("larder", larder), ("larder-drained", drained), ("larder-memory", memoryOnly), ("store", storeOnly), ("by-hand", byHand),
            ("raw", rawOnly),
        ] {
            context.report(
                suite: "remote", case: "get-hit-remote", impl: impl, n: n, bytes: payload.count, nsPerOp: median(samples.dropFirst()))
        }
    }

    // get-many-remote
    if remoteCaseRuns("get-many-remote") {
        let batches = context.quick ? 2 : 10
        let reader = try open("reader-many", entries: 100 * batches)
        let drainedReader = try open("reader-many-drained", entries: 100 * batches)
        defer {
            reader.close()
            drainedReader.close()
        }
        try awaitListening([reader, drainedReader])
        var larder: [Double] = []
        var drained: [Double] = []
        var rawOnly: [Double] = []
        var byHand: [Double] = []
        let kept = Mutex<[String: Data]>([:])
        // One order of the three impls a batch, in turn: over six batches each impl is first,
        // second and third twice, and follows larder's drained queue twice.
        enum Impl: String {
            case larder, raw
            case byHand = "by-hand"
        }
        var switches = SwitchCounts()
        let turns: [[Impl]] = [
            [.larder, .raw, .byHand], [.raw, .larder, .byHand], [.raw, .byHand, .larder],
            [.larder, .byHand, .raw], [.byHand, .larder, .raw], [.byHand, .raw, .larder],
        ]
        var turn = 0
        for _ in 0 ... repeats {
            let keys = try freshKeys(100 * batches, settling: [reader, drainedReader])
            kept.withLock { $0.removeAll(keepingCapacity: true) }
            let groups = stride(from: 0, to: keys.count, by: 100).map { Array(keys[$0 ..< $0 + 100]) }
            // A batch fits the promotion backlog: larder's is the caller's latency, its queue
            // drained after the batch, untimed (`larder-drained` times the drain).
            var elapsed: (larder: UInt64, raw: UInt64, byHand: UInt64) = (0, 0, 0)
            for group in groups {
                let names = group.map { "\(namespace):v:\($0)" }
                turn += 1
                for impl in turns[turn % turns.count] {
                    let switchesBefore = threadSwitches()
                    let begin = remoteClock()
                    switch impl {
                    case .larder:
                        if try reader.values(forKeys: group).contains(where: { $0?.count != payload.count }) {
                            throw BenchError("larder missed a key")
                        }
                        elapsed.larder += remoteClock() - begin
                        switches.add(impl.rawValue, since: switchesBefore)
                        reader.flushRemoteWrites()
                    case .raw:
                        if try raw.mget(names).contains(where: { $0 == nil }) { throw BenchError("the by-hand MGET missed a key") }
                        elapsed.raw += remoteClock() - begin
                        switches.add(impl.rawValue, since: switchesBefore)
                    case .byHand:
                        let values = try raw.mget(names)
                        kept.withLock { kept in
                            for (key, value) in zip(group, values) { kept[key] = value }
                        }
                        elapsed.byHand += remoteClock() - begin
                        switches.add(impl.rawValue, since: switchesBefore)
                        if values.contains(where: { $0 == nil }) { throw BenchError("the by-hand MGET missed a key") }
                    }
                }
            }
            larder.append(Double(elapsed.larder) / Double(batches))
            rawOnly.append(Double(elapsed.raw) / Double(batches))
            byHand.append(Double(elapsed.byHand) / Double(batches))
            let start = remoteClock()
            for group in groups where try drainedReader.values(forKeys: group).contains(where: { $0?.count != payload.count }) {
                throw BenchError("larder missed a key")
            }
            drainedReader.flushRemoteWrites()
            drained.append(Double(remoteClock() - start) / Double(batches))
        }
        if countsSwitches { switches.print("get-many-remote", reads: batches * (repeats + 1)) }
        for (impl, samples) in [("larder", larder), ("larder-drained", drained), ("by-hand", byHand), ("raw", rawOnly)] {
            context.report(
                suite: "remote", case: "get-many-remote", impl: impl, n: 100, bytes: payload.count, nsPerOp: median(samples.dropFirst()))
        }
    }

    if remoteCaseRuns("get-throughput") {
        try runThroughputCase(context, store: store, address: address)
    }

    // invalidation: remove on the writer, poll the reader until its local read misses.
    if remoteCaseRuns("invalidation") {
        let reader = try open("reader-invalidation")
        defer { reader.close() }
        Thread.sleep(forTimeInterval: 0.5)  // the reader's subscription listens
        let rounds = context.quick ? 20 : 100
        var samples: [Double] = []
        for index in 0 ..< rounds {
            let key = "invalidate/\(index)"
            try writer.store(payload, forKey: key)
            Thread.sleep(forTimeInterval: 0.02)  // the store's own invalidation passes first
            guard try reader.value(forKey: key) != nil else { throw BenchError("the reader missed \(key)") }
            let start = monotonicNanoseconds()
            try writer.remove(forKey: key)
            let deadline = start + 10_000_000_000
            while try reader.value(forKey: key, from: [.memory, .disk]) != nil {
                if monotonicNanoseconds() > deadline { throw BenchError("the reader never dropped \(key)") }
            }
            samples.append(Double(monotonicNanoseconds() - start))
        }
        context.report(
            suite: "remote", case: "invalidation", impl: "larder", n: rounds, bytes: payload.count, nsPerOp: median(samples[...]))
    }
}

/// The clock of the read cases: wall time, or with `LARDER_BENCH_CPU_TIME=1` the calling
/// thread's CPU time.
private func remoteClock() -> UInt64 {
    guard timesRemoteReadsInCPUTime else { return monotonicNanoseconds() }
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// `LARDER_BENCH_REMOTE_COUNT_LIMIT=N`: the readers' memory tiers' count limit (0: none) instead
/// of the keys of one run.
private let readerCountLimit = ProcessInfo.processInfo.environment["LARDER_BENCH_REMOTE_COUNT_LIMIT"].flatMap { Int($0) }

/// `LARDER_BENCH_REMOTE_POLICY=lru` (or `tinylfu`): the memory tier's eviction policy (default:
/// the hybrid's, ``EvictionPolicy/recommended``), to measure what the policy's bookkeeping adds to
/// a promotion.
private let readerPolicy: EvictionPolicy? = ProcessInfo.processInfo.environment["LARDER_BENCH_REMOTE_POLICY"].flatMap {
    switch $0 {
    case "lru": .lru
    case "tinylfu": .tinyLFU
    default: nil
    }
}

/// Whether `LARDER_BENCH_REMOTE_CASES` (a comma-separated list; every case without it) names `name`.
private func remoteCaseRuns(_ name: String) -> Bool {
    guard let chosen = ProcessInfo.processInfo.environment["LARDER_BENCH_REMOTE_CASES"] else { return true }
    return chosen.split(separator: ",").contains { $0 == name }
}

/// With `LARDER_BENCH_SWITCHES=1`, `get-hit-remote` and `get-many-remote` also print how often
/// the calling thread gave up the processor per read (per batch in `get-many-remote`) and impl
/// (`getrusage`): `blocked` when it waited (a socket read, a lock), `preempted` when the scheduler
/// took the processor from it (another thread woke on its core): where a read's wall time beyond
/// its CPU time goes. Linux only.
private let countsSwitches = ProcessInfo.processInfo.environment["LARDER_BENCH_SWITCHES"] == "1"

/// The calling thread's voluntary and involuntary context switches so far.
private func threadSwitches() -> (blocked: Int, preempted: Int) {
    guard countsSwitches else { return (0, 0) }
    #if os(Linux)
    var usage = rusage()
    getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD, which Glibc does not import
    return (usage.ru_nvcsw, usage.ru_nivcsw)
    #else
    // Darwin has no per-thread `getrusage`: no switches are counted there.
    return (0, 0)
    #endif
}

/// The context switches of the calling thread per impl of `get-hit-remote`.
private struct SwitchCounts {
    private var counts: [String: (blocked: Int, preempted: Int)] = [:]

    mutating func add(_ impl: String, since before: (blocked: Int, preempted: Int)) {
        guard countsSwitches else { return }
        let now = threadSwitches()
        let old = counts[impl] ?? (0, 0)
        counts[impl] = (old.blocked + now.blocked - before.blocked, old.preempted + now.preempted - before.preempted)
    }

    func print(_ name: String, reads: Int) {
        for impl in ["larder", "larder-memory", "store", "by-hand", "raw"] where counts[impl] != nil {
            let (blocked, preempted) = counts[impl] ?? (0, 0)
            let line = String(
                format: "%@ %@: %.2f blocked, %.2f preempted per read", name, impl, Double(blocked) / Double(reads),
                Double(preempted) / Double(reads))
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }
}

private let timesRemoteReadsInCPUTime = ProcessInfo.processInfo.environment["LARDER_BENCH_CPU_TIME"] == "1"

private func median(_ samples: ArraySlice<Double>) -> Double {
    let sorted = samples.sorted()
    return sorted[sorted.count / 2]
}

/// The client a user could write by hand: one blocking socket, each `GET` or `MGET` written in
/// RESP and its reply read into one buffer, each value copied once into a `Data` (as any client
/// hands it out). Impl `raw` in the JSON lines, and the read of impl `by-hand` (see the top of
/// this file).
private final class RawRedis {
    private let descriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0

    init(address: String) throws {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw BenchError("--redis wants HOST:PORT, not \(address)")
        }
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = port.bigEndian
        guard descriptor >= 0, inet_pton(AF_INET, String(address[..<colon]), &target.sin_addr) == 1 else {
            throw BenchError("the by-hand baseline needs an IPv4 address, not \(address)")
        }
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BenchError("the by-hand baseline could not connect to \(address)") }
        var on: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(descriptor) }

    /// `GET key`: the value, or `nil`.
    func get(_ key: String) throws -> Data? {
        try send(["GET", key])
        return try readBulk()
    }

    /// `MGET keys...`: the values, `nil` for a missing key.
    func mget(_ keys: [String]) throws -> [Data?] {
        try send(["MGET"] + keys)
        let count = try Int(line().dropFirst()) ?? 0
        var values: [Data?] = []
        values.reserveCapacity(count)
        for _ in 0 ..< count { values.append(try readBulk()) }
        return values
    }

    private func send(_ arguments: [String]) throws {
        var command = "*\(arguments.count)\r\n"
        for argument in arguments { command += "$\(argument.utf8.count)\r\n\(argument)\r\n" }
        let bytes = Array(command.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw BenchError("the by-hand baseline could not send") }
            offset += sent
        }
    }

    /// A bulk string's bytes, or `nil` for a null.
    private func readBulk() throws -> Data? {
        guard let length = try Int(line().dropFirst()), length >= 0 else { return nil }
        while end - start < length + 2 { try fill() }
        let value = buffer.withUnsafeBytes { Data($0[start ..< start + length]) }
        start += length + 2
        return value
    }

    /// The next line, without its CRLF.
    private func line() throws -> Substring {
        while true {
            if let newline = buffer[start ..< end].firstIndex(of: 10) {
                let text = String(decoding: buffer[start ..< newline - 1], as: UTF8.self)
                start = newline + 1
                return Substring(text)
            }
            try fill()
        }
    }

    private func fill() throws {
        if start == end {
            (start, end) = (0, 0)
        } else if start > 0 {
            buffer.replaceSubrange(0 ..< end - start, with: buffer[start ..< end])
            (start, end) = (0, end - start)
        }
        if end == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
        let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + end, $0.count - end, 0) }
        guard received > 0 else { throw BenchError("the by-hand baseline lost its connection") }
        end += received
    }
}
