/// A figure the project holds itself to: a bound on one result, alone or against another result
/// of the same run. The page and any check read these, so each bound is written once.
public struct Target: Sendable {
    /// The result a target compares against: fields left `nil` are the target's own.
    public struct Reference: Sendable {
        /// The reference's case, if not the target's.
        public var caseName: String? = nil
        /// The reference's implementation, if not the target's.
        public var impl: String? = nil
        /// The reference's size, if not the target's.
        public var n: Int? = nil
    }

    /// What is bounded.
    public enum Measure: Sendable {
        /// The time per operation over the reference's, at most the bound.
        case timeRatio(Reference)
        /// The throughput over the reference's (the reference's time over this one's), at least the bound.
        case throughputRatio(Reference)
        /// A numeric field of the line (`bytes`, `loads`), at most the bound, in `unit`.
        case field(String, unit: String)
        /// The time per operation, at most the bound in nanoseconds.
        case time
    }

    /// The suite of the bounded result.
    public var suite: String
    /// Its case.
    public var caseName: String
    /// Its implementation.
    public var impl: String
    /// Its size; `nil` for every size the run measured.
    public var n: Int?
    /// What is bounded.
    public var measure: Measure
    /// The bound.
    public var bound: Double

    /// The targets, by suite. A remote target's reference (`by-hand`, `redis-benchmark`) is the
    /// work a user would write without Larder, run by the suite beside it.
    public static let all: [Target] = [
        Target(
            suite: "memory", caseName: "get-hit", impl: "larder-recommended", n: 100_000,
            measure: .timeRatio(.init(impl: "mutex-dictionary")), bound: 1.1),
        Target(
            suite: "memory", caseName: "set-evict", impl: "larder-recommended", measure: .timeRatio(.init(impl: "mutex-dictionary")),
            bound: 2),
        Target(suite: "disk", caseName: "load-4k", impl: "larder", measure: .timeRatio(.init(impl: "posix-floor")), bound: 1.25),
        Target(suite: "disk", caseName: "load-4k-zipf", impl: "larder", measure: .timeRatio(.init(impl: "sqlite")), bound: 0.6),
        Target(suite: "disk", caseName: "load-4k", impl: "larder", measure: .timeRatio(.init(impl: "foundation-naive")), bound: 0.5),
        Target(suite: "disk", caseName: "load-miss", impl: "larder", measure: .timeRatio(.init(impl: "foundation-naive")), bound: 0.5),
        Target(suite: "disk", caseName: "store-4k", impl: "larder", measure: .timeRatio(.init(impl: "posix-floor")), bound: 1.25),
        Target(suite: "disk", caseName: "load-256k", impl: "larder", measure: .timeRatio(.init(impl: "sqlite")), bound: 1),
        Target(suite: "disk", caseName: "store-256k", impl: "larder", measure: .timeRatio(.init(impl: "posix-floor")), bound: 1.25),
        Target(
            suite: "concurrency", caseName: "mixed-2t", impl: "larder", measure: .throughputRatio(.init(caseName: "mixed-1t")), bound: 1.6),
        // Writer processes sharing one folder against threads in one process, and what sharing
        // costs a writer alone.
        Target(
            suite: "concurrency", caseName: "mixed-2p", impl: "larder", measure: .throughputRatio(.init(caseName: "mixed-2t")), bound: 0.8),
        Target(
            suite: "concurrency", caseName: "mixed-1t", impl: "larder-shared", measure: .throughputRatio(.init(impl: "larder")),
            bound: 0.95),
        Target(
            suite: "gc", caseName: "prune-1pct", impl: "larder", n: 100_000, measure: .timeRatio(.init(impl: "directory-scan")), bound: 0.02
        ),
        Target(suite: "gc", caseName: "prune-1pct", impl: "larder", n: 100_000, measure: .timeRatio(.init(n: 10_000)), bound: 12),
        Target(suite: "open", caseName: "first-load", impl: "larder-snapshot", n: 100_000, measure: .time, bound: 10_000_000),
        Target(suite: "open", caseName: "first-load", impl: "larder-no-snapshot", n: 100_000, measure: .time, bound: 10_000_000),
        Target(
            suite: "open", caseName: "index-ready", impl: "larder-snapshot", n: 100_000,
            measure: .timeRatio(.init(impl: "larder-no-snapshot")), bound: 0.1),
        Target(
            suite: "open", caseName: "index-memory", impl: "larder-snapshot", n: 100_000, measure: .field("bytes", unit: "B a record"),
            bound: 150),
        Target(
            suite: "open", caseName: "index-memory", impl: "larder-no-snapshot", n: 100_000, measure: .field("bytes", unit: "B a record"),
            bound: 150),
        Target(
            suite: "open", caseName: "index-memory", impl: "larder-adaptive", n: 100_000, measure: .field("bytes", unit: "B a record"),
            bound: 160),
        Target(
            suite: "open", caseName: "index-memory", impl: "larder-adaptive", n: 1_000_000, measure: .field("bytes", unit: "B a record"),
            bound: 160),
        Target(suite: "hybrid", caseName: "get-hit-memory", impl: "hybrid", measure: .timeRatio(.init(impl: "memory-only")), bound: 1.2),
        Target(
            suite: "hybrid", caseName: "get-hit-memory-typed", impl: "typed", measure: .timeRatio(.init(impl: "memory-only")), bound: 1.3),
        Target(suite: "loadthrough", caseName: "coalesce-1000", impl: "larder", measure: .field("loads", unit: "load a burst"), bound: 1),
        Target(suite: "loadthrough", caseName: "hit", impl: "orload", measure: .timeRatio(.init(impl: "plain")), bound: 1.1),
        Target(suite: "remote", caseName: "get-hit-remote", impl: "larder", measure: .timeRatio(.init(impl: "by-hand")), bound: 1.2),
        Target(suite: "remote", caseName: "get-many-remote", impl: "larder", measure: .timeRatio(.init(impl: "by-hand")), bound: 1.5),
        Target(
            suite: "remote", caseName: "get-throughput", impl: "store", measure: .throughputRatio(.init(impl: "redis-benchmark")),
            bound: 0.9),
    ]

    /// The hit-ratio targets, over every cell (trace and capacity) replayed: `recommended`'s misses
    /// at most this many times LRU's in its worst cell.
    public static let hitRatioWorstVersusLRU = 1.02
    /// And the geometric mean over the cells of `recommended`'s misses over the best online
    /// policy's (`expected.csv`, else the reference simulators) at most this.
    public static let hitRatioMeanVersusBest = 1.03

    /// The disk tier's targets over the cells of `hitratio --sized`: the geometric mean of the
    /// recommended policy's object misses over LRU's at most this,
    public static let sizedObjectsVersusLRU = 0.88
    /// of its byte misses over LRU's at most this,
    public static let sizedBytesVersusLRU = 0.90
    /// and in no cell either above LRU's times this.
    public static let sizedWorstVersusLRU = 1.01
}

/// A target checked against one result of a run.
public struct Verdict: Sendable {
    /// The target.
    public var target: Target
    /// The result it bounds.
    public var result: BenchResult
    /// The measured value in the target's terms (a ratio, a field, nanoseconds).
    public var value: Double
    /// Whether the value is within the bound.
    public var isMet: Bool
    /// The bound in words: "≤ 1.25 × posix-floor".
    public var requirement: String
    /// The value in words: "1.19 ×".
    public var measured: String
}

extension Target {
    /// The target checked against every result of `run` it applies to whose reference the run
    /// also measured (none if the run lacks either).
    public func verdicts(in run: BenchRun) -> [Verdict] {
        run.results(of: suite).compactMap { result in
            guard result.caseName == caseName, result.impl == impl, n == nil || result.n == n else { return nil }
            return verdict(for: result, in: run)
        }
    }

    private func verdict(for result: BenchResult, in run: BenchRun) -> Verdict? {
        switch measure {
        case .timeRatio(let reference), .throughputRatio(let reference):
            guard
                let other = run.result(suite, reference.caseName ?? caseName, reference.impl ?? impl, n: reference.n ?? result.n),
                other.nanosecondsPerOperation > 0, result.nanosecondsPerOperation > 0
            else { return nil }
            let label = Self.label(reference)
            if case .throughputRatio = measure {
                let value = other.nanosecondsPerOperation / result.nanosecondsPerOperation
                return Verdict(
                    target: self, result: result, value: value, isMet: value >= bound,
                    requirement: "throughput ≥ \(Format.ratio(bound)) \(label)", measured: Format.ratio(value, beside: bound))
            }
            let value = result.nanosecondsPerOperation / other.nanosecondsPerOperation
            return Verdict(
                target: self, result: result, value: value, isMet: value <= bound, requirement: "≤ \(Format.ratio(bound)) \(label)",
                measured: Format.ratio(value, beside: bound))
        case .field(let name, let unit):
            guard let value = name == "bytes" ? Double(result.bytes) : result.numbers[name] else { return nil }
            return Verdict(
                target: self, result: result, value: value, isMet: value <= bound, requirement: "≤ \(Format.count(bound)) \(unit)",
                measured: "\(Format.count(value)) \(unit)")
        case .time:
            let value = result.nanosecondsPerOperation
            return Verdict(
                target: self, result: result, value: value, isMet: value <= bound, requirement: "≤ \(Format.time(bound))",
                measured: Format.time(value))
        }
    }

    /// "posix-floor", "mixed-1t", "at n = 10,000": what a ratio is taken against.
    static func label(_ reference: Reference) -> String {
        var parts: [String] = []
        if let caseName = reference.caseName { parts.append(caseName) }
        if let impl = reference.impl { parts.append(impl) }
        if let n = reference.n { parts.append("at n = \(Format.count(Double(n)))") }
        return parts.joined(separator: " ")
    }
}
