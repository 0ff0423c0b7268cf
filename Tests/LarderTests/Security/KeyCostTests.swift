#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// What a hostile record's key, or a hostile clock, may cost (docs/SECURITY.md, "Costs that
/// hostile records can drive").
@Suite struct KeyCostTests {
    /// A record whose header claims a stored key above the limit is corrupt, and its key is
    /// never read; one at the limit is read. Hashed keys longer than any file name still store.
    @Test func storedKeysAboveTheLimitAreRefusedUnread() throws {
        let fixture = HostileFixture("larder-keycost")
        defer { fixture.remove() }
        #expect(RecordHeader.maximumKeyLength == 8192)
        let long = String(repeating: "k", count: RecordHeader.maximumKeyLength)
        let cache = try DiskCache(options: fixture.options(.sha256))
        try cache.store(Data("at the limit".utf8), forKey: long)
        try cache.store(Data("mine".utf8), forKey: "over")
        #expect(try cache.value(forKey: long) == Data("at the limit".utf8))
        expectCacheError(.invalidKey) { () throws(CacheError) in try cache.store(Data("x".utf8), forKey: long + "k") }
        cache.close()

        let over = String(repeating: "\u{1}", count: RecordHeader.maximumKeyLength + 1)
        let path = fixture.recordPath("over", .sha256)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(recordBytes(Array("planted".utf8), key: over))))
        _ = unlink(fixture.root + "/.larder-index")
        let records = RecordFile(io: try FileIO().rooted(at: fixture.root))
        guard case .corrupt(.badStoredKey) = try records.read(path, readPayload: false) else {
            Issue.record("a key above the limit was read")
            return
        }
    }

    /// A key region left as a file hole (the file is far under the 1 MiB that the payload's
    /// sparse check starts at) is refused as a sparse payload is, with no key bytes read.
    @Test func sparseKeyRegionsAreRefused() throws {
        let fixture = HostileFixture("larder-keycost")
        defer { fixture.remove() }
        let key = String(repeating: "\0", count: RecordHeader.maximumKeyLength)
        let setUp = try DiskCache(options: fixture.options(.sha256))
        try setUp.store(Data("x".utf8), forKey: key)
        setUp.close()
        _ = unlink(fixture.root + "/.larder-index")
        let path = fixture.recordPath(key, .sha256)
        // The same record, its key region a hole: header, then nothing until the payload.
        let real = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(unlink(path) == 0)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        #expect(pwrite(fd, real, RecordHeader.size, 0) == RecordHeader.size)
        let payloadOffset = RecordHeader.size + RecordHeader.maximumKeyLength
        #expect(Array(real[payloadOffset...]).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(payloadOffset)) } == 1)
        close(fd)
        let io = try FileIO().rooted(at: fixture.root)
        let opened = try io.openForReading(path)
        let hole = io.firstHole(opened.fd)
        io.close(opened.fd)
        try #require(hole.map { $0 < payloadOffset } == true, "this file system reports no hole")
        let records = RecordFile(io: io)
        for readPayload in [false, true] {
            guard case .corrupt(.tooLarge) = try records.read(path, readPayload: readPayload) else {
                Issue.record("a sparse key region was read (payload: \(readPayload))")
                continue
            }
        }
        // The cache's own record of that length, written through it, is read whatever its blocks.
        let cache = try DiskCache(options: fixture.options(.sha256))
        try cache.store(Data("y".utf8), forKey: key)
        #expect(try cache.value(forKey: key) == Data("y".utf8))
    }

    /// Header times come from the clock through `seconds` and `milliseconds`: any Double,
    /// finite or not, is clamped to the range a header is read back in, never a trap.
    @Test(arguments: [2e16, 1e300, -1e300, .infinity, -.infinity, .nan, -1, 0, 1_700_000_000.5])
    func headerTimesAreClampedNeverTrap(time: Double) {
        let seconds = DiskCache.seconds(time)
        let milliseconds = DiskCache.milliseconds(time)
        #expect(seconds <= RecordHeader.maximumTimestamp)
        #expect(milliseconds <= RecordHeader.maximumTimestamp * 1000)
        if time == 1_700_000_000.5 {
            #expect(seconds == 1_700_000_000)
            #expect(milliseconds == 1_700_000_000_500)
        } else if time >= 2e16 {
            #expect(seconds == RecordHeader.maximumTimestamp)
        } else if !(time > 0) {
            #expect(seconds == 0 && milliseconds == 0)
        }
    }

    /// A store under a clock far in the future writes the clamped time (locked, since a record
    /// of the end of year 9999 has expired by such a clock).
    @Test func storesUnderAnOutOfRangeClockDoNotTrap() throws {
        let fixture = HostileFixture("larder-keycost")
        defer { fixture.remove() }
        var options = fixture.options(.sha256)
        options.clock = ManualClock(now: 2e16)
        let cache = try DiskCache(options: options)
        try cache.store(Data("later".utf8), forKey: "k", locked: true)
        #expect(try cache.value(forKey: "k") == Data("later".utf8))
        let records = RecordFile(io: try FileIO().rooted(at: fixture.root))
        guard case .record(let contents) = try records.read(fixture.recordPath("k", .sha256), readPayload: false) else {
            Issue.record("the record was not written")
            return
        }
        #expect(contents.header.updateTimeSec == RecordHeader.maximumTimestamp)
        #expect(contents.header.reserved2 == RecordHeader.maximumTimestamp * 1000)
    }
}
