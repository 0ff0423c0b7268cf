import Foundation
import Larder
import Synchronization
import Testing
@testable import LarderCLI

/// Shell-like loops of changing commands on one folder at once, on the same keys, each command
/// its own `larder` process started with `--wait 0`: the commands share the folder as writers,
/// so none is refused (exit 3), every `cat` gives bytes some loop stored under its key, and the
/// folder is sound after (`verify` clean, `stats` counting exactly the record files).
@Suite struct SharedWriterCommandTests {
    /// The keys every loop works on.
    static let keys = (0 ..< 6).map { "shared-\($0)" }

    /// What one loop did and saw.
    struct LoopLog: Sendable {
        /// Every (key, version) the loop stored.
        var stored: [String: Set<UInt64>] = [:]
        /// Every (key, version) a `cat` of the loop read.
        var read: [(key: String, version: UInt64)] = []
        /// Commands refused with exit 3.
        var refused: [String] = []
        /// Other unexpected outcomes.
        var problems: [String] = []
    }

    /// One loop: `steps` seeded commands on the shared keys (stores, removals, locks, unlocks,
    /// collections with and without a size limit, reads), each run as its own process.
    static func loop(_ loop: Int, steps: Int, dir: String, seed: UInt64) throws -> LoopLog {
        var random = SplitMix64(seed: seed &+ UInt64(loop) &* 0x9E37_79B9)
        var log = LoopLog()
        for step in 0 ..< steps {
            let key = keys[Int.random(in: 0 ..< keys.count, using: &random)]
            var input = Data()
            let arguments: [String]
            // The exit codes the command may end with, whatever the other loops do meanwhile.
            let allowed: Set<Int32>
            switch Int.random(in: 0 ..< 20, using: &random) {
            case 0 ..< 7:
                let version = UInt64(loop) << 32 | UInt64(step + 1)
                input = Data(StampedPayload.make(key: key, version: version, length: Int.random(in: 40 ..< 6000, using: &random)))
                log.stored[key, default: []].insert(version)
                let locked = Int.random(in: 0 ..< 5, using: &random) == 0
                arguments = ["put", key] + (locked ? ["--locked"] : [])
                allowed = [0]
            case 7 ..< 10:
                arguments = ["rm", key]
                allowed = [0, 1]
            case 10 ..< 12:
                arguments = ["lock", key]
                allowed = [0, 1]
            case 12 ..< 14:
                arguments = ["unlock", key]
                allowed = [0, 1]
            case 14:
                arguments = ["gc", "--quiet"]
                allowed = [0]
            case 15:
                arguments = ["gc", "--quiet", "--size-limit", "16384"]
                allowed = [0]
            default:
                arguments = ["cat", key]
                allowed = [0, 1]
            }
            // `cat` reads without a lock, and takes no `--wait`.
            let wait = arguments[0] == "cat" ? [] : ["--wait", "0"]
            let outcome = try ParallelWriterTests.run(arguments + ["--dir", dir] + wait, input: input)
            let command = "loop \(loop) step \(step): \(arguments.joined(separator: " "))"
            if outcome.code == ExitCode.cacheError.rawValue {
                log.refused.append(command)
            } else if !allowed.contains(outcome.code) {
                log.problems.append("\(command) exited \(outcome.code)")
            } else if arguments[0] == "cat", outcome.code == 0 {
                guard let version = StampedPayload.version(of: outcome.stdout, key: key) else {
                    log.problems.append("\(command): bytes that are no store of '\(key)'")
                    continue
                }
                log.read.append((key, version))
            }
        }
        return log
    }

    /// The record files in `dir` (every regular file outside Larder's hidden ones): how many,
    /// and their bytes.
    static func recordFiles(in dir: String) -> (count: Int, bytes: Int) {
        var count = 0
        var bytes = 0
        let root = URL(fileURLWithPath: dir, isDirectory: true)
        let walker = FileManager.default.enumerator(
            at: root, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey], options: [.skipsHiddenFiles])
        while let url = walker?.nextObject() as? URL {
            let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
            guard values?.isRegularFile == true else { continue }
            count += 1
            bytes += values?.fileSize ?? 0
        }
        return (count, bytes)
    }

    @Test(arguments: [2, 4])
    func loopsOfChangingCommandsShareOneFolder(loops: Int) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        // The cache exists before the loops start: `rm`, `lock`, `unlock` and `gc` refuse a
        // missing folder, whatever the other loops do.
        #expect(larder(["put", "--dir", dir, "seed"], input: Data("seed".utf8)).code == 0)
        let steps = 300 / loops
        let results = Mutex<[Int: Result<LoopLog, any Error>]>([:])
        let group = DispatchGroup()
        for index in 0 ..< loops {
            group.enter()
            Thread {
                let result = Result { try Self.loop(index, steps: steps, dir: dir, seed: 47) }
                results.withLock { $0[index] = result }
                group.leave()
            }.start()
        }
        group.wait()
        var logs: [LoopLog] = []
        for index in 0 ..< loops { logs.append(try #require(results.withLock { $0[index] }).get()) }

        let refused = logs.flatMap(\.refused)
        #expect(refused.count == 0, "\(refused.count) commands refused:\n\(refused.prefix(10).joined(separator: "\n"))")
        let problems = logs.flatMap(\.problems)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        var stored: [String: Set<UInt64>] = [:]
        for log in logs { stored.merge(log.stored) { $0.union($1) } }
        for read in logs.flatMap(\.read) {
            #expect(stored[read.key]?.contains(read.version) == true, "'\(read.key)' read version \(read.version), which no loop stored")
        }

        let verify = try ParallelWriterTests.run(["verify", "--dir", dir])
        #expect(verify.code == 0, "verify: \(String(decoding: verify.stdout, as: UTF8.self))")
        let listing = try #require(
            try parseJSON(String(decoding: try ParallelWriterTests.run(["ls", "--json", "--dir", dir]).stdout, as: UTF8.self))
                as? [[String: Any]])
        for key in listing.compactMap({ $0["key"] as? String }) where key != "seed" {
            let payload = try ParallelWriterTests.run(["cat", key, "--dir", dir])
            let version = StampedPayload.version(of: payload.stdout, key: key)
            #expect(payload.code == 0 && version.map { stored[key]?.contains($0) == true } == true, "\(key): bytes no loop stored")
        }
        let stats = try #require(
            try parseJSON(String(decoding: try ParallelWriterTests.run(["stats", "--json", "--dir", dir]).stdout, as: UTF8.self))
                as? [String: Any])
        let files = Self.recordFiles(in: dir)
        #expect(stats["records"] as? Int == files.count, "stats counts \(stats["records"] ?? "nothing"), the folder holds \(files.count)")
        #expect(stats["totalSize"] as? Int == files.bytes, "stats sums \(stats["totalSize"] ?? "nothing"), the files \(files.bytes)")
        #expect(stats["corrupt"] as? Int == 0 && listing.count == files.count)
    }
}
