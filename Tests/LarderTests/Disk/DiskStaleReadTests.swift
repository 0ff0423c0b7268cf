import Foundation
import Testing
@testable import Larder

/// `DiskCache.staleRecord(forKey:within:)`, the read behind the hybrid's stale values.
@Suite struct DiskStaleReadTests {
    @Test func theDiskStaleReadLeavesTheRecordAndCountsAMiss() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let disk = try DiskCache(options: testOptions(temporary.url, clock: clock))
        try disk.store(Data("v1".utf8), forKey: "k", expiry: .seconds(60))
        #expect(try disk.staleRecord(forKey: "k", within: 30) == nil)  // live: the ordinary read's
        clock.advance(by: 70)
        let stale = try disk.staleRecord(forKey: "k", within: 30)
        #expect(stale?.data == Data("v1".utf8) && stale?.expirationTime == 1_700_000_060 && stale?.expiry == .seconds(60))
        #expect(try disk.staleRecord(forKey: "k", within: 10) == nil)  // expired 10 s ago: not less than 10
        #expect(try disk.staleRecord(forKey: "absent", within: 30) == nil)
        #expect(disk.statistics.misses == 1 && disk.statistics.hits == 0 && disk.count == 1)
        // The ordinary read still treats it as expired, and removes it.
        #expect(try disk.record(forKey: "k") == nil)
        #expect(try disk.staleRecord(forKey: "k", within: 30) == nil && disk.count == 0)
    }

    @Test func aLockedRecordIsNeverStale() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let disk = try DiskCache(options: testOptions(temporary.url, clock: clock))
        try disk.store(Data("v1".utf8), forKey: "k", expiry: .seconds(10), locked: true)
        clock.advance(by: 20)
        #expect(try disk.staleRecord(forKey: "k", within: 1_000) == nil)
        #expect(try disk.value(forKey: "k") == Data("v1".utf8))
        try disk.unlock(forKeys: ["k"])
        #expect(try disk.staleRecord(forKey: "k", within: 1_000)?.data == Data("v1".utf8))
    }
}
