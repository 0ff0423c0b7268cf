import Foundation

/// One measured line of `larder-bench --json`: a case of a suite, one implementation, one size.
public struct BenchResult: Sendable, Equatable {
    /// The suite (`memory`, `disk`, ...).
    public var suite: String
    /// The case within the suite (`load-4k`), or for `hitratio` the trace.
    public var caseName: String
    /// The implementation measured (`larder`, `posix-floor`, ...), or for `hitratio` the policy.
    public var impl: String
    /// The case's size: records, keys, callers, or for `hitratio` the capacity in entries.
    public var n: Int
    /// The payload size in bytes (for `open/index-memory`: resident bytes per record).
    public var bytes: Int
    /// The median time per operation, in nanoseconds.
    public var nanosecondsPerOperation: Double
    /// Every other numeric field of the line (`loads`, `misses`, `miss_ratio`).
    public var numbers: [String: Double]
    /// Every other string field of the line (`policy`).
    public var strings: [String: String]

    /// Makes a result from its fields.
    public init(
        suite: String, caseName: String, impl: String, n: Int, bytes: Int = 0, nanosecondsPerOperation: Double,
        numbers: [String: Double] = [:], strings: [String: String] = [:]
    ) {
        self.suite = suite
        self.caseName = caseName
        self.impl = impl
        self.n = n
        self.bytes = bytes
        self.nanosecondsPerOperation = nanosecondsPerOperation
        self.numbers = numbers
        self.strings = strings
    }
}

/// How a suite of the run was made: its exact command and how long it took.
public struct SuiteRun: Sendable, Equatable {
    /// The suite's name.
    public var suite: String
    /// The command line that printed the suite's lines.
    public var command: String
    /// The suite's wall time in seconds.
    public var seconds: Int?
}

/// Everything one run of `scripts/benchmarks.sh` recorded: the machine, the commands, the results.
public struct BenchRun: Sendable {
    /// The machine's description, from the `{"run": "machine", ...}` line: `cpu`, `cores`,
    /// `memory`, `kernel`, `swift`, `filesystem`, `date`, `command`, `load`.
    public var machine: [String: String] = [:]
    /// Each suite's command, in the order they ran.
    public var suites: [SuiteRun] = []
    /// Every measured line, in the order printed.
    public var results: [BenchResult] = []

    /// An empty run.
    public init() {}

    /// Reads JSON lines: `larder-bench --json` output and the script's `{"run": ...}` lines.
    ///
    /// Lines that do not start with `{` (a suite's note that it skipped) are ignored.
    /// - Throws: ``ReportError`` naming the first line that is not a result or a run line.
    public init(jsonLines text: String) throws(ReportError) {
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix("{") else { continue }
            let number = index + 1
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
                throw ReportError(line: number, "not a JSON object")
            }
            if let kind = object["run"] as? String {
                try addRunLine(kind, object, line: number)
                continue
            }
            results.append(try Self.result(object, line: number))
        }
    }

    private mutating func addRunLine(_ kind: String, _ object: [String: Any], line: Int) throws(ReportError) {
        switch kind {
        case "machine":
            for (key, value) in object where key != "run" {
                machine[key] = (value as? String) ?? (value as? NSNumber).map { "\($0)" }
            }
        case "suite":
            guard let suite = object["suite"] as? String, let command = object["command"] as? String else {
                throw ReportError(line: line, "a suite line needs \"suite\" and \"command\"")
            }
            suites.append(SuiteRun(suite: suite, command: command, seconds: (object["seconds"] as? NSNumber)?.intValue))
        default:
            throw ReportError(line: line, "unknown run line \"\(kind)\"")
        }
    }

    private static func result(_ object: [String: Any], line: Int) throws(ReportError) -> BenchResult {
        // `hitratio --sized` names its case `trace` and its size `capacity_bytes`, and times nothing.
        let sized = object["suite"] as? String == "hitratio-sized"
        guard let suite = object["suite"] as? String, let caseName = object[sized ? "trace" : "case"] as? String,
            let impl = object["impl"] as? String
        else { throw ReportError(line: line, "a result needs \"suite\", \"case\" and \"impl\"") }
        guard let n = (object[sized ? "capacity_bytes" : "n"] as? NSNumber)?.intValue,
            let ns = sized ? 0 : (object["ns_per_op"] as? NSNumber)?.doubleValue, ns.isFinite
        else {
            throw ReportError(line: line, "\(suite)/\(caseName)/\(impl): needs a numeric \"n\" and \"ns_per_op\"")
        }
        var result = BenchResult(
            suite: suite, caseName: caseName, impl: impl, n: n, bytes: (object["bytes"] as? NSNumber)?.intValue ?? 0,
            nanosecondsPerOperation: ns)
        for (key, value) in object where !["suite", "case", "trace", "impl", "n", "capacity_bytes", "bytes", "ns_per_op"].contains(key) {
            if let string = value as? String {
                result.strings[key] = string
            } else if let number = value as? NSNumber {
                result.numbers[key] = number.doubleValue
            }
        }
        return result
    }

    /// The results of one suite, in the order printed.
    public func results(of suite: String) -> [BenchResult] {
        results.filter { $0.suite == suite }
    }

    /// The result of `impl` in `caseName` of `suite` at size `n`, if the run measured it.
    public func result(_ suite: String, _ caseName: String, _ impl: String, n: Int) -> BenchResult? {
        results.last { $0.suite == suite && $0.caseName == caseName && $0.impl == impl && $0.n == n }
    }

    /// The command that made a suite's lines, if the run recorded it.
    public func command(of suite: String) -> SuiteRun? {
        suites.last { $0.suite == suite }
    }
}

/// A line of the results that cannot be read, with its number.
public struct ReportError: Error, CustomStringConvertible, Equatable {
    /// The 1-based line number in the results file.
    public var line: Int
    /// What is wrong with it.
    public var message: String

    /// Makes an error for `line`.
    public init(line: Int, _ message: String) {
        self.line = line
        self.message = message
    }

    /// "line N: message".
    public var description: String { "line \(line): \(message)" }
}
