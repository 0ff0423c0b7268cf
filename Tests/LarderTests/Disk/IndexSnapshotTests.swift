import Foundation
import Testing
@testable import Larder

@Suite struct IndexSnapshotTests {
    static let entries = [
        IndexEntry(name: "ab", key: nil, diskSize: 4096, updateTime: 1, lastAccessMs: 1000, ttl: 0, lockCount: 0),
        IndexEntry(name: "cdef", key: "", diskSize: 8192, updateTime: 2, lastAccessMs: 2000, ttl: 60, lockCount: 3),
        IndexEntry(
            name: String(repeating: "e", count: 64), key: "ключ/é", diskSize: 1 << 40, updateTime: RecordHeader.maximumTimestamp,
            lastAccessMs: 7, ttl: 9, lockCount: .max),
    ]

    @Test func roundTripKeepsEveryFieldAndTheOrder() throws {
        let bytes = IndexSnapshot.encode(Self.entries)
        let decoded = try #require(IndexSnapshot.decode(bytes))
        #expect(decoded.map(\.name) == Self.entries.map(\.name))
        #expect(decoded.map(\.key) == Self.entries.map(\.key))
        #expect(decoded.map(\.diskSize) == Self.entries.map(\.diskSize))
        #expect(decoded.map(\.updateTime) == Self.entries.map(\.updateTime))
        #expect(decoded.map(\.lastAccessMs) == Self.entries.map(\.lastAccessMs))
        #expect(decoded.map(\.ttl) == Self.entries.map(\.ttl))
        #expect(decoded.map(\.lockCount) == Self.entries.map(\.lockCount))
        #expect(Array(bytes.prefix(4)) == Array("LRDX".utf8))
        #expect(IndexSnapshot.decode(IndexSnapshot.encode([]))?.isEmpty == true)
    }

    @Test func anyDamageIsRejected() {
        let bytes = IndexSnapshot.encode(Self.entries)
        var random = SplitMix64(seed: 9)
        for _ in 0 ..< 2_000 {
            var damaged = bytes
            damaged[random.below(damaged.count)] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            #expect(IndexSnapshot.decode(damaged) == nil)
        }
        #expect(IndexSnapshot.decode(Array(bytes.dropLast())) == nil)
        #expect(IndexSnapshot.decode(Array(bytes.prefix(10))) == nil)
    }
}
