#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LarderBenchReport

let usage = """
    usage: larder-bench [--json] [--quick] [--redis HOST:PORT] [--traces DIR] [--synthetic] [--references]
                        [--sized] [--seed N] [--sizes N,...] [suite ...]
           larder-bench report RESULTS.jsonl [--out DIR]

      --json         print one JSON object per line
      --quick        use smaller sizes
      --redis        the Redis server of the remote suite (which skips without it)
      --traces DIR   the folder of *.u32 traces for hitratio (default ../shared/traces)
      --synthetic    hitratio replays its synthetic traces (loops, scans, drift, phases, Zipf,
                     concatenations of the recorded traces) instead, with --references
      --sized        hitratio replays the sized traces (*.kv32, default folder ../shared/traces/sized)
                     through the disk tier's policies, at 1 %, 5 % and 10 % of each working set
      --seed N       the seed of the recommended disk policy's victim draws under --sized (default 0)
      --references   hitratio also replays its reference simulators (clock, sieve, s3fifo, arc, 2q)
      --sizes N,...  the record counts of the open and gc suites (e.g. 100000,1000000)
      --help         print this help

    report           renders BENCHMARKS.md and docs/benchmarks/*.svg under DIR (default: the current
                     folder) from the JSON lines of a run (scripts/benchmarks.sh makes both)

    suites: \(suites.map(\.name).joined(separator: ", ")) (all when none is named)

    LARDER_BENCH_OPEN_FILES=N sets DiskCacheOptions.maximumOpenFiles of the larder stores of the
    disk and concurrency suites (default: the cache's own default), LARDER_BENCH_PAYLOAD_MEMORY=B
    their DiskCacheOptions.maximumPayloadMemory. LARDER_BENCH_DISK_4K=1 runs the
    disk suite's 4 KiB loads alone; LARDER_BENCH_DISK_KINDS=larder,sqlite only those implementations;
    LARDER_BENCH_CPU_TIME=1 times its loads, and the remote suite its reads, in thread CPU time
    instead of wall time. LARDER_BENCH_TRACES=drift,c2k_orm_busy replays only those hitratio traces.
    LARDER_BENCH_SHARED_FOLDER=1 opens the larder stores, and the hybrid suite's disk tiers, as
    writers sharing their folder with others, =0 as writers holding it alone (unset: the cache's
    default; the concurrency suite measures its larder cases both ways in every run, whatever it
    says).
    LARDER_BENCH_MIXED_ONLY=1 runs only the concurrency suite's larder mixed rows (mixed-1t, mixed-2t,
    mixed-1t larder-shared, mixed-2p, mixed-4p).
    LARDER_BENCH_REMOTE_COUNT_LIMIT=N caps the remote suite's readers' memory tiers at N entries
    (0: no cap; unset: the keys of one run, as many as the by-hand dictionary holds);
    LARDER_BENCH_REMOTE_CASES=get-hit-remote,invalidation runs only those remote cases.
    """

/// Writes a line to standard error.
func printError(_ message: String) {
    let line = message + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

// `report RESULTS.jsonl [--out DIR]`: the page and its charts, from a run's JSON lines.
if CommandLine.arguments.count >= 2, CommandLine.arguments[1] == "report" {
    var arguments = CommandLine.arguments.dropFirst(2)
    guard let input = arguments.popFirst() else {
        printError("larder-bench: report takes RESULTS.jsonl [--out DIR]\n\(usage)")
        exit(2)
    }
    var root = FileManager.default.currentDirectoryPath
    if arguments.first == "--out", arguments.count == 2 {
        root = arguments.last!
    } else if !arguments.isEmpty {
        printError("larder-bench: report takes RESULTS.jsonl [--out DIR]\n\(usage)")
        exit(2)
    }
    do {
        let text = try String(contentsOfFile: input, encoding: .utf8)
        let run: BenchRun
        do { run = try BenchRun(jsonLines: text) } catch { throw BenchError("\(input), \(error)") }
        for path in try BenchmarksPage(run: run).write(to: URL(fileURLWithPath: root, isDirectory: true)) { print(path) }
        exit(0)
    } catch {
        printError("larder-bench: \(error)")
        exit(1)
    }
}

// `--gc-once FOLDER N`: see `runGCOnce`.
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "--gc-once", let n = Int(CommandLine.arguments[3]) {
    do {
        try runGCOnce(CommandLine.arguments[2], n: n, context: BenchContext(quick: false, json: false))
        exit(0)
    } catch {
        printError("larder-bench: \(error)")
        exit(1)
    }
}

// `--mixed-worker FOLDER SEED COUNT`: one process of `concurrency`'s mixed-2p and mixed-4p.
if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--mixed-worker", let seed = UInt64(CommandLine.arguments[3]),
    let count = Int(CommandLine.arguments[4])
{
    do {
        try runMixedWorker(folder: CommandLine.arguments[2], seed: seed, count: count)
        exit(0)
    } catch {
        printError("larder-bench: \(error)")
        exit(1)
    }
}

// The child process `open/index-memory` runs: `--index-memory FOLDER N [SIZE-LIMIT]`.
if (4 ... 5).contains(CommandLine.arguments.count), CommandLine.arguments[1] == "--index-memory", let n = Int(CommandLine.arguments[3]),
    let sizeLimit = CommandLine.arguments.count == 5 ? Int(CommandLine.arguments[4]) : 0
{
    do {
        print(try measureIndexMemory(CommandLine.arguments[2], n: n, sizeLimit: sizeLimit))
        exit(0)
    } catch {
        printError("larder-bench: \(error)")
        exit(1)
    }
}

// `--build-fixture FOLDER N`: the open suite's closed cache of N records, kept for `--index-memory`.
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "--build-fixture", let n = Int(CommandLine.arguments[3]) {
    do {
        _ = try CacheFixture.build(CommandLine.arguments[2], n: n)
        exit(0)
    } catch {
        printError("larder-bench: \(error)")
        exit(1)
    }
}

var context = BenchContext(quick: false, json: false)
var chosen: [String] = []
var remaining = CommandLine.arguments.dropFirst()
while let argument = remaining.popFirst() {
    switch argument {
    case "--traces":
        guard let folder = remaining.popFirst() else {
            printError("larder-bench: --traces needs a folder\n\(usage)")
            exit(2)
        }
        context.traces = folder
    case _ where argument.hasPrefix("--traces="):
        context.traces = String(argument.dropFirst("--traces=".count))
    case "--sizes":
        guard let list = remaining.popFirst(), case let sizes = list.split(separator: ",").compactMap({ Int($0) }), !sizes.isEmpty,
            sizes.allSatisfy({ $0 >= 100 })
        else {
            printError("larder-bench: --sizes needs counts of at least 100, such as 100000,1000000\n\(usage)")
            exit(2)
        }
        context.sizes = sizes
    case "--json": context.json = true
    case "--synthetic": context.synthetic = true
    case "--references": context.references = true
    case "--sized": context.sized = true
    case "--seed":
        guard let text = remaining.popFirst(), let seed = UInt64(text) else {
            printError("larder-bench: --seed needs a whole number\n\(usage)")
            exit(2)
        }
        context.seed = seed
    case "--redis":
        guard let address = remaining.popFirst() else {
            printError("larder-bench: --redis needs HOST:PORT\n\(usage)")
            exit(2)
        }
        context.redis = address
    case "--quick": context.quick = true
    case "--help", "-h":
        print(usage)
        exit(0)
    case _ where argument.hasPrefix("-"):
        printError("larder-bench: unknown option \(argument)\n\(usage)")
        exit(2)
    default:
        guard suites.contains(where: { $0.name == argument }) else {
            printError("larder-bench: unknown suite \(argument)\n\(usage)")
            exit(2)
        }
        chosen.append(argument)
    }
}

do {
    for suite in suites where chosen.isEmpty || chosen.contains(suite.name) {
        try suite.run(context)
    }
} catch {
    printError("larder-bench: \(error)")
    exit(1)
}
