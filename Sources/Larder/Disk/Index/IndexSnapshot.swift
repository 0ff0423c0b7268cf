/// The persisted index, the base of the index image (``IndexJournal`` holds the changes since):
/// every entry in least-recently-used order, so a reopened cache knows its records, totals and
/// LRU order without reading each header. Version 4 is a near-binary image of ``DiskIndex``'s
/// slots and arena, loaded with one pass and no allocation per entry; it names the epoch that
/// journal records must carry to apply to it, carries the adaptive eviction policy's state
/// (`IndexSnapshot+Policy.swift`), and ends with the shard folders' stamps (``FolderStamps``),
/// so that an open lists only the folders that changed since.
///
/// Layout (little-endian): magic "LRDX", version u32 (4), count u32, arena length u64, epoch
/// u64; then the entry list: per entry, 39 bytes: flags u8 (2: the name is 64 hex digits kept
/// as 32 bytes; 4: the key is the name), name length u16, key length u32 (`0xFFFF_FFFF` for
/// none), diskSize u64, updateTime u64, lastAccessMs u64, ttl u32, lockCount u32; then the
/// arena: each entry's name then key bytes, in entry order; then the policy section (empty under
/// LRU) and its length u32; then the stamps section: reference
/// seconds i64 and nanoseconds u32, folder count u32, per folder its name length u8 and name,
/// then modification and change times (seconds i64, nanoseconds u32 each), inode u64 and size
/// u64; then the stamps section's length u32; last, a CRC-32 of everything before it. Versions
/// 1 to 3 (and any other) are ignored: the index is then rebuilt from the headers.
enum IndexSnapshot {
    static let magic: UInt32 = 0x5844_524C  // "LRDX"
    static let version: UInt32 = 4
    static let headerSize = 28
    static let entrySize = 39

    /// Encodes an index, least recently used first, as the base of epoch `epoch`.
    /// - Complexity: O(*n*); one allocation of the exact size, written in place.
    static func encode(_ index: DiskIndex, epoch: UInt64 = 0, stamps: FolderStamps = .none) -> [UInt8] {
        var order: [Int32] = []
        order.reserveCapacity(index.count)
        var slot = index.head
        while slot >= 0 {
            order.append(slot)
            slot = index.slots[Int(slot)].next
        }
        let policy = policySection(index, order: order)
        return encode(index.slots, order: order, arena: index.arena, epoch: epoch, policy: policy, stamps: stamps)
    }

    /// Encodes entries in their order (least recently used first); repeated names are kept,
    /// as a damaged or crafted snapshot may hold them.
    static func encode(_ entries: [IndexEntry], epoch: UInt64 = 0, stamps: FolderStamps = .none) -> [UInt8] {
        let (slots, arena) = DiskIndex.pack(entries)
        return encode(slots, order: (0 ..< Int32(slots.count)).map { $0 }, arena: arena, epoch: epoch, policy: [], stamps: stamps)
    }

    private static func storedLength(_ s: DiskIndex.Slot) -> Int {
        Int(s.nameLength) + (s.keyLength == DiskIndex.noKey || s.flags.contains(.keyIsName) ? 0 : Int(s.keyLength))
    }

    private static func encode(
        _ slots: [DiskIndex.Slot], order: [Int32], arena: [UInt8], epoch: UInt64, policy: [UInt8], stamps: FolderStamps
    ) -> [UInt8] {
        let arenaLength = self.arenaLength(slots, order: order)
        let stampBytes = encode(stamps)
        let total = headerSize + order.count * entrySize + arenaLength + policy.count + 4 + stampBytes.count + 4 + 4
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            var writer = LittleEndianWriter(UnsafeMutableRawBufferPointer(buffer))
            writer.put(magic)
            writer.put(version)
            writer.put(UInt32(order.count))
            writer.put(UInt64(arenaLength))
            writer.put(epoch)
            writeEntryList(slots, order: order, arena: arena, into: &writer)
            writer.put(bytes: policy)
            writer.put(UInt32(policy.count))
            writer.put(bytes: stampBytes)
            writer.put(UInt32(stampBytes.count))
            writer.put(CRC32.checksum(writer.written))
            count = writer.offset
        }
    }

    /// The arena bytes the entry list of `order` holds.
    static func arenaLength(_ slots: [DiskIndex.Slot], order: [Int32]) -> Int {
        var length = 0
        for slot in order { length += storedLength(slots[Int(slot)]) }
        return length
    }

    /// Writes the entry list of `order` (its entries, then its arena) with `writer`, which has
    /// room for `order.count * entrySize + arenaLength(slots, order:)` more bytes.
    static func writeEntryList(_ slots: [DiskIndex.Slot], order: [Int32], arena: [UInt8], into writer: inout LittleEndianWriter) {
        for slot in order {
            let s = slots[Int(slot)]
            writer.put(s.flags.intersection([.hexName, .keyIsName]).rawValue)
            writer.put(UInt16(s.nameLength))
            writer.put(s.keyLength == DiskIndex.noKey ? UInt32.max : UInt32(s.keyLength))
            writer.put(UInt64(s.diskSize))
            writer.put(s.updateTime)
            writer.put(s.lastAccessMs)
            writer.put(s.ttl)
            writer.put(s.lockCount)
        }
        arena.withUnsafeBytes { bytes in
            for slot in order {
                let s = slots[Int(slot)]
                writer.put(bytes.baseAddress!.advanced(by: s.arenaOffset), count: storedLength(s))
            }
        }
    }

    /// The largest disk size one entry may claim (1 PiB); a snapshot claiming more is damaged.
    static let maximumEntrySize: UInt64 = 1 << 50
    /// The largest total the entries may claim (2^62 bytes), so that no sum the index keeps overflows.
    static let maximumTotalSize = 1 << 62

    /// Decodes a snapshot into entries, or returns `nil` when it is damaged or of another version.
    /// Repeated names are kept (``decodeIndex(_:keyEncoding:)`` keeps the first).
    ///
    /// A snapshot is a file in the cache folder, so nothing in it is trusted: sizes are bounded
    /// (``maximumEntrySize`` each, ``maximumTotalSize`` summed with checked arithmetic, else the
    /// whole snapshot is ignored), times and ttls are clamped as a header's are, and, given
    /// `keyEncoding`, an entry whose key does not map to its name under that encoding is
    /// dropped (its record is then read from its header like any unknown file), so a crafted
    /// snapshot cannot make one key answer with another key's file.
    static func decode(_ bytes: [UInt8], keyEncoding: KeyEncoding? = nil) -> [IndexEntry]? {
        guard let (slots, arena, _, _) = decodeSlots(bytes) else { return nil }
        return slots.compactMap { s in
            if let keyEncoding, !keyMapsToName(s, arena: arena, keyEncoding) { return nil }
            return DiskIndex.entry(s, in: arena)
        }
    }

    /// Decodes a snapshot into an index (the first entry of a repeated name kept), or returns
    /// `nil` when it is damaged or of another version; entries whose key does not map to their
    /// name under `keyEncoding` are dropped (see ``decode(_:keyEncoding:)``).
    /// - Complexity: O(*n*), with one SHA-256 of each key under ``KeyEncoding/sha256``.
    static func decodeIndex(_ bytes: [UInt8], keyEncoding: KeyEncoding) -> DiskIndex? {
        decodeBase(bytes, keyEncoding: keyEncoding)?.index
    }

    /// ``decodeIndex(_:keyEncoding:)``, the base's epoch, and the policy its policy section holds
    /// (`nil` when it holds none, or is damaged, or an entry was dropped, which moves the
    /// positions it names).
    static func decodeBase(_ bytes: [UInt8], keyEncoding: KeyEncoding) -> (index: DiskIndex, epoch: UInt64, policy: StoredPolicy?)? {
        guard let decoded = decodeSlots(bytes) else { return nil }
        var slots = decoded.slots
        let arena = decoded.arena
        var spoofed = false
        for i in slots.indices where !keyMapsToName(slots[i], arena: arena, keyEncoding) {
            slots[i].flags = []
            spoofed = true
        }
        if spoofed { slots.removeAll { $0.flags.isEmpty } }
        let policy = spoofed ? nil : bytes.withUnsafeBytes { decodePolicy(UnsafeRawBufferPointer(rebasing: $0[decoded.policy])) }
        var index = DiskIndex()
        index.load(slots: consume slots, arena: arena)
        return (index, decoded.epoch, policy)
    }

    /// Whether a slot's key, if any, maps to its name under `keyEncoding`.
    static func keyMapsToName(_ s: DiskIndex.Slot, arena: [UInt8], _ keyEncoding: KeyEncoding) -> Bool {
        guard s.keyLength != DiskIndex.noKey || s.flags.contains(.keyIsName) else { return true }
        switch keyEncoding {
        case .verbatim:
            return s.flags.contains(.keyIsName)
        case .sha256:
            guard s.flags.contains(.hexName) else { return false }
            let range = DiskIndex.keyRange(of: s)
            return arena.withUnsafeBytes { bytes in
                withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { digest in
                    SHA256Hash.digest(UnsafeRawBufferPointer(rebasing: bytes[range]), into: digest)
                    return UnsafeRawBufferPointer(digest).elementsEqual(bytes[s.arenaOffset ..< s.arenaOffset + 32])
                }
            }
        case .custom:
            guard let key = DiskIndex.key(s, in: arena) else { return true }
            return (try? keyEncoding.fileName(for: key)) == DiskIndex.name(s, in: arena)
        }
    }

    /// The slots (in order, unlinked), arena and epoch a snapshot holds, checked and clamped, and
    /// where its policy section lies (not decoded).
    private static func decodeSlots(
        _ bytes: [UInt8]
    ) -> (slots: [DiskIndex.Slot], arena: [UInt8], epoch: UInt64, policy: Range<Int>)? {
        guard bytes.count >= headerSize + 4 else { return nil }
        return bytes.withUnsafeBytes { buffer -> (slots: [DiskIndex.Slot], arena: [UInt8], epoch: UInt64, policy: Range<Int>)? in
            let body = UnsafeRawBufferPointer(rebasing: buffer[0 ..< buffer.count - 4])
            let crc = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: buffer.count - 4, as: UInt32.self))
            guard CRC32.checksum(body) == crc else { return nil }
            func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
                T(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: T.self))
            }
            guard load(0, UInt32.self) == magic, load(4, UInt32.self) == version else { return nil }
            let count = Int(load(8, UInt32.self))
            let arenaLength = load(12, UInt64.self)
            let epoch = load(20, UInt64.self)
            // The stamps section, then its length, end the body; a damaged one damages the whole.
            guard body.count >= headerSize + 4, decodeStamps(body) != nil else { return nil }
            let stampsLength = Int(load(body.count - 4, UInt32.self)) + 4
            // Before it, the policy section and its length, which must end where the arena does.
            let policyEnd = body.count - stampsLength - 4
            guard policyEnd >= headerSize else { return nil }
            let policyLength = Int(load(policyEnd, UInt32.self))
            guard policyLength <= policyEnd - headerSize,
                let list = readEntryList(body, at: headerSize, count: count, arenaLength: arenaLength),
                list.end == policyEnd - policyLength
            else { return nil }
            return (list.slots, list.arena, epoch, list.end ..< policyEnd)
        }
    }

    /// Reads an entry list of `count` entries and `arenaLength` arena bytes at `start` in
    /// `body`, checked and clamped (see ``decode(_:keyEncoding:)``), or `nil` when it is damaged
    /// or does not fit.
    /// - Returns: The slots (in order, unlinked), the arena, and where the list ends.
    static func readEntryList(
        _ body: UnsafeRawBufferPointer, at start: Int, count: Int, arenaLength: UInt64
    ) -> (slots: [DiskIndex.Slot], arena: [UInt8], end: Int)? {
        func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            T(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        // The sizes must fit the bytes there are, before anything is reserved.
        let (entriesBytes, overflow) = count.multipliedReportingOverflow(by: entrySize)
        guard !overflow, start <= body.count, entriesBytes <= body.count - start,
            arenaLength <= UInt64(body.count - start - entriesBytes)
        else { return nil }
        let arenaStart = start + entriesBytes
        var slots: [DiskIndex.Slot] = []
        slots.reserveCapacity(count)
        var arenaOffset = 0
        var total = 0
        for i in 0 ..< count {
            let at = start + i * entrySize
            let flags = DiskIndex.Flags(rawValue: load(at, UInt8.self))
            let nameLength = load(at + 1, UInt16.self)
            let keyLength = load(at + 3, UInt32.self)
            let diskSize = load(at + 7, UInt64.self)
            guard flags.subtracting([.hexName, .keyIsName]).isEmpty, nameLength > 0, nameLength <= DiskIndex.maximumNameLength,
                !flags.contains(.hexName) || nameLength == 32,
                !flags.contains(.keyIsName) || (keyLength == 0 && !flags.contains(.hexName)),
                diskSize <= maximumEntrySize,
                keyLength == UInt32.max || keyLength <= UInt32(RecordHeader.maximumKeyLength)
            else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(Int(diskSize))
            guard !overflow, sum <= maximumTotalSize else { return nil }
            total = sum
            var s = DiskIndex.Slot.free
            s.arenaOffset = arenaOffset
            s.nameLength = UInt8(nameLength)
            s.keyLength = keyLength == UInt32.max ? DiskIndex.noKey : UInt16(keyLength)
            s.flags = flags.union(.occupied)
            s.diskSize = Int(diskSize)
            s.updateTime = min(load(at + 15, UInt64.self), RecordHeader.maximumTimestamp)
            s.lastAccessMs = min(load(at + 23, UInt64.self), RecordHeader.maximumTimestamp * 1000)
            s.ttl = UInt32(min(UInt64(load(at + 31, UInt32.self)), RecordHeader.maximumTTL))
            s.lockCount = load(at + 35, UInt32.self)
            let stored = storedLength(s)
            guard stored <= Int(arenaLength) - arenaOffset else { return nil }
            arenaOffset += stored
            slots.append(s)
        }
        guard arenaOffset == Int(arenaLength) else { return nil }
        let end = arenaStart + Int(arenaLength)
        let arena = [UInt8](UnsafeRawBufferPointer(rebasing: body[arenaStart ..< end]))
        return (slots, arena, end)
    }

    // MARK: - Folder stamps

    /// The bytes of the stamps section (without its trailing length), folders in name order.
    private static func encode(_ stamps: FolderStamps) -> [UInt8] {
        var out: [UInt8] = []
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out += $0 } }
        func put(_ time: FileTime) {
            put(time.seconds)
            put(time.nanoseconds)
        }
        // Names a byte long at most; a shard name is two UTF-16 units, far below it.
        let folders = stamps.byFolder.filter { $0.key.utf8.count <= Int(UInt8.max) }.sorted { $0.key < $1.key }
        put(stamps.reference)
        put(UInt32(folders.count))
        for (name, stamp) in folders {
            put(UInt8(name.utf8.count))
            out += name.utf8
            put(stamp.modification)
            put(stamp.change)
            put(stamp.inode)
            put(stamp.size)
        }
        return out
    }

    /// The shard folders' stamps a snapshot records, or `nil` when its stamps section is
    /// malformed. The checksum is not checked here: call it on a snapshot that
    /// ``decodeIndex(_:keyEncoding:)`` accepted (which calls this too, and rejects a snapshot
    /// whose stamps section is malformed). A folder named twice keeps its first stamp.
    static func decodeStamps(_ bytes: [UInt8]) -> FolderStamps? {
        guard bytes.count >= headerSize + 8 else { return nil }
        return bytes.withUnsafeBytes { decodeStamps(UnsafeRawBufferPointer(rebasing: $0[0 ..< $0.count - 4])) }
    }

    /// ``decodeStamps(_:)`` of a snapshot's body (everything before its checksum).
    private static func decodeStamps(_ body: UnsafeRawBufferPointer) -> FolderStamps? {
        func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            T(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        guard body.count >= headerSize + 4 else { return nil }
        let length = Int(load(body.count - 4, UInt32.self))
        let end = body.count - 4
        guard length >= 16, length <= end - headerSize else { return nil }
        var offset = end - length
        func time() -> FileTime {
            defer { offset += 12 }
            return FileTime(seconds: load(offset, Int64.self), nanoseconds: load(offset + 8, UInt32.self))
        }
        let reference = time()
        let count = Int(load(offset, UInt32.self))
        offset += 4
        var byFolder: [String: FolderStamp] = [:]
        for _ in 0 ..< count {
            guard end - offset >= 1 else { return nil }
            let nameLength = Int(load(offset, UInt8.self))
            offset += 1
            guard nameLength > 0, end - offset >= nameLength + 40 else { return nil }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: body[offset ..< offset + nameLength]), as: UTF8.self)
            offset += nameLength
            let modification = time()
            let change = time()
            let inode = load(offset, UInt64.self)
            let size = load(offset + 8, UInt64.self)
            offset += 16
            if byFolder[name] == nil {
                byFolder[name] = FolderStamp(modification: modification, change: change, inode: inode, size: size)
            }
        }
        guard offset == end else { return nil }
        return FolderStamps(reference: reference, byFolder: byFolder)
    }
}
