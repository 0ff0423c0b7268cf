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

func runOpenSuite(_ context: BenchContext) throws {
    let sizes = context.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]
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
        }
        removeTree(folder)
    }
}
