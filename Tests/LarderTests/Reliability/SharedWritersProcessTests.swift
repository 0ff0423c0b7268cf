import Foundation
import Testing
@testable import Larder

/// Writer processes on one folder at once (`sharesFolderWithWriters`), through `larder-stress
/// shared`, beside a writer in this process that stays open throughout.
@Suite struct SharedWritersProcessTests {
    static let sizeLimit = 1 << 20

    static func openShared(_ dir: TemporaryDirectory) throws -> DiskCache {
        var options = DiskCacheOptions(directory: dir.url)
        options.durability = .fsync
        options.sizeLimit = sizeLimit
        options.sharesFolderWithWriters = true
        return try DiskCache(options: options)
    }

    static func worker(_ dir: TemporaryDirectory, _ w: Int, count: Int, log: String) throws -> HelperProcess {
        try HelperProcess(
            "larder-stress",
            ["shared", "--dir", dir.path, "--worker", "\(w)", "--count", "\(count)", "--size-limit", "\(sizeLimit)", "--fsync-log", log])
    }

    /// The durable stores the logs promise: key → version.
    static func promised(_ logs: [String]) -> [String: UInt64] {
        var promised: [String: UInt64] = [:]
        for log in logs {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: "\t")
                if fields.count == 3, fields[0] == "D", let version = UInt64(fields[2]) { promised[String(fields[1])] = version }
            }
        }
        return promised
    }

    /// Checks `cache` against the folder: every promised record present, locked, with its
    /// bytes; every listed record's bytes right; the count and totals the files'; the size limit kept.
    static func checkFolder(_ cache: DiskCache, _ dir: TemporaryDirectory, promised: [String: UInt64]) throws {
        #expect(!promised.isEmpty)
        for (key, version) in promised {
            let record = try cache.record(forKey: key)
            #expect(record.flatMap { StampedPayload.version(of: $0.data, key: key) } == version, "\(key)")
            #expect(record?.lockCount == 1, "\(key)")
        }
        let keys = try cache.keys()
        for key in keys {
            // A record read is a record written for its key, whole.
            if let record = try cache.record(forKey: key) { #expect(StampedPayload.version(of: record.data, key: key) != nil, "\(key)") }
        }
        _ = try cache.collectGarbage()
        #expect(cache.count == recordFiles(in: dir.url).count)
        #expect(cache.totalSize <= sizeLimit)
        // Another writer opened now, building its index from the folder, agrees.
        let fresh = try openShared(dir)
        defer { fresh.close() }
        #expect(fresh.count == cache.count)
        #expect(fresh.totalSize == cache.totalSize)
        #expect(fresh.lockedSize == cache.lockedSize)
    }

    @Test(arguments: [2, 4])
    func writersAtOnceAreNeverRefusedAndLoseNothingPromised(workers: Int) throws {
        let dir = TemporaryDirectory("larder-shared-mp")
        defer { dir.remove() }
        let cache = try Self.openShared(dir)
        defer { cache.close() }
        // Known to this writer before the others begin: its index answers a miss without the disk
        // unless it replays their stores.
        #expect(try cache.keys().isEmpty)
        let logs = (0 ..< workers).map { dir.path + "-log\($0)" }
        defer { for log in logs { try? FileManager.default.removeItem(atPath: log) } }
        let helpers = try (0 ..< workers).map { w in try Self.worker(dir, w, count: 400, log: logs[w]) }
        defer { for helper in helpers { helper.kill() } }
        for helper in helpers {
            #expect(helper.waitForExit() == 0)
        }
        try Self.checkFolder(cache, dir, promised: Self.promised(logs))
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func aWriterKilledAtRandomBlocksNobodyAndLosesNothingPromised(seed: UInt64) throws {
        let dir = TemporaryDirectory("larder-shared-mp")
        defer { dir.remove() }
        let cache = try Self.openShared(dir)
        defer { cache.close() }
        let logs = (0 ..< 3).map { dir.path + "-log\($0)" }
        defer { for log in logs { try? FileManager.default.removeItem(atPath: log) } }
        let helpers = try (0 ..< 3).map { w in try Self.worker(dir, w, count: 600, log: logs[w]) }
        defer { for helper in helpers { helper.kill() } }
        // Killed after a seeded number of its operations, wherever it is then.
        var random = SplitMix64(seed: seed)
        let killAt = 50 * Int(1 + random.next() % 8)
        let victim = helpers[0]
        #expect(victim.waitUntilReady() == victim.pid)
        while let line = victim.readLine(), line != "at \(killAt)" {}
        victim.kill()
        #expect(victim.wasKilled)
        for helper in helpers.dropFirst() {
            #expect(helper.waitForExit() == 0)
        }
        try Self.checkFolder(cache, dir, promised: Self.promised(logs))
    }

    /// One change by another process (`larder-stress shared-change`), awaited.
    static func change(_ dir: TemporaryDirectory, _ change: String, _ key: String, text: String? = nil) throws {
        var arguments = ["shared-change", "--dir", dir.path, "--key", key, "--change", change]
        if let text { arguments += ["--text", text] }
        let helper = try HelperProcess("larder-stress", arguments)
        #expect(helper.waitForExit() == 0, "\(change) \(key)")
    }

    @Test func anotherProcessesChangesReachAHybridsMemoryCopies() throws {
        let dir = TemporaryDirectory("larder-shared-hybrid")
        defer { dir.remove() }
        var options = HybridCacheOptions(disk: DiskCacheOptions(directory: dir.url))
        options.disk.sharesFolderWithWriters = true
        options.pressureCenter = quietPressure.center
        let cache = try HybridCache(options: options)
        defer { cache.close() }
        try cache.store(Data("mine".utf8), forKey: "x")
        #expect(cache.memory.peek("x")?.value == Data("mine".utf8))
        try Self.change(dir, "store", "x", text: "theirs")
        #expect(try cache.value(forKey: "x") == Data("theirs".utf8))
        try Self.change(dir, "remove", "x")
        #expect(try cache.value(forKey: "x", from: .memory) == nil)
        #expect(try cache.value(forKey: "x") == nil)
        try Self.change(dir, "store", "y", text: "kept")
        #expect(try cache.value(forKey: "y") == Data("kept".utf8))
        #expect(try #require(cache.memory.peek("y")?.deadline) < .infinity)
        // A lock in the other process: this one's copy, which held the record's expiry, goes,
        // and the next read keeps the record without one, as the disk does.
        try Self.change(dir, "lock", "y")
        #expect(try cache.value(forKey: "y") == Data("kept".utf8))
        #expect(cache.memory.peek("y")?.deadline == .infinity)
        #expect(try cache.disk.record(forKey: "y")?.lockCount == 1)
    }
}
