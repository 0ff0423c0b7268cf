import Foundation
import Testing
@testable import Larder

/// An SPT v1 record parser written from the fixtures' README alone, independent of `RecordHeader`.
enum IndependentSPTParser {
    struct Parsed: Equatable {
        var refCount: UInt32
        var ttl: UInt64
        var updateTime: UInt64
        var payload: [UInt8]
    }

    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0 ..< 8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }

    static func parse(_ file: [UInt8]) -> Parsed? {
        func u32(_ o: Int) -> UInt32 { (0 ..< 4).reduce(0) { $0 | UInt32(file[o + $1]) << (8 * $1) } }
        func u64(_ o: Int) -> UInt64 { (0 ..< 8).reduce(0) { $0 | UInt64(file[o + $1]) << (8 * $1) } }
        guard file.count >= 64, u32(0) == 0x4654_5053, u32(4) == 64, u32(60) == crc32(file[0 ..< 60]) else { return nil }
        guard u64(32) == UInt64(file.count - 64) else { return nil }
        return Parsed(refCount: u32(8), ttl: u64(16), updateTime: u64(24), payload: Array(file[64...]))
    }
}

@Suite struct RecordFormatTests {
    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0 ... $0 + 1]), radix: 16)! }
    }

    /// The hex blocks of docs/FORMAT.md's test vectors, in order.
    static func documentedVectors() throws -> [[UInt8]] {
        let doc = try String(
            contentsOf: URL(fileURLWithPath: #filePath)
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/FORMAT.md"), encoding: .utf8)
        let section = try #require(doc.components(separatedBy: "## Test vectors").last)
        let blocks = section.components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        return blocks.prefix(2).map { bytes(hex: $0) }
    }

    @Test func sptVectorMatchesDocs() throws {
        let vectors = try Self.documentedVectors()
        let header = RecordHeader(refCount: 1, ttl: 3600, updateTimeSec: 1_700_000_000, payloadSizeBytes: 5)
        #expect(header.encoded() + Array("hello".utf8) == vectors[0])
        let decoded = try RecordHeader.decode(vectors[0])
        #expect(decoded == header)
        #expect(
            IndependentSPTParser.parse(vectors[0]) == .init(refCount: 1, ttl: 3600, updateTime: 1_700_000_000, payload: Array("hello".utf8))
        )
    }

    @Test func storedKeyVectorMatchesDocs() throws {
        let vectors = try Self.documentedVectors()
        let key = Array("greeting".utf8)
        // The semantic initializer fills the flags and reserved fields the vector spells out.
        let header = RecordHeader(
            refCount: 0, ttl: 0, updateTimeSec: 1_700_000_000, payloadSizeBytes: 5,
            payloadChecksum: CRC32.checksum(of: Array("hello".utf8)), lastAccessMilliseconds: 1_700_000_000_123, storedKey: key)
        #expect(header.flags == [.payloadChecksum, .accessTime, .storedKey])
        #expect(header.flags.rawValue == 0x700)
        #expect(header.reserved1 == 0x3610_A686 && header.reserved4 == 0x46E3_A4AB)
        #expect(header.reserved2 == 1_700_000_000_123 && header.reserved3 == 8)
        #expect(header.reserved4 == CRC32.checksum(of: key))
        #expect(header.encoded() + key + Array("hello".utf8) == vectors[1])
        #expect(SHA256Hash.hex(of: "greeting") == "18f6b0200b6fd32ce4e85b6c841f72247964195b8e1cd7c52e046dc51e48f779")
        #expect(try RecordHeader.decode(vectors[1]).payloadOffset == 72)
    }

    @Test func headerIsSixtyFourBytesAndMagicIsSPTF() {
        #expect(RecordHeader.size == 64)
        #expect(Array(RecordHeader(updateTimeSec: 0, payloadSizeBytes: 0).encoded().prefix(4)) == Array("SPTF".utf8))
    }

    @Test(arguments: [
        (0, CorruptionReason.badMagic), (4, .badHeaderSize), (60, .badHeaderChecksum), (20, .badHeaderChecksum),
    ])
    func damagedHeadersAreRejected(offset: Int, reason: CorruptionReason) {
        var bytes = RecordHeader(refCount: 1, ttl: 5, updateTimeSec: 9, payloadSizeBytes: 0).encoded()
        bytes[offset] ^= 0x01
        #expect(throws: reason) { try RecordHeader.decode(bytes) }
    }

    @Test func unknownFlagsAreRejected() {
        var unknown = RecordHeader(updateTimeSec: 9, payloadSizeBytes: 0)
        unknown.flags = RecordFlags(rawValue: 1 << 20)
        let bytes = unknown.encoded()
        #expect(throws: CorruptionReason.unsupportedFlags) { try RecordHeader.decode(bytes) }
        var streaming = RecordHeader(updateTimeSec: 9, payloadSizeBytes: 0)
        streaming.flags = .streamIncomplete
        let incomplete = streaming.encoded()
        #expect(throws: CorruptionReason.unsupportedFlags) { try RecordHeader.decode(incomplete) }
    }

    @Test func payloadSizeMustMatchFileSize() throws {
        let header = RecordHeader(updateTimeSec: 9, payloadSizeBytes: 10)
        try header.validate(fileSize: 74)
        #expect(throws: CorruptionReason.badPayloadSize) { try header.validate(fileSize: 75) }
        #expect(throws: CorruptionReason.badPayloadSize) {
            try RecordHeader(updateTimeSec: 9, payloadSizeBytes: 1 << 62).validate(fileSize: 74)
        }
    }

    @Test func expiryBoundaryIsStrict() {
        // SPT's rule now lives in ExpiryRule, asked with a header's fields.
        let rule = ExpiryRule(defaultExpiration: 10)
        func isExpired(_ header: RecordHeader, now: Double) -> Bool {
            rule.isExpired(lockCount: header.refCount, ttl: header.ttl, anchor: header.updateTimeSec, now: now)
        }
        let header = RecordHeader(ttl: 60, updateTimeSec: 1000, payloadSizeBytes: 0)
        #expect(!isExpired(header, now: 1060))
        #expect(!isExpired(header, now: 1060.9))
        #expect(isExpired(header, now: 1061))
        let usesDefault = RecordHeader(ttl: 0, updateTimeSec: 1000, payloadSizeBytes: 0)
        #expect(!isExpired(usesDefault, now: 1010))
        #expect(isExpired(usesDefault, now: 1011))
        var locked = usesDefault
        locked.refCount = 1
        #expect(!isExpired(locked, now: 1_000_000))
        // The expiration times the rule reports agree with the boundary.
        #expect(rule.expirationTime(lockCount: 0, ttl: 60, anchor: 1000) == 1060)
        #expect(rule.expirationTime(lockCount: 0, ttl: 0, anchor: 1000) == 1010)
        #expect(rule.expirationTime(lockCount: 1, ttl: 0, anchor: 1000) == nil)
    }

    /// Random bytes, and random mutations of a valid header, never crash the parser: each
    /// decode either throws a reason or returns a header that re-encodes to the same bytes.
    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func randomBytesNeverCrashTheParser(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        func next() -> UInt64 { random.next() }
        let valid = RecordHeader(refCount: 2, ttl: 7, updateTimeSec: 99, payloadSizeBytes: 3, lastAccessMilliseconds: 0).encoded()
        #expect((try? RecordHeader.decode(valid))?.flags == [.accessTime])
        var accepted = 0
        for round in 0 ..< 20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0 ..< Int(next() % 80)).map { _ in UInt8(truncatingIfNeeded: next()) }
            } else {
                bytes = valid
                for _ in 0 ... Int(next() % 3) { bytes[Int(next() % 64)] ^= UInt8(truncatingIfNeeded: next() | 1) }
                if next() % 4 == 0 { bytes = Array(bytes.prefix(Int(next() % 64))) }
            }
            if let header = try? RecordHeader.decode(bytes) {
                #expect(header.encoded() == Array(bytes.prefix(64)))
                // Two flips of the same byte can cancel out; only a real change counts.
                if bytes != valid { accepted += 1 }
            }
        }
        // Only a mutation that happens to keep the CRC valid can be accepted; with 32 bits of
        // CRC that is astronomically rare.
        #expect(accepted == 0)
    }
}
