import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCache's `Tests/SPTPersistentCacheHeaderTests.m`: SPT's C header functions against
// Larder's `RecordHeader`, judged by the test target's own reading of the format (`SPTHeader`).
@Suite("SPTPersistentCacheHeaderTests") struct SPTPersistentCacheHeaderTests {
    /// SPTPersistentCacheHeaderTests.m:17. Fewer than 64 bytes hold no header.
    @Test func testGetHeaderFromDataWithSmallSizeData() {
        let small = [UInt8](repeating: 0, count: SPTHeader.size - 1)
        #expect(SPTHeader(bytes: small) == nil)
        #expect(throws: CorruptionReason.truncated) { try RecordHeader.decode(small) }
    }

    /// SPTPersistentCacheHeaderTests.m:27. SPT's `SPTPersistentCacheGetHeaderFromData` hands
    /// back any 64 bytes as a header, unchecked. Difference: Larder's `RecordHeader.decode`
    /// validates as it parses, so 64 bytes of garbage are refused and a valid header is read.
    @Test func testGetHeaderFromDataWithRightSize() throws {
        var random = SplitMix64(seed: 25)
        let garbage = (0 ..< SPTHeader.size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        #expect(throws: CorruptionReason.badMagic) { try RecordHeader.decode(garbage) }
        let made = SPTHeader.make(ttl: 64, payloadSize: 400, updateTime: 1_700_000_000, locked: true)
        let header = try RecordHeader.decode(made.bytes)
        #expect(header.refCount == 1 && header.ttl == 64 && header.payloadSizeBytes == 400 && header.updateTimeSec == 1_700_000_000)
    }

    /// SPTPersistentCacheHeaderTests.m:37. SPT refuses a header at an address not aligned for
    /// its magic (`HeaderAlignmentMismatch`). Larder reads headers unaligned, so the same bytes
    /// at an odd offset are the same header.
    @Test func testValidateMisalignedHeader() throws {
        let made = SPTHeader.make(ttl: 7, payloadSize: 3, updateTime: 1488, locked: false)
        let shifted = [0, 0, 0] + made.bytes
        let header = try shifted.withUnsafeBytes { buffer in
            try Result { () throws(CorruptionReason) in try RecordHeader.decode(UnsafeRawBufferPointer(rebasing: buffer[3...])) }.get()
        }
        #expect(header == (try RecordHeader.decode(made.bytes)))
        #expect(header.ttl == 7 && header.payloadSizeBytes == 3)
    }

    /// SPTPersistentCacheHeaderTests.m:46. SPT's `NULL` header is `InternalInconsistency`.
    /// Swift has no null buffer to pass; an empty one is a truncated record.
    @Test func testValidateNULLHeader() {
        #expect(throws: CorruptionReason.truncated) {
            try RecordHeader.decode(UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// SPTPersistentCacheHeaderTests.m:53. The CRC of nothing is 0.
    @Test func testCalculateNULLHeaderCRC() {
        #expect(CRC32.checksum(UnsafeRawBufferPointer(start: nil, count: 0)) == 0)
        #expect(CRC32.checksum(of: [UInt8]()) == 0)
        #expect(SPTCRC32.checksum([UInt8]()) == 0)
    }

    /// SPTPersistentCacheHeaderTests.m:60. `SPTPersistentCacheRecordHeaderMake`: Larder's header
    /// for the same facts is the same 64 bytes, reserved fields and flags zero.
    @Test func testSPTPersistentCacheRecordHeaderMake() throws {
        let ttl: UInt64 = 64
        let payloadSize: UInt64 = 400
        let updateTime = UInt64(Date().timeIntervalSince1970.rounded())
        let larder = RecordHeader(refCount: 1, ttl: ttl, updateTimeSec: updateTime, payloadSizeBytes: payloadSize).encoded()
        let header = try #require(SPTHeader(bytes: larder))
        #expect(header.reserved1 == 0 && header.reserved2 == 0 && header.reserved3 == 0 && header.reserved4 == 0)
        #expect(header.flags == 0)
        #expect(header.magic == SPTHeader.magicValue)
        #expect(header.headerSize == UInt32(SPTHeader.size))
        #expect(header.refCount == 1)
        #expect(header.ttl == ttl && header.payloadSizeBytes == payloadSize && header.updateTimeSec == updateTime)
        #expect(header.crc == header.calculatedCRC)
        #expect(larder == SPTHeader.make(ttl: ttl, payloadSize: payloadSize, updateTime: updateTime, locked: true).bytes)
    }

    /// The header of a record Larder stores under a verbatim key (SPT's layout): valid to SPT's
    /// checks, with the payload at offset 64. Difference: Larder also fills reserved1 (the
    /// payload's CRC-32), reserved2 (the last access, in ms) and the flags that say so (0x300),
    /// fields SPT writes as zero and ignores (`docs/FORMAT.md`).
    @Test func storedRecordsHaveSPTValidHeaders() async throws {
        let directory = TemporaryDirectory("spt-conformance")
        defer { directory.remove() }
        var options = DiskCacheOptions.spt(directory: directory.url)
        options.clock = ManualClock(now: 1_700_000_000.25)
        let cache = try DiskCache(options: options)
        let payload = Data("hello".utf8)
        try await cache.store(payload, forKey: "greeting", expiry: .seconds(3600), locked: true)
        cache.close()
        let bytes = try [UInt8](Data(contentsOf: directory.url.appendingPathComponent("gr/greeting")))
        let header = try #require(SPTHeader(bytes: bytes))
        #expect(header.validationError == nil)
        #expect(header.refCount == 1 && header.ttl == 3600 && header.updateTimeSec == 1_700_000_000)
        #expect(header.payloadSizeBytes == 5 && bytes.count == SPTHeader.size + 5 && Data(bytes[SPTHeader.size...]) == payload)
        #expect(header.flags == 0x300 && header.reserved1 == SPTCRC32.checksum(payload) && header.reserved2 == 1_700_000_000_250)
        #expect(header.reserved3 == 0 && header.reserved4 == 0)
    }
}
