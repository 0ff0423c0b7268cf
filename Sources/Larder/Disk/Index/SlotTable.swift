/// An open-addressing table of slot numbers (linear probing, tombstones), hashed and compared
/// by its owner (``DiskIndex``), which keeps the names and keys: 4 bytes a bucket (5 tagged), at
/// most 3/4 of the buckets in use.
///
/// The number of buckets is any multiple of 8, not a power of two: a table built for *n*
/// entries (an index opened from its image) has about 3*n*/2 buckets (room for *n*/8 more at
/// 3/4 full), and one that fills grows by half, so that the buckets cost 5.3 to 8 bytes a record (tagged: 6.7 to 10) wherever *n*
/// falls, where powers of two cost up to twice the least (about 24 bytes a record for both
/// tables at 100,000 records, 38 % full). A hash's low 32 bits pick its bucket, scaled to the
/// number of buckets by a multiplication; its top 8 are the tag.
///
/// A tagged table keeps, beside each bucket's slot, 8 bits of its hash (the top ones: the low
/// ones pick the bucket), so that `matches` is asked about only 1 in 256 of the other slots a
/// probe passes by. Without tags, each of those cost a hit two more cache misses (its slot, then
/// its key's bytes when the keys have one length): about 0.8 of each a hit at the tables' usual
/// fill. The tags are an array of their own, read beside the buckets, not after them. The key
/// table, which every read probes, is tagged; the name table is not (see ``DiskIndex``).
struct SlotTable: Sendable {
    static let empty: Int32 = -1
    static let tombstone: Int32 = -2

    /// What ``find(hash:matches:)`` found: the slot `matches` accepted, or the bucket to insert
    /// into and the tag to file there.
    typealias Probe = (slot: Int32?, bucket: Int, tag: UInt8)

    private var buckets: [Int32]
    /// Each bucket's tag (``tag(_:)``), meaningful where the bucket holds a slot; empty in an
    /// untagged table.
    private var tags: [UInt8]
    /// Whether the table keeps tags.
    let isTagged: Bool
    private(set) var count = 0
    private var used = 0  // entries and tombstones

    init(capacity: Int = 0, tagged: Bool) {
        buckets = capacity == 0 ? [] : [Int32](repeating: Self.empty, count: capacity)
        isTagged = tagged
        tags = tagged ? [UInt8](repeating: 0, count: capacity) : []
    }

    /// The slots filed, in bucket order.
    var slots: some Sequence<Int32> { buckets.lazy.filter { $0 >= 0 } }

    /// The fewest buckets, a multiple of 8, that hold `count` entries and one more at most 3/4
    /// full (8 at least).
    static func capacity(for count: Int) -> Int {
        max(8, ((count + 1) * 4 / 3 + 8) & ~7)
    }

    /// The buckets a table holding `count` entries grows to: half as many again as it needs.
    static func grownCapacity(for count: Int) -> Int {
        capacity(for: count + count / 2)
    }

    /// The bucket where `hash`'s probe starts: its low 32 bits scaled to `count` buckets.
    @inline(__always)
    static func home(_ hash: Int, _ count: Int) -> Int {
        Int(truncatingIfNeeded: (UInt64(UInt32(truncatingIfNeeded: hash)) &* UInt64(count)) &>> 32)
    }

    /// A hash's tag: its top 8 bits.
    @inline(__always)
    static func tag(_ hash: Int) -> UInt8 { UInt8(truncatingIfNeeded: UInt(bitPattern: hash) >> (UInt.bitWidth - 8)) }

    /// How many buckets the table has.
    var bucketCount: Int { buckets.count }

    var needsGrowth: Bool { buckets.isEmpty || used + 1 > buckets.count / 4 * 3 }

    /// The slot `matches` accepts among those filed under `hash` (in a tagged table, only those
    /// whose tag is `hash`'s are asked), with its bucket; else `nil` and the bucket to insert
    /// into (the first tombstone on the way, or the empty bucket that ended the search; -1 in an
    /// empty table).
    func find(hash: Int, matches: (Int32) -> Bool) -> Probe {
        let tag = Self.tag(hash)
        guard !buckets.isEmpty else { return (nil, -1, tag) }
        let bucketCount = buckets.count
        var bucket = Self.home(hash, bucketCount)
        var insertion = -1
        let isTagged = isTagged
        return buckets.withUnsafeBufferPointer { buckets in
            tags.withUnsafeBufferPointer { tags in
                while true {
                    let slot = buckets[bucket]
                    if slot == Self.empty { return (nil, insertion >= 0 ? insertion : bucket, tag) }
                    if slot == Self.tombstone {
                        if insertion < 0 { insertion = bucket }
                    } else if !isTagged || tags[bucket] == tag, matches(slot) {
                        return (slot, bucket, tag)
                    }
                    bucket += 1
                    if bucket == bucketCount { bucket = 0 }
                }
            }
        }
    }

    /// Files `slot` in the bucket a ``find(hash:matches:)`` that found nothing returned.
    mutating func insert(_ slot: Int32, at probe: Probe) {
        let bucket = probe.bucket
        precondition(buckets[bucket] < 0, "insertion into a used bucket")
        if buckets[bucket] == Self.empty { used += 1 }
        buckets[bucket] = slot
        if isTagged { tags[bucket] = probe.tag }
        count += 1
    }

    /// Files a slot known absent (rebuilding).
    mutating func insertNew(_ slot: Int32, hash: Int) {
        var bucket = Self.home(hash, buckets.count)
        while buckets[bucket] != Self.empty {
            bucket += 1
            if bucket == buckets.count { bucket = 0 }
        }
        buckets[bucket] = slot
        if isTagged { tags[bucket] = Self.tag(hash) }
        count += 1
        used += 1
    }

    mutating func remove(at bucket: Int) {
        count -= 1
        // A tombstone only where the probe sequence goes on.
        if buckets[bucket + 1 == buckets.count ? 0 : bucket + 1] == Self.empty {
            buckets[bucket] = Self.empty
            used -= 1
        } else {
            buckets[bucket] = Self.tombstone
        }
    }
}
