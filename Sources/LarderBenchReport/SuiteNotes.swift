/// What the page says about each suite: its heading, what it measures, and what each row's ratio
/// is taken against.
struct SuiteNote {
    /// The suite's name, as `larder-bench` prints it.
    var suite: String
    /// The section's heading.
    var title: String
    /// What the suite measures, in a few sentences.
    var text: String
    /// For an implementation (`nil`: any), the implementations its ratio is taken against, the
    /// first the row's case and size measured.
    var baselines: [(impl: String?, versus: [String])]
    /// The latency chart's file name, for the suites that are a tier.
    var chart: String?
    /// The cases whose rows also show the operations a second (the inverse of the time per
    /// operation), as the tool they are measured beside reports them.
    var throughputCases: Set<String> = []

    /// The suites in the page's order (`hitratio` has a page section of its own).
    static let all: [SuiteNote] = [
        SuiteNote(
            suite: "memory", title: "Memory tier",
            text: """
                `MemoryCache` against `mutex-dictionary` (a `Mutex<[String: Data]>`: the floor for any thread-safe hash \
                cache, with no limit and no recency order) and Foundation's `NSCache`, with 64-byte values and `String` \
                keys read in a seeded random order. `larder` is the default exact LRU, `larder-recommended` uses \
                `EvictionPolicy.recommended` (TinyLFU), as `HybridCache`'s memory tier does. `set-evict` cycles n keys \
                through a cache that holds n/2, so every store evicts (the dictionary just overwrites).
                """,
            baselines: [(nil, ["mutex-dictionary"])], chart: "latency-memory"),
        SuiteNote(
            suite: "disk", title: "Disk tier",
            text: """
                `DiskCache` against `posix-floor` (one file per entry through bare system calls: no header, checksum or \
                index, the least a file-per-entry cache can do), SQLite, and a naive Foundation cache. `larder-noverify` \
                skips the payload checksum. Loads read records in the page cache in a shuffled order (`load-4k-zipf`: \
                Zipf(0.9) over the same keys, as an app rereads its hot records), the implementations taking turns \
                every 500 loads; stores are fresh inserts. `larder-limit-lru` and `larder-limit-adaptive` hold the \
                same 4 KiB records under a size limit twice what they take, so that each hit keeps the order of the \
                eviction policy (`DiskEvictionPolicy.lru`, or `.adaptive`, the default) without evicting. The \
                `load-4k` rows of `larder` alone show a hit as the record count grows. A 4 KiB hit is bound by the \
                kernel's open and read, which the floor pays too.
                """,
            baselines: [(nil, ["posix-floor"])], chart: "latency-disk"),
        SuiteNote(
            suite: "concurrency", title: "Concurrency",
            text: """
                90 % loads and 10 % overwrites of 4 KiB over 10,000 keys, from one thread (`mixed-1t`) and from two \
                (`mixed-2t`); the time is wall time over the operations of all threads, so a lower `mixed-2t` means the \
                threads ran in parallel. `mixed-2p` and `mixed-4p`: the same workload from two and four processes, each \
                a writer sharing the folder with the others (`mixed-2p` runs `mixed-2t`'s two lists); `larder-shared`'s \
                `mixed-1t` is one writer opened as one that shares its folder, alone on it. larder's mixed cases are \
                sampled in turn, each sample in a cache (or processes) opened for it. `read-beside-writer`: loads of half the \
                keys while a second thread overwrites the other half without pause (time per load).
                """,
            baselines: [(nil, ["posix-floor"])], chart: nil),
        SuiteNote(
            suite: "gc", title: "Collection",
            text: """
                A cache of n records of 1 KiB, 1 % over its limit, brought back under it. `larder` is one \
                `collectGarbage()`, which picks the least recently used 1 % from its index; `directory-scan` is what \
                SPTPersistentCache does: read every file's header, sort by time, unlink the oldest. Both unlink the \
                same number of files; the time is per collection.
                """,
            baselines: [(nil, ["directory-scan"])], chart: nil),
        SuiteNote(
            suite: "open", title: "Opening a cache",
            text: """
                A closed cache of n records of 1 KiB, reopened with its files in the page cache: `first-load` is the \
                time from `init` to the first hit, `index-ready` to the index knowing every record. \
                `larder-no-snapshot` has its index snapshot deleted first, as after a crash, so the index is rebuilt \
                from the records' headers. `index-memory` is the open cache's resident memory per record; \
                `larder-adaptive` opens with the snapshot and a size limit, so that the adaptive eviction policy \
                holds every record too.
                """,
            baselines: [("larder-snapshot", ["larder-no-snapshot"])], chart: nil),
        SuiteNote(
            suite: "hybrid", title: "Hybrid cache",
            text: """
                `HybridCache` over 4 KiB values, beside the tier that serves the read used on its own: the cost of the \
                hybrid layer. `get-hit-memory`: every key in memory (`hybrid` with default options, TinyLFU; the `-lru` \
                pair under LRU). `get-hit-memory-typed`: a `TypedCache` view whose values are a small `Codable` struct. \
                `get-hit-disk`: memory holds one entry, so every read loads from disk and promotes the value; \
                `disk-only` is a `DiskCache` with the hybrid's disk options (no payloads kept in memory, the hybrid's \
                memory tier doing that), in a folder of its own. Each pair is measured alternately in one process.
                """,
            baselines: [("hybrid", ["memory-only", "disk-only"]), ("hybrid-lru", ["memory-only-lru"]), ("typed", ["memory-only"])],
            chart: "latency-hybrid"),
        SuiteNote(
            suite: "loadthrough", title: "Load-through",
            text: """
                `HybridCache.value(forKey:expiry:staleWindows:orLoad:)`. `coalesce-1000`: 1,000 tasks ask at once for \
                a missing key whose loader sleeps 10 ms; the time is the whole burst's, and the loader must run once. \
                `hit`: a memory hit through the load-through read (`orload`) beside the plain `async` read.
                """,
            baselines: [("orload", ["plain"])], chart: nil),
        SuiteNote(
            suite: "remote", title: "Remote tier (Redis)",
            text: """
                The shared remote tier with 4 KiB values, against a Redis server on the same host. `get-hit-remote`: \
                a read that memory and disk miss and Redis serves, promoted to memory and queued for disk (`larder`: \
                the caller's latency; `larder-drained`: with the disk copies' writing timed too; `larder-memory`: \
                promoted to memory only). `get-many-remote`: 100 such keys in one call, time per batch. `by-hand` is \
                what a user would write instead: a plain RESP client's `GET` (or one `MGET`), then each value \
                inserted into a `Mutex<[String: Data]>`; `raw` is that client's read alone. Both cases time their \
                impls side by side, 16 reads or one batch each in turn, in an order that changes from turn to turn. \
                `get-throughput`: one key read by n concurrent callers (at 16 and 64, tasks on the async API sharing one connection), \
                time per GET and GETs a second, beside `redis-benchmark -t get -d 4096 -c n` run against the same \
                server in the same run. `invalidation`: a removal on one instance until another instance's local \
                read misses. `store` is Larder's Redis store alone.
                """,
            baselines: [(nil, ["by-hand", "redis-benchmark", "raw"])], chart: "latency-remote", throughputCases: ["get-throughput"]),
    ]

    /// The implementation a result's ratio is taken against, if its case and size measured one.
    func baseline(of result: BenchResult, in run: BenchRun) -> BenchResult? {
        guard result.caseName != "index-memory" else { return nil }
        for (impl, versus) in baselines where impl == nil || impl == result.impl {
            for name in versus where name != result.impl {
                if let other = run.result(suite, result.caseName, name, n: result.n) { return other }
            }
        }
        return nil
    }
}
