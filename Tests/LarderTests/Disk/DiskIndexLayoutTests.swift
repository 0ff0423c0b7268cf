import Testing
@testable import Larder

/// What the index keeps per record: a 56-byte slot, whose narrower fields (a file length in 32
/// bits, a key length in 16, a name length in 8) still describe every record the cache can hold.
@Suite struct DiskIndexLayoutTests {
    static func entry(_ name: String, key: String? = nil, fileSize: Int) -> IndexEntry {
        IndexEntry(name: name, key: key, diskSize: 8_192, fileSize: fileSize, updateTime: 1, lastAccessMs: 1, ttl: 0, lockCount: 0)
    }

    @Test func aSlotIsFiftySixBytes() {
        #expect(MemoryLayout<DiskIndex.Slot>.stride == 56)
        #expect(MemoryLayout<RecordQueues.Link>.stride == 12)
    }

    /// A file length that fits in 32 bits is kept exactly; a larger one as unknown (0), so that
    /// a read learns it from the file instead of trusting a cut-off length.
    @Test(arguments: [(0, 0), (4_100, 4_100), (Int(UInt32.max), Int(UInt32.max)), (1 << 32, 0), (5 << 30 + 7, 0)])
    func fileLengthsBeyondThirtyTwoBitsAreKeptAsUnknown(stored: Int, kept: Int) throws {
        var index = DiskIndex()
        let slot = index.upsert(Self.entry("record", fileSize: stored))
        #expect(index.fileSize(atSlot: slot) == kept)
        #expect(index[slot: slot].fileSize == kept)
        _ = index.recordUse(slot: slot, from: Self.entry("record", fileSize: stored), fileSize: { _ in stored }, marksAccessDirty: false)
        #expect(index.fileSize(atSlot: slot) == kept)
    }

    /// The longest name (a file name's 255 bytes) and the longest key a record stores are kept
    /// whole, beside a record with no key and one whose key is its name.
    @Test func theLongestNamesAndKeysAreKept() throws {
        var index = DiskIndex()
        let longName = String(repeating: "n", count: 255)
        let longKey = String(repeating: "k", count: RecordHeader.maximumKeyLength)
        index.upsert(Self.entry(longName, key: longKey, fileSize: 1))
        index.upsert(Self.entry("keyless", fileSize: 1))
        index.upsert(Self.entry("own-name", key: "own-name", fileSize: 1))
        #expect(index[longName]?.key == longKey)
        #expect(index.slot(forKey: longKey) == index.slot(of: longName))
        #expect(index["keyless"].map { $0.key == nil } == true)
        #expect(index.slot(forKey: "own-name") == index.slot(of: "own-name"))
        let decoded = try #require(IndexSnapshot.decode(IndexSnapshot.encode(index.entriesLeastRecentFirst)))
        #expect(decoded.map(\.name) == [longName, "keyless", "own-name"])
        #expect(decoded.map(\.key) == [longKey, nil, "own-name"])
    }

    /// An index opened from its image has table room for an eighth more records: its first
    /// stores after the open do not rebuild the tables.
    @Test func anOpenedIndexTakesAnEighthMoreWithoutRebuildingItsTables() throws {
        var index = DiskIndex()
        for i in 0 ..< 800 { index.upsert(Self.entry("r\(i)", key: "r\(i)", fileSize: 1)) }
        let bytes = IndexSnapshot.encode(index.entriesLeastRecentFirst)
        var opened = try #require(IndexSnapshot.decodeIndex(bytes, keyEncoding: .verbatim))
        let buckets = opened.byName.bucketCount
        #expect(buckets == SlotTable.capacity(for: 900))
        for i in 800 ..< 899 { opened.upsert(Self.entry("r\(i)", key: "r\(i)", fileSize: 1)) }
        #expect(opened.count == 899)
        #expect(opened.byName.bucketCount == buckets)
    }
}
