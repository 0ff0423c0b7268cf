#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

// The gc suite: a cache of n records of 1 KiB, 1 % over its size limit, brought back under it.
//
// - `larder`: one `collectGarbage()` (the expired records from the index's expiry order, none
//   here; pick the least recently used 1 %, re-check and unlink each, append a commit to the
//   index journal). The limit is the free-space
//   floor: a stand-in `statvfs` reports the volume short by 1 % of the cache's size just for the
//   measured call (the cache reads a fixed `sizeLimit` at open and would trim at once). The
//   removed records are stored again afterwards, unmeasured, so every round removes 1 %.
// - `directory-scan`: what SPTPersistentCache does for the same decision: list every shard
//   folder, open each file, read its 64-byte header, stat it, close it, sort by update time,
//   and unlink the oldest until under the limit. The removed files are written back afterwards,
//   unmeasured. Both implementations delete, so both pay the same unlinks.

func runGCSuite(_ context: BenchContext) throws {
    let sizes = context.sizes ?? (context.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000])
    let repeats = context.quick ? 3 : 5
    let directory = try BenchDirectory("gc")
    defer { directory.remove() }

    for n in sizes {
        let folder = directory.sub("cache-\(n)")
        let clock = try CacheFixture.build(folder, n: n)
        let victimCount = n / 100

        let samples = try measureLarderPrune(folder, n: n, clock: clock, rounds: repeats)
        context.report(suite: "gc", case: "prune-1pct", impl: "larder", n: n, bytes: CacheFixture.recordBytes, nsPerOp: median(samples))

        // directory-scan, on the same folder with the cache closed.
        let firstPass = try directoryScan(folder, victimCount: victimCount)
        var saved: [(path: String, bytes: [UInt8])] = []
        for victim in firstPass { saved.append((victim, try readWholeFile(victim))) }
        try restore(saved)
        var scanSamples: [Double] = []
        for round in 0 ... repeats {
            let start = monotonicNanoseconds()
            let removed = try directoryScan(folder, victimCount: victimCount, unlinking: true)
            let elapsed = monotonicNanoseconds() - start
            guard removed.count == victimCount else { throw BenchError("directory-scan removed \(removed.count), expected \(victimCount)") }
            if round > 0 { scanSamples.append(Double(elapsed)) }
            try restore(saved)
        }
        context.report(
            suite: "gc", case: "prune-1pct", impl: "directory-scan", n: n, bytes: CacheFixture.recordBytes, nsPerOp: median(scanSamples))
        removeTree(folder)
    }
}

/// `--gc-once FOLDER N`: the gc suite's two cases on an existing fixture of N records (as the
/// open suite leaves one), with 5 measured rounds of larder (their median) and 1 of
/// directory-scan; for sizes whose full suite takes too long on a busy machine. Prints one row
/// per case.
func runGCOnce(_ folder: String, n: Int, context: BenchContext) throws {
    let clock = ManualClock(now: CacheFixture.startTime + Double(n))
    let victimCount = n / 100
    let samples = try measureLarderPrune(folder, n: n, clock: clock, rounds: 5)
    context.report(suite: "gc", case: "prune-1pct", impl: "larder", n: n, bytes: CacheFixture.recordBytes, nsPerOp: median(samples))
    let firstPass = try directoryScan(folder, victimCount: victimCount)
    var saved: [(path: String, bytes: [UInt8])] = []
    for victim in firstPass { saved.append((victim, try readWholeFile(victim))) }
    let start = monotonicNanoseconds()
    let removed = try directoryScan(folder, victimCount: victimCount, unlinking: true)
    let elapsed = monotonicNanoseconds() - start
    try restore(saved)
    guard removed.count == victimCount else { throw BenchError("directory-scan removed \(removed.count), expected \(victimCount)") }
    context.report(
        suite: "gc", case: "prune-1pct", impl: "directory-scan", n: n, bytes: CacheFixture.recordBytes, nsPerOp: Double(elapsed))
}

/// larder's case: opens the fixture of `n` records in `folder`, then `rounds` + 1 times makes
/// the volume look 1 % short of free space and times one `collectGarbage()`, which must
/// remove 1 % of the records, and stores them back (unmeasured). Closes the cache.
/// - Returns: The times of every round but the first, in nanoseconds.
private func measureLarderPrune(_ folder: String, n: Int, clock: ManualClock, rounds: Int) throws -> [Double] {
    let victimCount = n / 100
    let gauge = VolumeGauge()
    let cache = try DiskCache(options: CacheFixture.options(folder, clock: clock, keepsFree: true), systemCalls: gauge.systemCalls)
    defer { cache.close() }
    let total = cache.totalSize
    let payload = randomPayload(CacheFixture.recordBytes, seed: 1024)
    var samples: [Double] = []
    for round in 0 ... rounds {
        gauge.setShort(by: total / 100)
        let start = monotonicNanoseconds()
        let report = try cache.collectGarbage()
        let elapsed = monotonicNanoseconds() - start
        gauge.setPlenty()
        guard report.removed.count == victimCount else {
            throw BenchError("collectGarbage removed \(report.removed.count) records, expected \(victimCount)")
        }
        if round > 0 { samples.append(Double(elapsed)) }
        // Past the cache's one-second memory of the free space, then put the records back.
        clock.advance(by: 10)
        for removal in report.removed { try cache.store(payload, forKey: removal.key!) }
    }
    return samples
}

/// SPT's size-limit pass over a cache folder: every record's header and size, sorted by update
/// time; returns (and with `unlinking`, removes) the oldest records to go so that the total
/// drops by 1 %, which removes `victimCount` records of equal size.
private func directoryScan(_ root: String, victimCount: Int, unlinking: Bool = false) throws -> [String] {
    var records: [(path: String, updateTime: UInt64, size: Int)] = []
    var header = [UInt8](repeating: 0, count: RecordHeader.size)
    guard let top = opendir(root) else { throw BenchError("opendir \(root): errno \(errno)") }
    defer { closedir(top) }
    while let entry = readdir(top) {
        let shard = entryName(entry)
        guard !shard.hasPrefix("."), entry.pointee.d_type == UInt8(DT_DIR) else { continue }
        let folder = root + "/" + shard
        guard let files = opendir(folder) else { continue }
        defer { closedir(files) }
        while let file = readdir(files) {
            let name = entryName(file)
            guard !name.hasPrefix(".") else { continue }
            let path = folder + "/" + name
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else { continue }
            let got = header.withUnsafeMutableBytes { read(fd, $0.baseAddress!, RecordHeader.size) }
            guard got == RecordHeader.size,
                let decoded = try? header.withUnsafeBytes({ try RecordHeader.decode($0) })
            else { continue }
            records.append((path, decoded.updateTimeSec, (Int(info.st_size) + 4095) / 4096 * 4096))
        }
    }
    let total = records.reduce(0) { $0 + $1.size }
    let limit = total - total / 100
    records.sort { $0.updateTime < $1.updateTime }
    var size = total
    var victims: [String] = []
    for record in records where size > limit {
        if unlinking, unlink(record.path) != 0 { throw BenchError("unlink \(record.path): errno \(errno)") }
        victims.append(record.path)
        size -= record.size
    }
    return victims
}

private func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
    withUnsafePointer(to: entry.pointee.d_name) { tuple in
        tuple.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
    }
}

private func readWholeFile(_ path: String) throws -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else { throw BenchError("cannot read \(path)") }
    return Array(data)
}

private func restore(_ files: [(path: String, bytes: [UInt8])]) throws {
    for file in files {
        try Data(file.bytes).write(to: URL(fileURLWithPath: file.path))
    }
}
