#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

// The open suite: how long a DiskCache of n records of 1 KiB takes, from `init`, to answer its
// first load (`first-load`) and to know every record (`index-ready`: `totalSize` returns).
//
// - `larder-snapshot`: reopened after a clean close, which wrote the index snapshot.
// - `larder-no-snapshot`: the snapshot deleted before opening, as after a crash, so the index
//   is rebuilt from every record's header.
// Each round opens, measures, waits for the index, and closes (unmeasured). Files are in the
// page cache (a warm restart of the app, not a cold boot).
//
// `index-memory`: the resident memory the open cache holds per record (the "bytes" field), in a
// child process of this one (`--index-memory FOLDER N`), so that no memory freed by building the
// fixture is reused: its resident size (`/proc/self/statm`) before `init` (after a cache of 100
// records was opened and closed, so that the libraries and threads any cache starts are
// counted out), then once the index is ready; the time is that of the open. With the
// snapshot, and without (the index built from the headers); and `larder-adaptive`, with the
// snapshot and a size limit (twice the records' bytes, so nothing is evicted), under which the
// default policy (`.adaptive`) holds every record too.

func runOpenSuite(_ context: BenchContext) throws {
    let sizes = context.sizes ?? (context.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000])
    let repeats = context.quick ? 3 : 5
    let directory = try BenchDirectory("open")
    defer { directory.remove() }

    for n in sizes {
        let folder = directory.sub("cache-\(n)")
        let clock = try CacheFixture.build(folder, n: n)
        let options = CacheFixture.options(folder, clock: clock)
        let snapshot = folder + "/.larder-index"
        let probe = CacheFixture.key(n / 2)

        for (impl, keepsSnapshot) in [("larder-snapshot", true), ("larder-no-snapshot", false)] {
            for name in ["first-load", "index-ready"] {
                var samples: [Double] = []
                for round in 0 ... repeats {
                    if !keepsSnapshot { unlink(snapshot) }
                    guard keepsSnapshot == (access(snapshot, F_OK) == 0) else {
                        throw BenchError("\(impl): snapshot present: \(!keepsSnapshot)")
                    }
                    let start = monotonicNanoseconds()
                    let cache = try DiskCache(options: options)
                    if name == "first-load" {
                        guard try cache.value(forKey: probe) != nil else { throw BenchError("\(probe) missing") }
                    } else {
                        guard cache.totalSize > 0 else { throw BenchError("empty index") }
                    }
                    let elapsed = monotonicNanoseconds() - start
                    if round > 0 { samples.append(Double(elapsed)) }
                    guard cache.count == n else { throw BenchError("index holds \(cache.count) records, expected \(n)") }
                    cache.close()
                }
                context.report(suite: "open", case: name, impl: impl, n: n, bytes: CacheFixture.recordBytes, nsPerOp: median(samples))
            }
            if !keepsSnapshot { unlink(snapshot) }
            let measured = try runIndexMemoryChild(folder, n: n)
            context.report(suite: "open", case: "index-memory", impl: impl, n: n, bytes: measured.bytesPerRecord, nsPerOp: measured.ns)
            // Reopened once more, so the next impl finds a snapshot again.
            try DiskCache(options: options).close()
        }
        let adaptive = try runIndexMemoryChild(folder, n: n, sizeLimit: 2 * n * 4096)
        context.report(
            suite: "open", case: "index-memory", impl: "larder-adaptive", n: n, bytes: adaptive.bytesPerRecord, nsPerOp: adaptive.ns)
        removeTree(folder)
    }
}

/// Runs `--index-memory` in a child process, with `sizeLimit` unless it is 0; returns the bytes
/// per record and the open's time.
private func runIndexMemoryChild(_ folder: String, n: Int, sizeLimit: Int = 0) throws -> (bytesPerRecord: Int, ns: Double) {
    let process = Process()
    process.executableURL = URL(
        fileURLWithPath: CommandLine.arguments[0].hasPrefix("/")
            ? CommandLine.arguments[0] : FileManager.default.currentDirectoryPath + "/" + CommandLine.arguments[0])
    process.arguments = ["--index-memory", folder, String(n)] + (sizeLimit > 0 ? [String(sizeLimit)] : [])
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let fields = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isWhitespace)
    guard process.terminationStatus == 0, fields.count == 2, let bytes = Int(fields[0]), let ns = Double(fields[1]) else {
        throw BenchError("index-memory child failed: \(String(decoding: output, as: UTF8.self))")
    }
    return (bytes, ns)
}

/// The resident set size of this process, in bytes.
private func residentBytes() throws -> Int {
    let text = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { throw BenchError("cannot read /proc/self/statm") }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Opens the cache of `n` records in `folder` (with whatever snapshot it has, and `sizeLimit`
/// unless it is 0), waits for its index, and returns "bytes-per-record ns" for the child's
/// standard output.
func measureIndexMemory(_ folder: String, n: Int, sizeLimit: Int = 0) throws -> String {
    let clock = ManualClock(now: CacheFixture.startTime + Double(n))
    var options = CacheFixture.options(folder, clock: clock)
    if sizeLimit > 0 { options.sizeLimit = sizeLimit }
    // Libraries and threads a first cache starts (a constant) are not the index: a cache of
    // 100 records is opened, used and closed first.
    let warmUp = try BenchDirectory("index-memory-warm-up")
    defer { warmUp.remove() }
    _ = try CacheFixture.build(warmUp.path, n: 100)
    let small = try DiskCache(options: CacheFixture.options(warmUp.path, clock: clock))
    guard small.count == 100, try small.value(forKey: CacheFixture.key(7)) != nil else { throw BenchError("warm-up cache") }
    small.close()
    let before = try residentBytes()
    let start = monotonicNanoseconds()
    let cache = try DiskCache(options: options)
    guard cache.totalSize > 0, cache.count == n else { throw BenchError("index holds \(cache.count) records, expected \(n)") }
    let elapsed = monotonicNanoseconds() - start
    var after = try residentBytes()
    if ProcessInfo.processInfo.environment["LARDER_BENCH_TRIM"] != nil {
        printError("untrimmed: \((after - before) / n) bytes per record")
        if let trim = dlsym(nil, "malloc_trim") {
            _ = unsafeBitCast(trim, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        after = try residentBytes()
    }
    // Closed, so that the snapshot is there again for the next open.
    cache.close()
    return "\((after - before) / n) \(elapsed)"
}
