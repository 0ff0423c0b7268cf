/// A record read through a kept descriptor, kept in memory so that its next read makes no
/// system call (``DiskCacheOptions/maximumPayloadMemory``).
package struct KeptRecord: Sendable {
    /// The record as that read returned it; its payload is handed out as is (copy on write).
    package var contents: RecordContents
    /// Whether that read checked the payload against its CRC-32.
    package var isVerified: Bool

    /// What a read asks of a kept record to be served it.
    package struct Read {
        /// The record file's length as the cache last saw it.
        package var fileSize: Int
        /// Whether the read checks the payload against its CRC-32.
        package var verifyPayload: Bool
        /// The key the read looks for (`nil`: any).
        package var expectedKey: String?
    }

    /// Whether this record answers `read`: it has the file's length, it was read with its payload
    /// checked when `read` checks it, and any stored key is `read`'s.
    func answers(_ read: Read) -> Bool {
        guard contents.fileSize == read.fileSize, isVerified || !read.verifyPayload else { return false }
        guard let stored = contents.storedKey, let expected = read.expectedKey else { return true }
        return ExactName(stored) == ExactName(expected)
    }
}

/// The records kept in memory beside their kept descriptors, within a byte budget: their
/// places, costs and last uses, for sampling a victim without hashing. Owned by one
/// ``DescriptorCache``, under its lock; the cache maps names to places.
struct KeptPayloads {
    /// A kept record and what eviction needs to know of it.
    struct Slot {
        /// Its name's ``DescriptorCache/tag(_:)``.
        var tag: UInt64
        var record: KeptRecord
        /// Bytes charged: the record file's length, the bytes its read holds in memory.
        var cost: Int
        var lastUse: UInt64
    }

    /// The most bytes kept (``DiskCacheOptions/maximumPayloadMemory``).
    let capacity: Int
    /// The most one record may cost: an eighth of ``capacity``, at most 64 KiB (the records read
    /// with one `pread`), so that one large record never displaces many small ones.
    let largest: Int
    private(set) var bytes = 0
    private(set) var slots: [Slot] = []

    init(capacity: Int) {
        self.capacity = max(0, capacity)
        largest = min(RecordFile.singleReadLimit, self.capacity / 8)
    }

    /// The bytes a record costs when kept.
    static func cost(of record: KeptRecord) -> Int { record.contents.fileSize }

    /// Adds a slot at the end; returns its place.
    mutating func append(_ slot: Slot) -> Int {
        bytes += slot.cost
        slots.append(slot)
        return slots.count - 1
    }

    /// Replaces the record at `place` (the same name read again after a change in place).
    mutating func replace(at place: Int, with record: KeptRecord, tick: UInt64) {
        let cost = Self.cost(of: record)
        bytes += cost - slots[place].cost
        slots[place].record = record
        slots[place].cost = cost
        slots[place].lastUse = tick
    }

    /// Removes the slot at `place`, moving the last slot there.
    /// - Returns: The tag of the slot moved to `place`, whose owner must learn its new place.
    mutating func remove(at place: Int) -> UInt64? {
        bytes -= slots[place].cost
        let last = slots.removeLast()
        guard place < slots.count else { return nil }
        slots[place] = last
        return last.tag
    }

    /// Marks a use of the record at `place`.
    mutating func use(at place: Int, tick: UInt64) {
        slots[place].lastUse = tick
    }
}
