#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    usage: larder-bench [--json] [--quick] [--redis HOST:PORT] [--traces DIR] [--synthetic] [--references] [suite ...]

      --json         print one JSON object per line
      --quick        use smaller sizes
      --redis        the Redis server of the remote suite (which skips without it)
      --traces DIR   the folder of *.u32 traces for hitratio (default ../shared/traces)
      --synthetic    hitratio replays its synthetic traces (loops, scans, drift, phases, Zipf,
                     concatenations of the recorded traces) instead, with --references
      --references   hitratio also replays its reference simulators (clock, sieve, s3fifo, arc, 2q)
      --help         print this help

    suites: \(suites.map(\.name).joined(separator: ", ")) (all when none is named)
    """

/// Writes a line to standard error.
func printError(_ message: String) {
    let line = message + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
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
    case "--json": context.json = true
    case "--synthetic": context.synthetic = true
    case "--references": context.references = true
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
