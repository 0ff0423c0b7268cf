#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import Synchronization
import Testing
@testable import LarderCLI

/// Several `larder` processes changing one folder at once: each changing command waits its turn
/// for the folder (`--wait`) instead of failing with exit 3, and what every process did is there
/// afterwards, byte for byte.
@Suite struct ParallelWriterTests {
    /// The outcome of one `larder` process.
    struct Outcome: Sendable {
        var code: Int32
        var stdout: Data
        var wasKilled: Bool
    }

    /// Runs the `larder` executable with `arguments`, `input` on its standard input; with
    /// `killed`, kills it with SIGKILL as soon as it runs (it may be anywhere by then: starting,
    /// waiting for the folder, holding it, or done).
    static func run(_ arguments: [String], input: Data = Data(), killed: Bool = false) throws -> Outcome {
        let process = Process()
        process.executableURL = HelperProcess.executable("larder")
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        // Expected refusals ("no record for key") say so on standard error; the exit code is checked.
        process.standardError = FileHandle.nullDevice
        try process.run()
        if killed { kill(process.processIdentifier, SIGKILL) }
        // A process killed before it read its input closes the pipe: the write then fails (EPIPE,
        // with SIGPIPE ignored), which is fine.
        signal(SIGPIPE, SIG_IGN)
        try? stdin.fileHandleForWriting.write(contentsOf: input)
        try? stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            code: process.terminationStatus, stdout: output,
            wasKilled: process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
    }

    /// What one worker's keys hold: the payload and lock count of each key present.
    struct Model {
        var records: [String: (payload: Data, locks: Int)] = [:]
    }

    /// One worker: `steps` seeded commands on its own keys (stores, removals, locks, unlocks,
    /// collections), each run as its own process, each exit code checked against the model.
    static func work(worker: Int, steps: Int, dir: String, seed: UInt64) throws -> (Model, [String]) {
        var random = SplitMix64(seed: seed &+ UInt64(worker))
        var model = Model()
        var problems: [String] = []
        let keys = (0 ..< 4).map { "w\(worker)-k\($0)" }
        for step in 0 ..< steps {
            let key = keys[Int.random(in: 0 ..< keys.count, using: &random)]
            let present = model.records[key]
            let expected: Int32
            let arguments: [String]
            var input = Data()
            switch Int.random(in: 0 ..< 10, using: &random) {
            case 0 ..< 4:
                let locked = Int.random(in: 0 ..< 4, using: &random) == 0
                input = Data(StampedPayload.make(key: key, version: UInt64(step + 1), length: Int.random(in: 40 ..< 3000, using: &random)))
                arguments = ["put", key] + (locked ? ["--locked"] : [])
                model.records[key] = (input, locked ? 1 : 0)
                expected = 0
            case 4 ..< 6:
                arguments = ["rm", key]
                model.records[key] = nil
                expected = present == nil ? 1 : 0
            case 6 ..< 8:
                arguments = ["lock", key]
                if let present { model.records[key] = (present.payload, present.locks + 1) }
                expected = present == nil ? 1 : 0
            case 8:
                arguments = ["unlock", key]
                if let present, present.locks > 0 { model.records[key] = (present.payload, present.locks - 1) }
                expected = (present?.locks ?? 0) > 0 ? 0 : 1
            default:
                arguments = ["gc", "--quiet"]
                expected = 0
            }
            let outcome = try run(arguments + ["--dir", dir, "--wait", "600"], input: input)
            if outcome.code != expected {
                problems.append("worker \(worker) step \(step): \(arguments) exited \(outcome.code), not \(expected)")
            }
        }
        return (model, problems)
    }

    /// Runs `workers` workers at once (each on its own thread, each command its own process)
    /// and, when `killing`, one more thread that starts `larder put` processes and kills them.
    static func runWorkers(_ workers: Int, steps: Int, dir: String, seed: UInt64, killing: Bool = false) throws -> [Model] {
        // The cache exists before the first command: `rm`, `lock`, `unlock` and `gc` refuse a
        // missing folder (exit 3) whatever other processes do.
        try DiskCache(options: DiskCacheOptions(directory: URL(fileURLWithPath: dir, isDirectory: true))).close()
        let results = Mutex<[Int: Result<(Model, [String]), any Error>]>([:])
        let group = DispatchGroup()
        for worker in 0 ..< workers {
            group.enter()
            Thread {
                let result = Result { try work(worker: worker, steps: steps, dir: dir, seed: seed) }
                results.withLock { $0[worker] = result }
                group.leave()
            }.start()
        }
        if killing {
            group.enter()
            Thread {
                var random = SplitMix64(seed: seed ^ 0x6B69_6C6C)
                for step in 0 ..< steps {
                    let payload = Data(StampedPayload.make(key: "victim", version: UInt64(step + 1), length: 500))
                    _ = try? run(
                        ["put", "victim", "--dir", dir, "--wait", "600"], input: payload,
                        killed: Int.random(in: 0 ..< 3, using: &random) != 0)
                }
                group.leave()
            }.start()
        }
        group.wait()
        var models: [Model] = []
        for worker in 0 ..< workers {
            let (model, problems) = try #require(results.withLock { $0[worker] }).get()
            #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
            models.append(model)
        }
        return models
    }

    /// Checks the folder against the workers' models: every record present with its bytes and
    /// lock count, nothing else but `extra` keys, `verify` clean, `stats` counting them all.
    static func checkFolder(_ dir: String, models: [Model], extra: Set<String> = []) throws {
        let verify = try run(["verify", "--dir", dir])
        #expect(verify.code == 0, "verify: \(String(decoding: verify.stdout, as: UTF8.self))")
        let listing = try #require(
            try parseJSON(String(decoding: try run(["ls", "--json", "--dir", dir]).stdout, as: UTF8.self)) as? [[String: Any]])
        var locks: [String: Int] = [:]
        for entry in listing {
            if let key = entry["key"] as? String { locks[key] = entry["lockCount"] as? Int ?? -1 }
        }
        var expectedKeys = extra
        for model in models {
            for (key, record) in model.records {
                expectedKeys.insert(key)
                let payload = try run(["cat", key, "--dir", dir])
                #expect(payload.code == 0 && payload.stdout == record.payload, "\(key): wrong or missing bytes")
                #expect(locks[key] == record.locks, "\(key): lock count \(locks[key] ?? -1), not \(record.locks)")
            }
        }
        #expect(Set(locks.keys).subtracting(extra) == expectedKeys.subtracting(extra), "the folder's keys are the models'")
        let stats = try #require(
            try parseJSON(String(decoding: try run(["stats", "--json", "--dir", dir]).stdout, as: UTF8.self)) as? [String: Any])
        #expect(stats["records"] as? Int == locks.count && stats["corrupt"] as? Int == 0)
    }

    @Test(arguments: [2, 4])
    func writersTakeTurnsAndNoneIsRefused(workers: Int) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        let models = try Self.runWorkers(workers, steps: 24, dir: dir, seed: 47)
        try Self.checkFolder(dir, models: models)
    }

    @Test func aWriterKilledAtRandomNeverBlocksTheOthers() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        let models = try Self.runWorkers(3, steps: 20, dir: dir, seed: 4_747, killing: true)
        // The victim's record, if any, is one of its stores, whole.
        let victim = try Self.run(["cat", "victim", "--dir", dir])
        if victim.code == 0 { #expect(StampedPayload.version(of: victim.stdout, key: "victim") != nil, "victim: wrong bytes") }
        try Self.checkFolder(dir, models: models, extra: ["victim"])
    }

    @Test func aHolderPastTheWaitIsNamedWithExitThree() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        // A writer that holds the folder alone, as an application may open it.
        var options = DiskCacheOptions(directory: temp.url.appendingPathComponent("c"))
        options.sharesFolderWithWriters = false
        let writer = try DiskCache(options: options)
        defer { writer.close() }
        let result = larder(["put", "--dir", temp.path("c"), "--wait", "0.05", "k"], input: Data("x".utf8))
        #expect(result.code == 3)
        #expect(result.stderr.contains("in use by process \(getpid()), which did not let go of it within the wait"), "\(result.stderr)")
        #expect(larder(["put", "--dir", temp.path("c"), "--wait", "-1", "k"], input: Data("x".utf8)).code == ExitCode.usage.rawValue)
        #expect(CacheContext.defaultWriterWait == 30)
    }
}
