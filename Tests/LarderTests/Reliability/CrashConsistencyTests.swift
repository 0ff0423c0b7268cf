#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import Testing
@testable import Larder

/// Kills a `larder-stress churn` writer with SIGKILL at random moments, then opens its directory
/// and checks what survived. `LARDER_CRASH_ITERATIONS` (default 200) sets the number of kills,
/// `LARDER_CRASH_SEED` the seed that picks the moments.
@Suite(.serialized) struct CrashConsistencyTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["LARDER_CRASH_ITERATIONS"] ?? "") ?? 200
    static let seed = UInt64(ProcessInfo.processInfo.environment["LARDER_CRASH_SEED"] ?? "") ?? 0x5EED_C0DE
    static let churnKeys = 24

    /// What the fsync'd log promises: the newest durable version per key, and the keys whose last
    /// line says they are pinned (locked), with the version locked.
    struct Promises {
        var durable: [String: UInt64] = [:]
        var pinned: [String: UInt64] = [:]

        init(log path: String) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
            // A line without its newline was cut off by the kill; it promised nothing.
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            lines.removeLast()
            for line in lines {
                let fields = line.split(separator: "\t").map(String.init)
                switch fields.first {
                case "D": durable[fields[1]] = max(durable[fields[1]] ?? 0, UInt64(fields[2])!)
                case "P": pinned[fields[1]] = UInt64(fields[2])!
                case "U": pinned[fields[1]] = nil
                default: Issue.record("unreadable log line \(line)")
                }
            }
        }
    }

    @Test func killedWriterLeavesConsistentDirectory() throws {
        let dir = TemporaryDirectory("larder-crash")
        defer { dir.remove() }
        let cacheURL = dir.appending("cache")
        let logPath = dir.path + "/fsync.log"
        var random = SplitMix64(seed: Self.seed)
        var kills = 0
        var killedBeforeReady = 0
        var recordsChecked = 0
        var durableChecked = 0
        var pinnedChecked = 0
        var failures = 0
        let corruptEvents = LarderMutex<[CacheEvent]>([])

        for iteration in 0 ..< Self.iterations where failures < 5 {
            let helper = try HelperProcess(
                "larder-stress",
                [
                    "churn", "--dir", cacheURL.path, "--seed", "\(iteration + 1)", "--keys", "\(Self.churnKeys)",
                    "--fsync-log", logPath,
                ])
            // Mostly kill while it works; one time in eight, while it is still opening.
            if random.next() % 8 == 0 {
                usleep(UInt32(random.next() % 15_000))
                killedBeforeReady += 1
            } else {
                #expect(helper.waitUntilReady() == helper.pid)
                usleep(UInt32(5_000 + random.next() % 35_000))
            }
            helper.kill()
            guard helper.wasKilled else {
                Issue.record(
                    "iteration \(iteration): the helper exited by itself with status \(helper.process.terminationStatus) (3: wrong bytes, 4: a failed operation)"
                )
                failures += 1
                continue
            }
            kills += 1

            var options = DiskCacheOptions(directory: cacheURL)
            options.eventHandler = { event in
                if case .corruptRecordRemoved = event { corruptEvents.withLock { $0.append(event) } }
            }
            let cache: DiskCache
            do {
                cache = try DiskCache(options: options)
            } catch {
                // Killed before the metadata existed (and so before any record): nothing to check.
                if error.code == .keyEncodingMismatch && !FileManager.default.fileExists(atPath: cacheURL.path + "/.larder") { continue }
                throw error
            }
            let before = failures
            func check(_ condition: Bool, _ message: @autoclosure () -> String) {
                if !condition {
                    Issue.record("iteration \(iteration): \(message())")
                    failures += 1
                }
            }
            check(
                DiskAudit.strayFiles(in: cache.layout.root).isEmpty, "files left after open: \(DiskAudit.strayFiles(in: cache.layout.root))"
            )
            _ = cache.count  // waits for the index
            // Before any load, which would refresh the entries it reads.
            let mismatches = DiskAudit.indexMismatches(cache)
            check(mismatches.isEmpty, "index and disk disagree after open: \(mismatches)")
            let promises = Promises(log: logPath)
            let keys = (0 ..< Self.churnKeys).map { "c\($0)" } + (0 ..< 16).map { "d\($0)" } + (0 ..< 16).map { "p\($0)" }
            for key in keys {
                let record = try cache.record(forKey: key)
                var version: UInt64?
                if let record {
                    recordsChecked += 1
                    version = StampedPayload.version(of: record.data, key: key)
                    check(version != nil, "\(key): bytes that were never stored under it (\(record.data.count) bytes)")
                }
                if let promised = promises.durable[key] {
                    durableChecked += 1
                    check(
                        version.map { $0 >= promised } == true,
                        "\(key): durable version \(promised) lost (found \(version.map(String.init) ?? "nothing"))")
                }
                if let promised = promises.pinned[key] {
                    pinnedChecked += 1
                    check(version == promised, "\(key): pinned version \(promised) lost (found \(version.map(String.init) ?? "nothing"))")
                    check((record?.lockCount ?? 0) > 0, "\(key): pinned but unlocked")
                }
            }
            cache.close()
            if failures > before { Issue.record("replay: LARDER_CRASH_SEED=\(Self.seed), iteration \(iteration)") }
        }
        #expect(corruptEvents.withLock { $0 }.isEmpty, "corrupt records after a crash: \(corruptEvents.withLock { $0 }.prefix(5))")
        #expect(kills >= min(Self.iterations, 200) || failures > 0)
        #expect(durableChecked > 0 && pinnedChecked > 0, "the log promised nothing to check")
        print(
            "crash consistency: \(kills) kills (\(killedBeforeReady) during open), \(recordsChecked) records verified, \(durableChecked) durable and \(pinnedChecked) pinned promises checked"
        )
    }
}
