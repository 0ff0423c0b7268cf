#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Larder
import LarderTestSupport
import Synchronization

/// `larder-stress soak`: every tier under random load for a while, watching this process's
/// resident memory and open descriptors for growth without bound.
///
/// Worker threads run random operations on a ``MemoryCache``, a ``DiskCache`` and a
/// ``HybridCache`` (their sync, async and callback forms), with small limits and scheduled
/// collections every half second; the disk cache is closed and reopened every few seconds; a
/// second process (`larder-stress read`) reads the disk cache's folder read-only all along. Every
/// payload read is checked (``StampedPayload``). The process samples its resident set size
/// (`/proc/self/statm`) and descriptor count (`/proc/self/fd`) through the run.
///
/// The rule: over the second half of the run (the first half is warm-up: caches filling, queues
/// starting threads), the median of the samples in the last tenth may exceed the median of those
/// around the midpoint (45-55 %) by at most 10 % + 8 MiB of resident memory and 8 descriptors.
/// A leak of a few bytes per operation, or of one descriptor per reopen, breaks it within a minute.
struct Soak {
    var seconds: Double
    var threads: Int
    var seed: UInt64
    var directory: String
    /// Whether to judge growth (a run of a few seconds, or under a sanitizer, says nothing of it).
    var checksGrowth: Bool
    /// Where to write every sample as CSV (`seconds,rss_bytes,fds`), if anywhere.
    var reportPath: String?

    static let diskKeys = 64
    static let reopenInterval = 5.0
    static let growthAllowance = (fraction: 0.10, bytes: 8 << 20, descriptors: 8)

    /// One measurement.
    struct Sample {
        var time: Double
        var residentBytes: Int
        var descriptors: Int
    }

    /// Counts kept by every worker.
    final class Counters: Sendable {
        let operations = Atomic<Int>(0)
        let verifiedReads = Atomic<Int>(0)
        let closedErrors = Atomic<Int>(0)
        let reopens = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
    }

    /// The disk cache in use, swapped on reopen (an `NSLock`: a pthread mutex, which the
    /// Thread Sanitizer sees, unlike `Synchronization.Mutex` on Linux).
    final class CurrentDisk: @unchecked Sendable {
        // @unchecked: `cache` is only touched under `lock`.
        private let lock = NSLock()
        private var cache: DiskCache
        init(_ cache: DiskCache) { self.cache = cache }
        var value: DiskCache {
            lock.lock()
            defer { lock.unlock() }
            return cache
        }
        func replace(_ new: DiskCache) {
            lock.lock()
            cache = new
            lock.unlock()
        }
    }

    // MARK: - Running

    /// Runs the soak; returns the process's exit status (0: every check held).
    func run() -> Int32 {
        let root = URL(fileURLWithPath: directory, isDirectory: true)
        let diskOptions = Self.diskOptions(root.appendingPathComponent("disk"))
        var hybridDisk = Self.diskOptions(root.appendingPathComponent("hybrid"))
        hybridDisk.durability = .fsync
        var hybridOptions = HybridCacheOptions(disk: hybridDisk)
        hybridOptions.memory.totalCostLimit = 2 << 20
        hybridOptions.memory.defaultExpiration = 3
        let memory: MemoryCache<String, Data>
        let disk: CurrentDisk
        let hybrid: HybridCache
        do {
            memory = try MemoryCache<String, Data>(countLimit: 400, totalCostLimit: 4 << 20, defaultExpiration: 2)
            let first = try DiskCache(options: diskOptions)
            first.scheduleGarbageCollection()
            disk = CurrentDisk(first)
            hybrid = try HybridCache(options: hybridOptions)
            hybrid.disk.scheduleGarbageCollection()
        } catch {
            fail("cannot open the caches: \(error)")
        }
        let counters = Counters()
        // The second process: reads the disk cache's folder read-only for the whole run.
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        reader.arguments = [
            "read", "--dir", root.appendingPathComponent("disk").path, "--keys", "\(Self.diskKeys)", "--seconds",
            "\(Int(seconds.rounded(.up)))",
        ]
        let readerOutput = Pipe()
        reader.standardOutput = readerOutput
        do { try reader.run() } catch { fail("cannot start the reader process: \(error)") }

        let group = DispatchGroup()
        for index in 0 ..< threads {
            group.enter()
            let thread = Thread { [seed] in
                var worker = Worker(
                    random: SplitMix64(seed: seed &+ UInt64(index) &* 0x9E37_79B9), memory: memory, disk: disk, hybrid: hybrid,
                    counters: counters)
                worker.run()
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }

        let start = Date()
        var samples: [Sample] = []
        var lastReopen = 0.0
        let sampleInterval = max(0.2, seconds / 300)
        while true {
            let elapsed = Date().timeIntervalSince(start)
            if elapsed >= seconds { break }
            if elapsed - lastReopen >= Self.reopenInterval {
                lastReopen = elapsed
                Self.reopen(disk, options: diskOptions, counters: counters)
            }
            if !reader.isRunning, reader.terminationStatus != 0 {
                fail("the reader process exited with status \(reader.terminationStatus) (3: wrong bytes)", status: 6)
            }
            samples.append(Sample(time: elapsed, residentBytes: Self.residentBytes(), descriptors: Self.openDescriptors()))
            usleep(UInt32(sampleInterval * 1_000_000))
        }
        counters.stop.store(true, ordering: .relaxed)
        group.wait()
        samples.append(
            Sample(time: Date().timeIntervalSince(start), residentBytes: Self.residentBytes(), descriptors: Self.openDescriptors()))
        disk.value.close()
        hybrid.close()
        reader.waitUntilExit()
        let readerLine = String(decoding: readerOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard reader.terminationStatus == 0 else {
            fail("the reader process exited with status \(reader.terminationStatus) (3: wrong bytes)", status: 6)
        }
        if let reportPath {
            let csv =
                "seconds,rss_bytes,fds\n"
                + samples.map { String(format: "%.2f,%d,%d", $0.time, $0.residentBytes, $0.descriptors) }.joined(separator: "\n") + "\n"
            _ = FileManager.default.createFile(atPath: reportPath, contents: Data(csv.utf8))
        }
        return report(samples: samples, counters: counters, reader: readerLine)
    }

    /// Prints the run's figures and the verdict; returns the exit status.
    private func report(samples: [Sample], counters: Counters, reader: String) -> Int32 {
        let operations = counters.operations.load(ordering: .relaxed)
        print(
            "soak: \(Int(seconds)) s, \(threads) threads and a reader process; \(operations) operations, \(counters.verifiedReads.load(ordering: .relaxed)) payloads verified, \(counters.reopens.load(ordering: .relaxed)) reopens, \(counters.closedErrors.load(ordering: .relaxed)) calls on a closed cache (expected around reopens); reader: \(reader)"
        )
        func at(_ fraction: Double) -> Sample { samples[min(samples.count - 1, Int(Double(samples.count - 1) * fraction))] }
        let marks = [0.1, 0.25, 0.5, 0.75, 0.9, 1.0]
        print(
            "soak: RSS MiB at "
                + marks.map { String(format: "%.0f%% %.1f", $0 * 100, Double(at($0).residentBytes) / 1_048_576) }.joined(separator: ", "))
        print("soak: open fds at " + marks.map { String(format: "%.0f%% %d", $0 * 100, at($0).descriptors) }.joined(separator: ", "))
        guard let verdict = Self.growth(samples) else {
            print("soak: too few samples to judge growth")
            return checksGrowth ? 5 : 0
        }
        let allowed = Int(Double(verdict.middle.residentBytes) * Self.growthAllowance.fraction) + Self.growthAllowance.bytes
        let rssGrowth = verdict.end.residentBytes - verdict.middle.residentBytes
        let fdGrowth = verdict.end.descriptors - verdict.middle.descriptors
        let holds = rssGrowth <= allowed && fdGrowth <= Self.growthAllowance.descriptors
        print(
            String(
                format: "soak: second half: RSS %.1f -> %.1f MiB (growth %.1f MiB, allowed %.1f), fds %d -> %d (growth %d, allowed %d): %@",
                Double(verdict.middle.residentBytes) / 1_048_576, Double(verdict.end.residentBytes) / 1_048_576,
                Double(rssGrowth) / 1_048_576,
                Double(allowed) / 1_048_576, verdict.middle.descriptors, verdict.end.descriptors, fdGrowth,
                Self.growthAllowance.descriptors,
                holds ? "ok" : (checksGrowth ? "GROWTH" : "not judged")))
        if !checksGrowth || holds {
            print("soak: ok")
            return 0
        }
        return 5
    }

    /// The medians of the samples around the midpoint (45-55 %) and in the last tenth.
    static func growth(_ samples: [Sample]) -> (middle: Sample, end: Sample)? {
        guard let last = samples.last?.time, samples.count >= 20 else { return nil }
        func median(_ range: ClosedRange<Double>) -> Sample? {
            let window = samples.filter { range.contains($0.time / last) }
            guard !window.isEmpty else { return nil }
            let rss = window.map(\.residentBytes).sorted()[window.count / 2]
            let fds = window.map(\.descriptors).sorted()[window.count / 2]
            return Sample(time: window[window.count / 2].time, residentBytes: rss, descriptors: fds)
        }
        guard let middle = median(0.45 ... 0.55), let end = median(0.9 ... 1.0) else { return nil }
        return (middle, end)
    }

    static func diskOptions(_ directory: URL) -> DiskCacheOptions {
        var options = DiskCacheOptions(directory: directory)
        options.sizeLimit = 1 << 20
        options.garbageCollectionInterval = 0.5
        return options
    }

    /// Closes the disk cache and opens it again; workers meanwhile get ``CacheError/Code/closed``.
    static func reopen(_ disk: CurrentDisk, options: DiskCacheOptions, counters: Counters) {
        disk.value.close()
        do {
            let cache = try DiskCache(options: options)
            cache.scheduleGarbageCollection()
            disk.replace(cache)
            counters.reopens.add(1, ordering: .relaxed)
        } catch {
            fail("cannot reopen the disk cache: \(error)", status: 4)
        }
    }

    // MARK: - Measuring

    /// Resident memory, from `/proc/self/statm` (pages); 0 where it does not exist.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Open descriptors, from `/proc/self/fd` (less the one that lists it); 0 where it does not exist.
    static func openDescriptors() -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return 0 }
        return max(0, entries.count - 1)
    }
}

/// One soak thread: random operations on every tier until told to stop.
struct Worker {
    var random: SplitMix64
    let memory: MemoryCache<String, Data>
    let disk: Soak.CurrentDisk
    let hybrid: HybridCache
    let counters: Soak.Counters
    var version: UInt64 = 0

    mutating func payload(for key: String) -> Data {
        version += 1
        // Mostly small; one in twenty over 64 KiB, which the disk tier writes in two parts.
        let length = random.below(20) == 0 ? 65_536 + random.below(40_000) : random.below(12_000)
        return Data(StampedPayload.make(key: key, version: random.next() >> 16 &+ version, length: length))
    }

    func check(_ data: Data?, key: String, tier: String) {
        guard let data else { return }
        guard StampedPayload.version(of: data, key: key) != nil else {
            fail("WRONG BYTES from the \(tier) tier for key \(key): \(data.count) bytes, starting \(Array(data.prefix(40)))", status: 3)
        }
        counters.verifiedReads.add(1, ordering: .relaxed)
    }

    mutating func run() {
        while !counters.stop.load(ordering: .relaxed) {
            do {
                switch random.below(10) {
                case 0 ..< 4: try diskOperation()
                case 4 ..< 7: try hybridOperation()
                default: try memoryOperation()
                }
            } catch {
                // A call that raced a reopen finds the old instance closed; anything else is a failure.
                guard error.code == .closed else { fail("operation failed: \(error)", status: 4) }
                counters.closedErrors.add(1, ordering: .relaxed)
            }
            counters.operations.add(1, ordering: .relaxed)
        }
    }

    mutating func diskOperation() throws(CacheError) {
        let cache = disk.value
        let key = random.below(5) == 0 ? "d\(random.below(16))" : "c\(random.below(Soak.diskKeys))"
        switch random.below(100) {
        case 0 ..< 30: try cache.store(payload(for: key), forKey: key, expiry: random.below(8) == 0 ? .seconds(1) : .default)
        case 30 ..< 55: check(try cache.record(forKey: key)?.data, key: key, tier: "disk")
        case 55 ..< 62: if try !cache.lock(forKeys: [key]).isEmpty { try cache.unlock(forKeys: [key]) }
        case 62 ..< 70: try cache.remove(forKey: key)
        case 70 ..< 76: _ = try cache.touch(forKey: key)
        case 76 ..< 80: _ = cache.contains(key)
        case 80 ..< 82: _ = try cache.keys(withPrefix: "c1")
        case 82 ..< 83: try cache.collectGarbage()
        case 83 ..< 90: try asyncRead(cache, key: key)
        default: callbackRead(cache, key: key)
        }
    }

    /// A read through the `async` form, waited for on this thread.
    func asyncRead(_ cache: DiskCache, key: String) throws(CacheError) {
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            do throws(CacheError) { outcome.set(.success(try await cache.value(forKey: key))) } catch { outcome.set(.failure(error)) }
            done.signal()
        }
        done.wait()
        check(try outcome.value.get(), key: key, tier: "disk (async)")
    }

    /// A read through the SPT-style callback form, delivered on a private queue.
    func callbackRead(_ cache: DiskCache, key: String) {
        let done = DispatchSemaphore(value: 0)
        let outcome = Outcome()
        cache.record(forKey: key, queue: .global()) { response in
            switch response {
            case .success(let record): outcome.set(.success(record.data))
            case .notFound: outcome.set(.success(nil))
            case .failure(let error): outcome.set(.failure(error))
            }
            done.signal()
        }
        done.wait()
        switch outcome.value {
        case .success(let data): check(data, key: key, tier: "disk (callback)")
        case .failure(let error):
            guard error.code == .closed else { fail("callback read failed: \(error)", status: 4) }
            counters.closedErrors.add(1, ordering: .relaxed)
        }
    }

    mutating func hybridOperation() throws(CacheError) {
        let key = "h\(random.below(48))"
        switch random.below(100) {
        case 0 ..< 30: try hybrid.store(payload(for: key), forKey: key)
        case 30 ..< 60: check(try hybrid.value(forKey: key), key: key, tier: "hybrid")
        case 60 ..< 68: if try !hybrid.lock(forKeys: [key]).isEmpty { try hybrid.unlock(forKeys: [key]) }
        case 68 ..< 78: try hybrid.remove(forKey: key)
        case 78 ..< 84: _ = try hybrid.touch(forKey: key)
        case 84 ..< 90: _ = hybrid.contains(key)
        case 90 ..< 92: _ = try hybrid.keys(withPrefix: "h1")
        default:
            let outcome = Outcome()
            let done = DispatchSemaphore(value: 0)
            let hybrid = hybrid
            Task {
                do throws(CacheError) { outcome.set(.success(try await hybrid.value(forKey: key))) } catch { outcome.set(.failure(error)) }
                done.signal()
            }
            done.wait()
            check(try outcome.value.get(), key: key, tier: "hybrid (async)")
        }
    }

    mutating func memoryOperation() throws(CacheError) {
        let key = "m\(random.below(600))"
        switch random.below(100) {
        case 0 ..< 40:
            let data = payload(for: key)
            try memory.store(data, forKey: key, cost: data.count, expiry: random.below(4) == 0 ? .seconds(1) : .default)
        case 40 ..< 80: check(memory.value(forKey: key), key: key, tier: "memory")
        case 80 ..< 90: _ = memory.remove(forKey: key)
        case 90 ..< 95: _ = memory.contains(key)
        case 95 ..< 97: memory.collectGarbage()
        case 97 ..< 99: try memory.trim(toCost: 2 << 20)
        default: memory.handleMemoryPressure(random.below(2) == 0 ? .warning : .critical)
        }
    }
}

/// A result handed from a task or a callback to the waiting thread (after a semaphore, which
/// orders the accesses; the lock keeps the Thread Sanitizer informed).
final class Outcome: @unchecked Sendable {
    // @unchecked: `stored` is only touched under `lock`.
    private let lock = NSLock()
    private var stored: Result<Data?, CacheError> = .success(nil)
    func set(_ result: Result<Data?, CacheError>) {
        lock.lock()
        stored = result
        lock.unlock()
    }
    var value: Result<Data?, CacheError> {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}
