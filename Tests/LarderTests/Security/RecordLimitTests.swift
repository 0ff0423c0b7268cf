import Foundation
import Testing
@testable import Larder

/// Attacks 8 and 9: a header ttl of `UInt64.max` and a store with ttl 1e30 trapped; a 4 GiB
/// sparse record made a read allocate 4 GiB. Header fields are clamped, the store's ttl is
/// clamped, and a record above `maximumRecordSize` (or sparse) is reported, not read.
@Suite struct RecordLimitTests {
    @Test func outOfRangeHeaderFieldsAreClamped() throws {
        let fixture = HostileFixture("larder-limits")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data("seed".utf8), forKey: "forever")
        cache.close()
        var header = RecordHeader(refCount: 0, ttl: .max, updateTimeSec: .max, payloadSizeBytes: 5, lastAccessMilliseconds: .max)
        let path = fixture.recordPath("forever")
        _ = FileManager.default.createFile(atPath: path, contents: Data(header.encoded() + Array("hello".utf8)))
        let decoded = try RecordHeader.decode(header.encoded())
        #expect(decoded.ttl == RecordHeader.maximumTTL)
        #expect(decoded.updateTimeSec == RecordHeader.maximumTimestamp)
        #expect(decoded.lastAccessMilliseconds == RecordHeader.maximumTimestamp * 1000)
        let reopened = try DiskCache(options: fixture.options())
        let record = try #require(try reopened.record(forKey: "forever"))
        #expect(record.data == Data("hello".utf8))
        #expect(record.expiry == .seconds(TimeInterval(RecordHeader.maximumTTL)))
        #expect(try reopened.lock(forKeys: ["forever"]) == ["forever"])
        _ = try reopened.collectGarbage()
        header.ttl = 1
        #expect(try RecordHeader.decode(header.encoded()).ttl == 1)
    }

    @Test(arguments: [1e30, Double(UInt64.max), 4e9, Double(Int.max)])
    func hugeStoreTTLsAreClamped(ttl: Double) throws {
        let fixture = HostileFixture("larder-limits")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data("x".utf8), forKey: "k", expiry: .seconds(ttl))
        #expect(try cache.record(forKey: "k")?.expiry == .seconds(TimeInterval(RecordHeader.maximumTTL)))
        let hybrid = try HybridCache(options: HybridCacheOptions(directory: fixture.dir.appending("hybrid")))
        try hybrid.store(Data("y".utf8), forKey: "k", expiry: .seconds(ttl))
        #expect(try hybrid.value(forKey: "k") == Data("y".utf8))
    }

    @Test(arguments: [-1, -Double.infinity, .nan, .infinity])
    func invalidTTLsAreTypedErrors(ttl: Double) throws {
        let fixture = HostileFixture("larder-limits")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        expectCacheError(.invalidArgument) { () throws(CacheError) in try cache.store(Data(), forKey: "k", expiry: .seconds(ttl)) }
    }

    @Test func recordsAboveTheMaximumAreReportedNotRead() throws {
        let fixture = HostileFixture("larder-limits")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data(repeating: 7, count: 1000), forKey: "big")
        try cache.store(Data(repeating: 7, count: 100), forKey: "small")
        cache.close()
        var options = fixture.options()
        options.maximumRecordSize = 100
        let events = EventLog()
        options.eventHandler = events.handler
        let limited = try DiskCache(options: options)
        #expect(try limited.record(forKey: "small")?.data.count == 100)
        #expect(try limited.record(forKey: "big") == nil)
        #expect(events.all.contains { if case .corruptRecordRemoved(_, _, .tooLarge) = $0 { true } else { false } })
        expectCacheError(.invalidArgument) { () throws(CacheError) in try limited.store(Data(repeating: 1, count: 101), forKey: "k") }
        var negative = fixture.options()
        negative.maximumRecordSize = -1
        expectCacheError(.invalidOptions) { () throws(CacheError) in _ = try DiskCache(options: negative) }
        #expect(DiskCacheOptions(directory: fixture.url).maximumRecordSize == 1 << 30)
    }

    /// Sparse files with valid headers: above the maximum (4 GiB), and below it but with no
    /// blocks behind the claim (512 MiB). Neither is read.
    @Test(arguments: [1 << 32, 1 << 29])
    func sparseRecordsAreNotAllocated(length: Int) throws {
        let fixture = HostileFixture("larder-limits")
        defer { fixture.remove() }
        let first = try DiskCache(options: fixture.options())
        try first.store(Data("small".utf8), forKey: "huge")
        first.close()
        _ = unlink(fixture.root + "/.larder-index")
        let header = RecordHeader(updateTimeSec: UInt64(Date().timeIntervalSince1970), payloadSizeBytes: UInt64(length - 64))
        #expect(HostileFiles.makeSparse(fixture.recordPath("huge"), prefix: header.encoded(), length: length))
        let records = RecordFile(io: try FileIO().rooted(at: fixture.root))
        guard case .corrupt(.tooLarge) = try records.read(fixture.recordPath("huge")) else {
            Issue.record("a sparse record was not reported as too large")
            return
        }
        let counter = ReadCounter()
        let cache = try DiskCache(options: fixture.options(), systemCalls: counter.calls)
        #expect(try cache.record(forKey: "huge") == nil)
        #expect(counter.bytes < 1 << 20, "read \(counter.bytes) bytes")
    }

    /// `larder verify`'s reader: the payload's CRC-32 in chunks, never the payload in memory.
    @Test func verifyStreamsThePayload() throws {
        let fixture = HostileFixture("larder-limits")
        defer { fixture.remove() }
        let payload = (0 ..< 3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        let path = fixture.root + "/record"
        _ = FileManager.default.createFile(atPath: path, contents: Data(recordBytes(payload, key: "record")))
        let records = RecordFile(io: try FileIO().rooted(at: fixture.root))
        for chunk in [1, 4096, 1 << 20, 1 << 24] {
            guard case .record(let contents) = try records.verify(path, chunkSize: chunk) else {
                Issue.record("a sound record failed verification with chunks of \(chunk)")
                continue
            }
            #expect(contents.payload == nil && contents.storedKey == "record")
        }
        var damaged = recordBytes(payload, key: "record")
        damaged[damaged.count - 1] ^= 1
        _ = FileManager.default.createFile(atPath: path, contents: Data(damaged))
        guard case .corrupt(.badPayloadChecksum) = try records.verify(path) else {
            Issue.record("a damaged payload passed")
            return
        }
    }

    /// The numbers `docs/SECURITY.md` gives.
    @Test func documentedLimits() {
        #expect(RecordHeader.maximumTTL == 3_155_760_000 && Double(RecordHeader.maximumTTL) == 100 * 365.25 * 86_400)
        let endOf9999 = DateComponents(
            calendar: Calendar(identifier: .gregorian), timeZone: TimeZone(identifier: "UTC"),
            year: 9999, month: 12, day: 31, hour: 23, minute: 59, second: 59
        ).date!
        #expect(Double(RecordHeader.maximumTimestamp) == endOf9999.timeIntervalSince1970)
        let mebibyte = 1 << 20
        #expect(FileInfo.sparseAllowance == mebibyte)
        #expect(!FileInfo(kind: .regular, size: mebibyte, allocatedBytes: 0).looksSparse)
        #expect(FileInfo(kind: .regular, size: mebibyte + 8, allocatedBytes: (mebibyte + 8) / 8 - 1).looksSparse)
        #expect(!FileInfo(kind: .regular, size: mebibyte + 8, allocatedBytes: (mebibyte + 8) / 8).looksSparse)
        #expect(IndexSnapshot.maximumEntrySize == 1 << 50 && IndexSnapshot.maximumTotalSize == 1 << 62)
        #expect(DiskCacheOptions(directory: URL(fileURLWithPath: "/tmp/x")).sharing == .ownerOnly)
    }
}
