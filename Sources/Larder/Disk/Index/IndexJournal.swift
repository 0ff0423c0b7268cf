/// The index journal (`.larder-journal`): what changed since the base (``IndexSnapshot``) was
/// written, appended instead of rewriting the base after each collection, so that a collection
/// costs what it changes rather than what the index holds.
///
/// The journal is a sequence of records, each: length u32 (of what follows, up to the CRC),
/// kind u8, epoch u64, payload, then a CRC-32 of the record's bytes before it (little-endian).
/// A record applies to the base of its epoch; records of another epoch (a journal left behind
/// by a crash between a new base and the old journal's removal) are skipped. Kinds:
/// - `open` (1, no payload): changes to records began; what the journal said until here no
///   longer holds. A writer appends it before its first change after a commit (and syncs it
///   under ``Durability/fsync``), as it once withdrew the snapshot.
/// - `commit` (2): the index as it is now, as changes to the one before: removed count u32,
///   each removed name as length u16 and bytes; then changed-in-place count u32, moved count
///   u32, arena length u64, and an entry list as the base's (the entries changed in place, then
///   those moved to the most recent end or inserted, least recently used first). A commit is
///   followed by a seal of ``sealSize`` zero bytes, which the writer makes by extending the
///   file (`ftruncate`), not by writing them: a length change is metadata, which a journaling
///   file system keeps in order with the renames and removals before it, whereas appended
///   bytes may reach the disk without them. A commit without its seal is torn.
///
/// The index the base and journal describe is exact when the last record of the base's epoch
/// is a sealed commit (or there is none) and ends the file: an `open` last means changes were
/// under way, and a torn or damaged record (a crash mid-append) means the same. Else the image
/// is absent and the index is built from the headers.
enum IndexJournal {
    /// A record's kind.
    enum Kind: UInt8 {
        /// Changes to records began.
        case open = 1
        /// The index as it is now.
        case commit = 2
    }

    /// Bytes around a record's payload: length, kind, epoch, CRC.
    static let recordOverhead = 4 + 1 + 8 + 4
    /// The zero bytes that seal a commit.
    static let sealSize = 8

    /// An `open` record for the base of `epoch`.
    static func openRecord(epoch: UInt64) -> [UInt8] {
        record(.open, epoch: epoch, payloadSize: 0) { _ in }
    }

    /// A `commit` record holding `changes` (``DiskIndex/takeChanges()``) for the base of `epoch`.
    /// - Complexity: O(*c*) for the *c* changes.
    static func commitRecord(epoch: UInt64, changes: DiskIndex.Changes) -> [UInt8] {
        let entries = changes.changedInPlace + changes.moved
        let (slots, arena) = DiskIndex.pack(entries)
        let order = (0 ..< Int32(slots.count)).map { $0 }
        let arenaLength = IndexSnapshot.arenaLength(slots, order: order)
        var size = 4 + 4 + 4 + 8 + entries.count * IndexSnapshot.entrySize + arenaLength
        for name in changes.removed { size += 2 + min(name.utf8.count, Int(UInt16.max)) }
        return record(.commit, epoch: epoch, payloadSize: size) { writer in
            writer.put(UInt32(changes.removed.count))
            for name in changes.removed {
                // A name is at most a file name's length (255 bytes); cut, it matches nothing.
                let bytes = name.utf8.prefix(Int(UInt16.max))
                writer.put(UInt16(bytes.count))
                writer.put(bytes: bytes)
            }
            writer.put(UInt32(changes.changedInPlace.count))
            writer.put(UInt32(changes.moved.count))
            writer.put(UInt64(arenaLength))
            IndexSnapshot.writeEntryList(slots, order: order, arena: arena, into: &writer)
        }
    }

    /// The payload of a `commit` record holding `changes`: what a ``FolderChangeLog`` record
    /// carries for a change, so that another writer replays it as a commit.
    /// - Complexity: O(*c*) for the *c* changes.
    static func changesPayload(_ changes: DiskIndex.Changes) -> [UInt8] {
        let record = commitRecord(epoch: 0, changes: changes)
        return Array(record[13 ..< record.count - 4])
    }

    /// Applies a payload of ``changesPayload(_:)`` to `index`, checking it as a commit's, and
    /// appends the names it removed, changed or added to `touched`; `false` when it is damaged
    /// (what it applied before the damage stays).
    /// - Complexity: O(*c*) for the *c* changes it holds.
    static func applyChanges(_ payload: [UInt8], to index: inout DiskIndex, keyEncoding: KeyEncoding, touched: inout [String]) -> Bool {
        var keys: [String]?
        return payload.withUnsafeBytes { apply($0, to: &index, keyEncoding: keyEncoding, touched: &touched, keys: &keys) }
    }

    /// ``applyChanges(_:to:keyEncoding:touched:)``, also appending to `keys` the keys of the
    /// records it changed or added, and of those it removed that `index` knew the key of: what a
    /// memory tier in front of the index drops.
    /// - Complexity: O(*c*) for the *c* changes it holds.
    static func applyChanges(
        _ payload: [UInt8], to index: inout DiskIndex, keyEncoding: KeyEncoding, touched: inout [String], keys: inout [String]
    ) -> Bool {
        var collected: [String]? = []
        defer { keys += collected ?? [] }
        return payload.withUnsafeBytes { apply($0, to: &index, keyEncoding: keyEncoding, touched: &touched, keys: &collected) }
    }

    private static func record(
        _ kind: Kind, epoch: UInt64, payloadSize: Int, _ writePayload: (inout LittleEndianWriter) -> Void
    ) -> [UInt8] {
        let total = recordOverhead + payloadSize
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            var writer = LittleEndianWriter(UnsafeMutableRawBufferPointer(buffer))
            writer.put(UInt32(total - 8))
            writer.put(kind.rawValue)
            writer.put(epoch)
            writePayload(&writer)
            precondition(writer.offset == total - 4, "a journal record's size")
            writer.put(CRC32.checksum(writer.written))
            count = writer.offset
        }
    }

    // MARK: - Reading

    /// The index a base and its journal describe.
    struct Image {
        /// The index: the base with every commit of its epoch applied, in order; its changes
        /// cleared (``DiskIndex/clearChanges()``), so that it is the reference for the next commit.
        var index: DiskIndex
        /// The base's epoch.
        var epoch: UInt64
        /// The names the applied commits removed, changed or added, in order (a name may
        /// repeat): the base's facts about them are stale, so a build that trusts the base for
        /// a folder must look at their folders again.
        var touched: [String]
        /// The eviction policy's state the base holds, its records named by their positions in
        /// the base's entry order, which are the index's slots for the entries the commits left
        /// where they were (``DiskIndex/restorePolicy(_:capacity:)`` checks it fits).
        var policy: StoredPolicy?
    }

    /// The index the base `base` and the journal `journal` (`nil` or empty for none) describe,
    /// or `nil` when it is absent: a damaged base, or a journal whose last record of the base's
    /// epoch is not a commit, or that ends in a torn or damaged record.
    ///
    /// Nothing in either file is trusted: entries are checked as the base's are (sizes bounded,
    /// times clamped, keys mapped to their names under `keyEncoding`; an entry whose key does
    /// not map to its name is dropped, and so is the name's entry from the base), and the
    /// total the index reaches is bounded by ``IndexSnapshot/maximumTotalSize``.
    /// - Complexity: O(*n*) for the base, plus O(*c*) for the *c* changes the commits hold.
    static func load(base: [UInt8], journal: [UInt8]?, keyEncoding: KeyEncoding) -> Image? {
        guard let decoded = IndexSnapshot.decodeBase(base, keyEncoding: keyEncoding) else { return nil }
        var index = decoded.index
        let epoch = decoded.epoch
        var touched: [String] = []
        var noKeys: [String]?
        if let journal, !journal.isEmpty {
            let ok = journal.withUnsafeBytes { bytes -> Bool in
                var offset = 0
                // The kind of the last record of this epoch, and whether it ends the file.
                var last: Kind?
                var lastIsOurs = true
                while offset < bytes.count {
                    guard let record = readRecord(bytes, at: &offset) else { return false }
                    if record.kind == .commit {
                        guard bytes.count - offset >= sealSize, bytes[offset ..< offset + sealSize].allSatisfy({ $0 == 0 }) else {
                            return false
                        }
                        offset += sealSize
                    }
                    lastIsOurs = record.epoch == epoch
                    guard lastIsOurs else { continue }
                    last = record.kind
                    if record.kind == .commit {
                        guard apply(record.payload, to: &index, keyEncoding: keyEncoding, touched: &touched, keys: &noKeys) else {
                            return false
                        }
                    }
                }
                return last == nil || (last == .commit && lastIsOurs)
            }
            guard ok else { return nil }
        }
        index.clearChanges()
        return Image(index: index, epoch: epoch, touched: touched, policy: decoded.policy)
    }

    /// Reads the record at `offset` and advances past it; `nil` when it is torn or damaged.
    private static func readRecord(
        _ bytes: UnsafeRawBufferPointer, at offset: inout Int
    ) -> (kind: Kind, epoch: UInt64, payload: UnsafeRawBufferPointer)? {
        func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
            T(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: T.self))
        }
        let start = offset
        guard bytes.count - start >= recordOverhead else { return nil }
        let length = Int(load(start, UInt32.self))
        guard length >= recordOverhead - 8, length <= bytes.count - start - 8 else { return nil }
        let end = start + 4 + length
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[start ..< end])) == load(end, UInt32.self),
            let kind = Kind(rawValue: load(start + 4, UInt8.self))
        else { return nil }
        offset = end + 4
        return (kind, load(start + 5, UInt64.self), UnsafeRawBufferPointer(rebasing: bytes[start + 13 ..< end]))
    }

    /// Applies a commit's payload; `false` when it is damaged. Collects the keys of what it
    /// touched in `keys` unless that is `nil`.
    private static func apply(
        _ payload: UnsafeRawBufferPointer, to index: inout DiskIndex, keyEncoding: KeyEncoding, touched: inout [String],
        keys: inout [String]?
    ) -> Bool {
        func load<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T {
            T(littleEndian: payload.loadUnaligned(fromByteOffset: at, as: T.self))
        }
        guard payload.count >= 4 else { return false }
        var offset = 4
        for _ in 0 ..< Int(load(0, UInt32.self)) {
            guard payload.count - offset >= 2 else { return false }
            let length = Int(load(offset, UInt16.self))
            guard payload.count - offset - 2 >= length else { return false }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: payload[offset + 2 ..< offset + 2 + length]), as: UTF8.self)
            offset += 2 + length
            if keys != nil, let slot = index.slot(of: name), let key = index.key(atSlot: slot) { keys?.append(key) }
            index.removeEntry(named: name)
            touched.append(name)
        }
        guard payload.count - offset >= 16 else { return false }
        let changedCount = Int(load(offset, UInt32.self))
        let movedCount = Int(load(offset + 4, UInt32.self))
        let arenaLength = load(offset + 8, UInt64.self)
        guard
            let list = IndexSnapshot.readEntryList(
                payload, at: offset + 16, count: changedCount + movedCount, arenaLength: arenaLength),
            list.end == payload.count
        else { return false }
        for (i, slot) in list.slots.enumerated() {
            let name = DiskIndex.name(slot, in: list.arena)
            touched.append(name)
            guard IndexSnapshot.keyMapsToName(slot, arena: list.arena, keyEncoding) else {
                // A crafted entry: its record is read from its header instead.
                if keys != nil, let known = index.slot(of: name), let key = index.key(atSlot: known) { keys?.append(key) }
                index.removeEntry(named: name)
                continue
            }
            if keys != nil, let key = DiskIndex.key(slot, in: list.arena) { keys?.append(key) }
            let entry = DiskIndex.entry(slot, in: list.arena)
            if i >= changedCount {
                index.upsert(entry)
            } else if index.contains(name) {
                index.replaceKeepingPosition(entry)
            }
            // Sizes are bounded each, so the sum cannot overflow before this check.
            guard index.totalSize <= IndexSnapshot.maximumTotalSize else { return false }
        }
        return true
    }
}
