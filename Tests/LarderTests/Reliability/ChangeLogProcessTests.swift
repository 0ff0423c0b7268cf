import Foundation
import Testing
@testable import Larder

/// Writer processes appending to one folder's change log at once, through `larder-stress changes`.
@Suite struct ChangeLogProcessTests {
    /// Every record of the log's generation, from the first.
    static func allRecords(_ dir: TemporaryDirectory) throws -> [FolderChangeLog.Record] {
        let log = try FolderChangeLogTests.open(dir)
        let end = try FolderChangeLogTests.follow(log)
        let start = FolderChangeLog.Cursor(generation: end.generation, sequence: 0, offset: FolderChangeLog.headerSize)
        guard case .records(let records, let cursor) = log.changes(after: start) else {
            Issue.record("the log did not read back whole")
            return []
        }
        #expect(cursor == end)
        return records
    }

    /// Checks that the records are numbered 1 ... n with no gap, and that each worker's appends
    /// are all there, once each, in the order it made them.
    static func checkEveryAppendOnceInOrder(_ records: [FolderChangeLog.Record], workers: Range<Int>, count: Int) {
        #expect(records.map(\.sequence) == (0 ..< records.count).map { UInt64($0 + 1) })
        var seen: [Int: [Int]] = [:]
        for record in records {
            let fields = String(decoding: record.payload, as: UTF8.self).split(separator: "\t")
            guard fields.count == 2, let worker = Int(fields[0]), let i = Int(fields[1]) else {
                Issue.record("an unexpected record: \(String(decoding: record.payload, as: UTF8.self))")
                continue
            }
            seen[worker, default: []].append(i)
        }
        for worker in workers { #expect(seen[worker] == Array(0 ..< count), "worker \(worker)") }
        #expect(Set(seen.keys) == Set(workers))
    }

    @Test(arguments: [2, 4])
    func writersAppendingAtOnceLoseNothingAndInterleaveWhole(workers: Int) throws {
        let dir = TemporaryDirectory("larder-changes-mp")
        defer { dir.remove() }
        let count = 300
        let helpers = try (0 ..< workers).map { w in
            try HelperProcess("larder-stress", ["changes", "--dir", dir.path, "--worker", "\(w)", "--count", "\(count)"])
        }
        defer { for helper in helpers { helper.kill() } }
        for helper in helpers {
            #expect(helper.waitForExit() == 0)
            #expect(helper.readLine() == "done \(helper.pid)")
        }
        let records = try Self.allRecords(dir)
        #expect(records.count == workers * count)
        Self.checkEveryAppendOnceInOrder(records, workers: 0 ..< workers, count: count)
    }

    /// A writer killed while it holds the change lock, its change half made: the others wait for
    /// it, not past it, and go on once it is gone; its change is not in the log.
    @Test func aWriterKilledHoldingTheChangeLockBlocksNobodyAfterwards() throws {
        let dir = TemporaryDirectory("larder-changes-mp")
        defer { dir.remove() }
        let holder = try HelperProcess("larder-stress", ["changes", "--dir", dir.path, "--worker", "9", "--hold", "1", "--count", "0"])
        defer { holder.kill() }
        #expect(holder.waitUntilReady() == holder.pid)
        let log = try FolderChangeLogTests.open(dir)
        #expect(log.isChangeLockHeldElsewhere())
        let count = 100
        let helpers = try (0 ..< 3).map { w in
            try HelperProcess("larder-stress", ["changes", "--dir", dir.path, "--worker", "\(w)", "--count", "\(count)"])
        }
        defer { for helper in helpers { helper.kill() } }
        holder.kill()
        #expect(holder.wasKilled)
        for helper in helpers { #expect(helper.waitForExit() == 0) }
        #expect(!log.isChangeLockHeldElsewhere())
        let records = try Self.allRecords(dir)
        #expect(records.count == 3 * count)
        Self.checkEveryAppendOnceInOrder(records, workers: 0 ..< 3, count: count)
    }
}
