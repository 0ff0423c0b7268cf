import Foundation

/// The in-memory index of every record, compact: one 56-byte ``Slot`` per record in contiguous
/// storage, the names and keys in one byte arena (a name of 64 lowercase hex digits, as every
/// SHA-256 name is, kept as its 32 bytes; a key equal to its name not kept twice), two
/// open-addressing tables of slot numbers sized to the records they hold (by name and by
/// original key, so a load of a known key needs no hashing of it into a file name), the slots
/// linked in least-recently-used order, and running totals. About 125 bytes a record at
/// 100,000 records with keys of a dozen bytes, opened from its image (`open/index-memory` in
/// BENCHMARKS.md).
///
/// The unlocked records are also queued in the order they expire (`DiskIndex+Expiry.swift`).
///
/// Every operation is O(1) (amortized, for growth and arena compaction) except where noted, and
/// except that a change lowering a record's expiry key (an insertion, an unlock, a shorter
/// `ttl`) queues it in O(log *n*); no allocation per entry.
///
/// The slots and the change log are internal rather than private only so that the index's own
/// extensions in other files (`DiskIndex+ChangeLog.swift`) reach them: nothing else changes them.
struct DiskIndex: Sendable {
    /// One record's fixed-width fields, 56 bytes.
    struct Slot: Sendable {
        /// Where the record's name, then its key, start in the arena.
        var arenaOffset: Int
        var diskSize: Int
        var updateTime: UInt64
        var lastAccessMs: UInt64
        /// The record file's exact length, 0 when unknown (entries from an image until first
        /// read, and lengths of 4 GiB or more, whose reads learn them from the file).
        var fileSize: UInt32
        var lockCount: UInt32
        var ttl: UInt32
        // Links of the least-recently-used list, as slot numbers (-1 for none).
        var previous: Int32
        var next: Int32
        /// The key's length in the arena; ``noKey`` for none, and 0 (with ``Flags/keyIsName``)
        /// when the key is the name. Keys are at most ``RecordHeader/maximumKeyLength`` bytes.
        var keyLength: UInt16
        /// The name's length in the arena (32 for a packed hex name): a file name's, at most 255.
        var nameLength: UInt8
        var flags: Flags

        static let free = Slot(
            arenaOffset: 0, diskSize: 0, updateTime: 0, lastAccessMs: 0, fileSize: 0, lockCount: 0, ttl: 0, previous: -1, next: -1,
            keyLength: 0, nameLength: 0, flags: [])

        /// A file length as a slot keeps it: 0 (unknown) for one that does not fit in 32 bits.
        static func storedFileSize(_ fileSize: Int) -> UInt32 {
            UInt32(exactly: fileSize) ?? 0
        }
    }

    /// A slot's flags.
    struct Flags: OptionSet, Sendable {
        let rawValue: UInt8
        /// The slot holds a record.
        static let occupied = Flags(rawValue: 1)
        /// The name is 64 lowercase hex digits, kept as the 32 bytes they spell.
        static let hexName = Flags(rawValue: 2)
        /// The key is the name (verbatim encoding); the arena holds it once.
        static let keyIsName = Flags(rawValue: 4)
        /// The entry's access times are newer than its header's.
        static let accessDirty = Flags(rawValue: 8)
        /// Moved to the most recent end (a use, a store) since ``takeChanges()``.
        static let movedSinceTaken = Flags(rawValue: 16)
        /// Changed in place (a lock count) since ``takeChanges()``.
        static let changedSinceTaken = Flags(rawValue: 32)
        /// Taken from the expiry queues by a collection (``takeExpired(by:now:limit:)``) and not
        /// queued again yet: its other elements there are skipped.
        static let takenForExpiry = Flags(rawValue: 64)
        /// The entry's fields are what this process wrote to the record's header or read from
        /// it (a store, a load): a collection removes the record on the index's word, without
        /// looking at the file first. Entries taken in from a snapshot, its journal or a listing
        /// do not have it until a use (see `DiskCache.removeVictim`). Never persisted.
        static let headerVerified = Flags(rawValue: 128)
    }

    static let noKey = UInt16.max

    /// The longest name a slot keeps: a file name's.
    static let maximumNameLength = Int(UInt8.max)

    var slots: [Slot] = []
    private(set) var arena: [UInt8] = []
    /// Arena bytes no slot refers to any more; reclaimed when they outweigh the live ones.
    private var arenaGarbage = 0
    private var freeSlots: [Int32] = []
    /// Untagged: names are looked up off the read path (collections, removals, imports), and
    /// tags on both tables would cost 5 bytes a record at 100,000 (``SlotTable``).
    private(set) var byName = SlotTable(tagged: false)
    private(set) var byKey = SlotTable(tagged: true)
    /// Entries the key table does not hold: no key known, or a key another entry claims.
    private(set) var unmappedCount = 0
    private(set) var head: Int32 = -1  // least recently used
    private(set) var tail: Int32 = -1  // most recently used

    /// Bytes on disk, over every record.
    private(set) var totalSize = 0
    /// Bytes on disk, over locked records.
    private(set) var lockedSize = 0
    /// The number of records.
    private(set) var count = 0
    /// What changed since ``takeChanges()``, for the index journal (see `DiskIndex+Changes`).
    var changes = ChangeLog()
    /// The unlocked records in the order they expire, so that a collection finds the expired
    /// ones without visiting every slot (see `DiskIndex+Expiry.swift`).
    var expiry = ExpiryQueues()
    /// The adaptive eviction policy over the unlocked records, `nil` under LRU (the list above is
    /// then the eviction order); see `DiskIndex+Policy.swift`.
    var policy: DiskAdaptivePolicy?
    /// Unlocked records the policy does not hold yet (new, unlocked or resized since), in the
    /// order they came; ``admitToPolicy()`` inserts them. Only those in ``awaitingSlots`` count:
    /// a slot removed meanwhile stays here until then, so that a removal costs O(1).
    var awaitingAdmission: [Int32] = []
    var awaitingSlots: Set<Int32> = []
    /// Records the policy evicted (or refused) that are still to be removed; likewise only those
    /// in ``victimSlots`` count.
    var policyVictims: [Int32] = []
    var victimSlots: Set<Int32> = []

    init() {}

    /// Room for `capacity` records and `arenaBytes` of names and keys without growing the slots
    /// and the arena (reserved, not touched: what is never filled costs no resident memory).
    mutating func reserveCapacity(_ capacity: Int, arenaBytes: Int) {
        slots.reserveCapacity(capacity)
        arena.reserveCapacity(arenaBytes)
    }

    // MARK: - Lookups

    /// The entry for a file name.
    subscript(name: String) -> IndexEntry? {
        guard let slot = slot(of: name) else { return nil }
        return self[slot: slot]
    }

    func contains(_ name: String) -> Bool { slot(of: name) != nil }

    /// The slot that holds a name's entry, for several operations on it with one lookup.
    func slot(of name: String) -> Int32? {
        PackedName.with(name) { packed in findName(packed).slot }
    }

    /// Whether `slot` still holds the entry named `name`: a slot found by an earlier lookup,
    /// checked again by comparing the name with the one stored, without hashing it (the entry
    /// may have been removed and its slot reused since).
    func slot(_ slot: Int32, holds name: String) -> Bool {
        guard slot >= 0, Int(slot) < slots.count else { return false }
        let s = slots[Int(slot)]
        guard s.flags.contains(.occupied) else { return false }
        var name = name
        return name.withUTF8 { utf8 in
            PackedName.stored(s, in: arena) { packed in
                packed.isHex ? PackedName.spells(packed.bytes, hex: UnsafeRawBufferPointer(utf8)) : packed.bytes.elementsEqual(utf8)
            }
        }
    }

    /// A slot found by a lookup and the name it held then, so that a later check that it still
    /// holds that name (`slot(_:holds:)` with the mark) compares 32 bytes instead of spelling a
    /// hashed name out in hex, which costs about a tenth of a hit on a kept record
    /// (`larder-bench disk`, `load-4k-zipf`).
    struct SlotMark: Sendable {
        /// The slot.
        var slot: Int32
        /// A hashed name's 32 bytes as the slot stored them; `nil` for a name stored as text.
        fileprivate var digest: (UInt64, UInt64, UInt64, UInt64)?
    }

    /// `slot` and the name it holds now.
    func mark(ofSlot slot: Int32) -> SlotMark {
        let s = slots[Int(slot)]
        guard s.flags.contains(.hexName), s.nameLength == 32 else { return SlotMark(slot: slot, digest: nil) }
        return arena.withUnsafeBytes { bytes in
            let at = s.arenaOffset
            return SlotMark(
                slot: slot,
                digest: (
                    bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self),
                    bytes.loadUnaligned(fromByteOffset: at + 16, as: UInt64.self),
                    bytes.loadUnaligned(fromByteOffset: at + 24, as: UInt64.self)
                ))
        }
    }

    /// The name the slot of `mark` held when marked: its 32 bytes for a hashed name (no string
    /// built), else its text.
    func name(of mark: SlotMark) -> RecordName {
        if let digest = mark.digest { return RecordName(digest: digest) }
        return RecordName(name(atSlot: mark.slot))
    }

    /// Whether the slot of `mark` still holds the name it held when marked, which is `name`.
    func slot(_ mark: SlotMark, holds name: @autoclosure () -> String) -> Bool {
        guard let digest = mark.digest else { return slot(mark.slot, holds: name()) }
        let slot = mark.slot
        guard slot >= 0, Int(slot) < slots.count else { return false }
        let s = slots[Int(slot)]
        guard s.flags.contains(.occupied), s.flags.contains(.hexName), s.nameLength == 32 else { return false }
        return arena.withUnsafeBytes { bytes in
            let at = s.arenaOffset
            return bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self) == digest.0
                && bytes.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self) == digest.1
                && bytes.loadUnaligned(fromByteOffset: at + 16, as: UInt64.self) == digest.2
                && bytes.loadUnaligned(fromByteOffset: at + 24, as: UInt64.self) == digest.3
        }
    }

    /// The slot that holds the entry stored under an original key.
    func slot(forKey key: String) -> Int32? {
        var key = key
        return key.withUTF8 { findKey(UnsafeRawBufferPointer($0)).slot }
    }

    /// The entry in a slot returned by ``slot(of:)``.
    subscript(slot slot: Int32) -> IndexEntry { Self.entry(slots[Int(slot)], in: arena) }

    /// The file name of the entry in a slot.
    func name(atSlot slot: Int32) -> String { Self.name(slots[Int(slot)], in: arena) }

    /// The original key of the entry in a slot, if known.
    func key(atSlot slot: Int32) -> String? { Self.key(slots[Int(slot)], in: arena) }

    /// The entry a slot describes, its bytes in `arena`.
    static func entry(_ s: Slot, in arena: [UInt8]) -> IndexEntry {
        IndexEntry(
            name: name(s, in: arena), key: key(s, in: arena), diskSize: s.diskSize, fileSize: Int(s.fileSize), updateTime: s.updateTime,
            lastAccessMs: s.lastAccessMs, ttl: UInt64(s.ttl), lockCount: s.lockCount, isAccessDirty: s.flags.contains(.accessDirty))
    }

    static func name(_ s: Slot, in arena: [UInt8]) -> String {
        arena.withUnsafeBytes { bytes in
            let stored = UnsafeRawBufferPointer(rebasing: bytes[s.arenaOffset ..< s.arenaOffset + Int(s.nameLength)])
            return s.flags.contains(.hexName) ? PackedName.hex(stored) : String(decoding: stored, as: UTF8.self)
        }
    }

    static func key(_ s: Slot, in arena: [UInt8]) -> String? {
        if s.flags.contains(.keyIsName) { return name(s, in: arena) }
        guard s.keyLength != noKey else { return nil }
        let start = s.arenaOffset + Int(s.nameLength)
        return arena.withUnsafeBytes { String(decoding: $0[start ..< start + Int(s.keyLength)], as: UTF8.self) }
    }

    /// Packs entries into slots (in order, unlinked) and their arena, as ``IndexSnapshot``
    /// writes them; names are not checked for repeats.
    static func pack(_ entries: [IndexEntry]) -> (slots: [Slot], arena: [UInt8]) {
        var index = DiskIndex()
        for entry in entries {
            var s = Slot.free
            PackedName.with(entry.name) { packed in
                s.arenaOffset = index.arena.count
                precondition(packed.bytes.count <= maximumNameLength, "a record's name is a file name: at most 255 bytes")
                s.nameLength = UInt8(packed.bytes.count)
                s.flags = packed.isHex ? [.occupied, .hexName] : [.occupied]
                index.arena.append(contentsOf: packed.bytes)
            }
            s.keyLength = noKey
            s.diskSize = entry.diskSize
            s.updateTime = entry.updateTime
            s.lastAccessMs = entry.lastAccessMs
            s.ttl = UInt32(clamping: entry.ttl)
            s.lockCount = entry.lockCount
            index.slots.append(s)
            if let key = entry.key { index.appendKey(key, of: Int32(index.slots.count - 1)) }
        }
        return (index.slots, index.arena)
    }

    /// The file length known for the entry in a slot (0 when unknown).
    func fileSize(atSlot slot: Int32) -> Int { Int(slots[Int(slot)].fileSize) }

    /// The update time of the entry in a slot.
    func updateTime(atSlot slot: Int32) -> UInt64 { slots[Int(slot)].updateTime }

    /// The update time of a name's entry.
    func updateTime(of name: String) -> UInt64? {
        slot(of: name).map { slots[Int($0)].updateTime }
    }

    // MARK: - Changes

    /// Changes the entry in a slot returned by ``slot(of:)``; `moveToMostRecent` also records a use.
    /// The name must not change; the key may only be set where there was none.
    mutating func modify(slot: Int32, moveToMostRecent: Bool, _ body: (inout IndexEntry) -> Void) {
        var entry = self[slot: slot]
        let (oldName, oldKey) = (entry.name, entry.key)
        body(&entry)
        precondition(entry.name == oldName, "an entry's name does not change")
        precondition(oldKey == nil || entry.key == oldKey, "an entry's key does not change")
        if oldKey == nil, let key = entry.key { setKey(key, of: slot) }
        setFields(of: slot, from: entry)
        if moveToMostRecent, slot != tail {
            unlink(slot)
            appendToTail(slot)
        }
        if moveToMostRecent { markMoved(slot) } else { markChanged(slot) }
        if moveToMostRecent, policy != nil { notePolicyUse(of: slot) }
    }

    /// What a use sets in an entry: the fields a record's header vouches for, and its key
    /// (an ``IndexEntry`` without the name, which a use does not change, nor builds).
    struct Use {
        var key: String?
        var diskSize: Int
        var updateTime: UInt64
        var lastAccessMs: UInt64
        var ttl: UInt64
        var lockCount: UInt32
    }

    /// Records a use of the entry in a slot (a read or a touch) and makes it the most recently
    /// used: the fields a header vouches for, a key where none was known, and `fileSize` as
    /// `vouch` computes it from the entry's present one.
    /// - Returns: Whether the entry's access times became dirty (they were clean before).
    mutating func recordUse(
        slot: Int32, from entry: IndexEntry, fileSize vouch: (Int) -> Int, marksAccessDirty: Bool
    ) -> Bool {
        let use = Use(
            key: entry.key, diskSize: entry.diskSize, updateTime: entry.updateTime, lastAccessMs: entry.lastAccessMs, ttl: entry.ttl,
            lockCount: entry.lockCount)
        return recordUse(slot: slot, use, fileSize: vouch, marksAccessDirty: marksAccessDirty)
    }

    /// ``recordUse(slot:from:fileSize:marksAccessDirty:)`` with the use's fields alone.
    mutating func recordUse(slot: Int32, _ use: Use, fileSize vouch: (Int) -> Int, marksAccessDirty: Bool) -> Bool {
        if slots[Int(slot)].keyLength == Self.noKey, !slots[Int(slot)].flags.contains(.keyIsName), let key = use.key {
            setKey(key, of: slot)
        }
        let wasDirty = slots[Int(slot)].flags.contains(.accessDirty)
        setFields(
            of: slot, diskSize: use.diskSize, fileSize: vouch(Int(slots[Int(slot)].fileSize)), updateTime: use.updateTime,
            lastAccessMs: use.lastAccessMs, ttl: use.ttl, lockCount: use.lockCount, isAccessDirty: wasDirty || marksAccessDirty)
        if slot != tail {
            unlink(slot)
            appendToTail(slot)
        }
        markMoved(slot)
        if policy != nil { notePolicyUse(of: slot) }
        return marksAccessDirty && !wasDirty
    }

    /// Inserts or replaces an entry and makes it the most recently used.
    /// - Returns: Its slot.
    @discardableResult
    mutating func upsert(_ entry: IndexEntry) -> Int32 {
        if let slot = slot(of: entry.name) {
            replace(slot: slot, with: entry)
            unlink(slot)
            appendToTail(slot)
            markMoved(slot)
            if policy != nil { notePolicyUse(of: slot) }
            return slot
        } else {
            let slot = insert(entry)
            appendToTail(slot)
            markMoved(slot)
            return slot
        }
    }

    /// Inserts entries older than every present one, keeping their order (least recent first).
    /// Names already present are skipped.
    /// - Complexity: O(*m*) for *m* entries.
    mutating func prependOlder(_ entries: [IndexEntry]) {
        for entry in entries.reversed() where !contains(entry.name) {
            // An insertion the journal's moves cannot describe.
            changes.needsImage = true
            let slot = insert(entry)
            slots[Int(slot)].next = head
            slots[Int(slot)].previous = -1
            if head >= 0 { slots[Int(head)].previous = slot } else { tail = slot }
            head = slot
        }
    }

    /// Replaces an entry without moving it in the LRU order; an absent one is inserted as the
    /// least recently used.
    mutating func replaceKeepingPosition(_ entry: IndexEntry) {
        guard let slot = slot(of: entry.name) else { return prependOlder([entry]) }
        replace(slot: slot, with: entry)
        markChanged(slot)
    }

    /// Changes an entry in place, if there is one; `moveToMostRecent` also records a use.
    mutating func modify(_ name: String, moveToMostRecent: Bool = false, _ body: (inout IndexEntry) -> Void) {
        guard let slot = slot(of: name) else { return }
        modify(slot: slot, moveToMostRecent: moveToMostRecent, body)
    }

    /// Sets or clears the access-dirty flag of a name's entry.
    mutating func setAccessDirty(_ name: String, _ isDirty: Bool) {
        guard let slot = slot(of: name) else { return }
        if isDirty { slots[Int(slot)].flags.insert(.accessDirty) } else { slots[Int(slot)].flags.remove(.accessDirty) }
    }

    /// Whether the entry in `slot` is vouched for by its header in this process (``Flags/headerVerified``).
    func isHeaderVerified(slot: Int32) -> Bool { slots[Int(slot)].flags.contains(.headerVerified) }

    /// Sets or clears flags of the slot at `slot` (for the facets kept in other files).
    mutating func setFlags(_ flags: Flags, _ isOn: Bool, atSlot slot: Int32) {
        if isOn { slots[Int(slot)].flags.formUnion(flags) } else { slots[Int(slot)].flags.subtract(flags) }
    }

    /// Sets the lock count of a name's entry.
    mutating func setLockCount(_ name: String, _ lockCount: UInt32) {
        guard let slot = slot(of: name) else { return }
        let expiring = Self.expiryPosition(slots[Int(slot)])
        account(slot, sign: -1)
        slots[Int(slot)].lockCount = lockCount
        account(slot, sign: 1)
        noteExpiryChange(of: slot, from: expiring)
        notePolicyChange(of: slot)
        markChanged(slot)
    }

    /// Removes a name's entry without building it (its name and key as strings), for callers
    /// that only drop it; whether there was one.
    @discardableResult
    mutating func removeEntry(named name: String) -> Bool {
        guard let slot = slot(of: name) else { return false }
        removeSlot(slot)
        return true
    }

    /// Removes an entry, returning it.
    @discardableResult
    mutating func remove(_ name: String) -> IndexEntry? {
        guard let slot = slot(of: name) else { return nil }
        let entry = self[slot: slot]
        removeSlot(slot)
        return entry
    }

    /// Removes the entry in a slot.
    mutating func removeSlot(_ slot: Int32) {
        noteRemoval(slot)
        notePolicyRemoval(of: slot)
        account(slot, sign: -1)
        unmapKey(of: slot)
        let found = PackedName.stored(slots[Int(slot)], in: arena) { packed in findName(packed) }
        precondition(found.slot == slot, "a slot's name maps to another slot")
        byName.remove(at: found.bucket)
        unlink(slot)
        discardArenaBytes(of: slot)
        slots[Int(slot)] = .free
        freeSlots.append(slot)
        count -= 1
    }

    /// Orders the LRU list by last access, least recent first (an index built from headers).
    /// - Complexity: O(*n* log *n*).
    mutating func sortByLastAccess() {
        var order: [Int32] = []
        order.reserveCapacity(count)
        var slot = head
        while slot >= 0 {
            order.append(slot)
            slot = slots[Int(slot)].next
        }
        order.sort { slots[Int($0)].lastAccessMs < slots[Int($1)].lastAccessMs }
        changes.needsImage = true
        head = -1
        tail = -1
        for slot in order { appendToTail(slot) }
    }

    // MARK: - Traversal

    /// Calls `body` with each occupied slot, least recently used first, until it returns
    /// `false`: for a walk that needs a few fields of each, not the whole entry (its name and
    /// key spelled out as strings).
    /// - Complexity: O(*k*) for the *k* slots visited.
    func forEachSlotLeastRecentFirst(_ body: (Int32) -> Bool) {
        var slot = head
        while slot >= 0 {
            if !body(slot) { return }
            slot = slots[Int(slot)].next
        }
    }

    /// Entries from least to most recently used, stopping when `body` returns `false`.
    /// - Complexity: O(*k*) for the *k* entries visited.
    func forEachLeastRecentFirst(_ body: (IndexEntry) -> Bool) {
        forEachSlotLeastRecentFirst { body(self[slot: $0]) }
    }

    /// Every entry, least recently used first.
    /// - Complexity: O(*n*).
    var entriesLeastRecentFirst: [IndexEntry] {
        var result: [IndexEntry] = []
        result.reserveCapacity(count)
        forEachLeastRecentFirst {
            result.append($0)
            return true
        }
        return result
    }

    // MARK: - Private: slots

    private mutating func insert(_ entry: IndexEntry) -> Int32 {
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            precondition(slots.count < Int(Int32.max), "the index holds at most 2^31 - 1 records")
            slot = Int32(slots.count)
            slots.append(.free)
        }
        PackedName.with(entry.name) { packed in
            slots[Int(slot)].arenaOffset = arena.count
            precondition(packed.bytes.count <= Self.maximumNameLength, "a record's name is a file name: at most 255 bytes")
            slots[Int(slot)].nameLength = UInt8(packed.bytes.count)
            slots[Int(slot)].flags = packed.isHex ? [.occupied, .hexName] : [.occupied]
            arena.append(contentsOf: packed.bytes)
        }
        growTablesIfNeeded()
        let found = PackedName.stored(slots[Int(slot)], in: arena) { findName($0) }
        precondition(found.slot == nil, "a name is inserted once")
        byName.insert(slot, at: found)
        slots[Int(slot)].keyLength = Self.noKey
        slots[Int(slot)].previous = -1
        slots[Int(slot)].next = -1
        count += 1
        if let key = entry.key { appendKey(key, of: slot) }
        mapKey(of: slot)
        setFields(of: slot, from: entry, isNew: true)
        return slot
    }

    /// Replaces the fields and key of a present entry; its name and place stay.
    private mutating func replace(slot: Int32, with entry: IndexEntry) {
        if entry.key != key(atSlot: slot) {
            unmapKey(of: slot)
            discardKeyBytes(of: slot)
            if let key = entry.key { appendKey(key, of: slot) }
            mapKey(of: slot)
        }
        setFields(of: slot, from: entry)
    }

    /// Gives a keyless entry its key.
    private mutating func setKey(_ key: String, of slot: Int32) {
        unmapKey(of: slot)
        discardKeyBytes(of: slot)
        appendKey(key, of: slot)
        mapKey(of: slot)
    }

    private mutating func setFields(of slot: Int32, from entry: IndexEntry, isNew: Bool = false) {
        setFields(
            of: slot, diskSize: entry.diskSize, fileSize: entry.fileSize, updateTime: entry.updateTime, lastAccessMs: entry.lastAccessMs,
            ttl: entry.ttl, lockCount: entry.lockCount, isAccessDirty: entry.isAccessDirty, isNew: isNew)
    }

    private mutating func setFields(
        of slot: Int32, diskSize: Int, fileSize: Int, updateTime: UInt64, lastAccessMs: UInt64, ttl: UInt64, lockCount: UInt32,
        isAccessDirty: Bool, isNew: Bool = false
    ) {
        let expiring = isNew ? nil : Self.expiryPosition(slots[Int(slot)])
        account(slot, sign: -1)
        slots[Int(slot)].diskSize = diskSize
        slots[Int(slot)].fileSize = Slot.storedFileSize(fileSize)
        slots[Int(slot)].updateTime = updateTime
        slots[Int(slot)].lastAccessMs = lastAccessMs
        slots[Int(slot)].ttl = UInt32(clamping: ttl)
        slots[Int(slot)].lockCount = lockCount
        if isAccessDirty { slots[Int(slot)].flags.insert(.accessDirty) } else { slots[Int(slot)].flags.remove(.accessDirty) }
        account(slot, sign: 1)
        noteExpiryChange(of: slot, from: expiring)
        notePolicyChange(of: slot)
    }

    // MARK: - Private: the arena

    /// Puts a key in the arena after the slot's name: in place when the name ends the arena,
    /// else with the name copied to the end first (the old copy becomes garbage).
    private mutating func appendKey(_ key: String, of slot: Int32) {
        let s = slots[Int(slot)]
        var key = key
        let isName =
            !s.flags.contains(.hexName)
            && key.withUTF8 { utf8 in
                arena.withUnsafeBytes { $0[s.arenaOffset ..< s.arenaOffset + Int(s.nameLength)].elementsEqual(utf8) }
            }
        if isName {
            slots[Int(slot)].keyLength = 0
            slots[Int(slot)].flags.insert(.keyIsName)
            return
        }
        let nameEnd = s.arenaOffset + Int(s.nameLength)
        if nameEnd != arena.count {
            let offset = arena.count
            let nameBytes = Array(arena[s.arenaOffset ..< nameEnd])
            arena.append(contentsOf: nameBytes)
            arenaGarbage += Int(s.nameLength)
            slots[Int(slot)].arenaOffset = offset
        }
        let length = key.utf8.count
        precondition(length < Int(Self.noKey), "a key is at most \(RecordHeader.maximumKeyLength) bytes")
        arena.append(contentsOf: key.utf8)
        slots[Int(slot)].keyLength = UInt16(length)
    }

    /// Marks a slot's key bytes as garbage and the slot keyless.
    private mutating func discardKeyBytes(of slot: Int32) {
        let s = slots[Int(slot)]
        if s.keyLength != Self.noKey, !s.flags.contains(.keyIsName) { arenaGarbage += Int(s.keyLength) }
        slots[Int(slot)].keyLength = Self.noKey
        slots[Int(slot)].flags.remove(.keyIsName)
    }

    private mutating func discardArenaBytes(of slot: Int32) {
        discardKeyBytes(of: slot)
        arenaGarbage += Int(slots[Int(slot)].nameLength)
        if arenaGarbage > 4096, arenaGarbage > arena.count / 2 { compactArena() }
    }

    private static func storedKeyLength(_ s: Slot) -> Int {
        s.keyLength == noKey || s.flags.contains(.keyIsName) ? 0 : Int(s.keyLength)
    }

    /// Copies the live bytes to a new arena, in slot order, and shrinks the free list's slack.
    /// - Complexity: O(*n*); amortized over the removals that made the garbage.
    private mutating func compactArena() {
        var live = 0
        for s in slots where s.flags.contains(.occupied) { live += Int(s.nameLength) + Self.storedKeyLength(s) }
        var fresh: [UInt8] = []
        fresh.reserveCapacity(live)
        arena.withUnsafeBytes { old in
            for slot in slots.indices where slots[slot].flags.contains(.occupied) {
                let s = slots[slot]
                let length = Int(s.nameLength) + Self.storedKeyLength(s)
                let offset = fresh.count
                fresh.append(contentsOf: old[s.arenaOffset ..< s.arenaOffset + length])
                slots[slot].arenaOffset = offset
            }
        }
        arena = fresh
        arenaGarbage = 0
    }

    // MARK: - Private: the tables

    private func findName(_ packed: PackedName) -> SlotTable.Probe {
        let hash = packed.hashValue
        return arena.withUnsafeBytes { bytes in
            byName.find(hash: hash) { slot in
                let s = slots[Int(slot)]
                return s.flags.contains(.hexName) == packed.isHex && Int(s.nameLength) == packed.bytes.count
                    && Self.equal(bytes.baseAddress! + s.arenaOffset, packed.bytes)
            }
        }
    }

    private func findKey(_ key: UnsafeRawBufferPointer) -> SlotTable.Probe {
        let hash = Self.keyHash(key)
        return arena.withUnsafeBytes { bytes in
            byKey.find(hash: hash) { slot in
                let range = Self.keyRange(of: slots[Int(slot)])
                return range.count == key.count && (key.isEmpty || Self.equal(bytes.baseAddress! + range.lowerBound, key))
            }
        }
    }

    /// Whether the bytes at `stored` are those of `bytes` (not empty).
    private static func equal(_ stored: UnsafeRawPointer, _ bytes: UnsafeRawBufferPointer) -> Bool {
        memcmp(stored, bytes.baseAddress!, bytes.count) == 0
    }

    /// Where a slot's key lies in the arena (empty for none).
    static func keyRange(of s: Slot) -> Range<Int> {
        if s.flags.contains(.keyIsName) { return s.arenaOffset ..< s.arenaOffset + Int(s.nameLength) }
        if s.keyLength == Self.noKey { return 0 ..< 0 }
        let start = s.arenaOffset + Int(s.nameLength)
        return start ..< start + Int(s.keyLength)
    }

    private func hasKey(_ s: Slot) -> Bool { s.keyLength != Self.noKey || s.flags.contains(.keyIsName) }

    static func keyHash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        return hasher.finalize()
    }

    private func keyHash(ofSlot slot: Int32) -> Int {
        let range = Self.keyRange(of: slots[Int(slot)])
        return arena.withUnsafeBytes { Self.keyHash(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    private func nameHash(ofSlot slot: Int32) -> Int {
        PackedName.stored(slots[Int(slot)], in: arena) { $0.hashValue }
    }

    /// Adds a slot's key to the key table (or counts it as unmapped).
    private mutating func mapKey(of slot: Int32) {
        guard hasKey(slots[Int(slot)]) else {
            unmappedCount += 1
            return
        }
        let found = arena.withUnsafeBytes { bytes in
            findKey(UnsafeRawBufferPointer(rebasing: bytes[Self.keyRange(of: slots[Int(slot)])]))
        }
        guard found.slot == nil else {
            unmappedCount += 1
            return
        }
        if byKey.needsGrowth {
            rebuildTables(minimumCapacity: count)
            let probe = arena.withUnsafeBytes { bytes in
                findKey(UnsafeRawBufferPointer(rebasing: bytes[Self.keyRange(of: slots[Int(slot)])]))
            }
            byKey.insert(slot, at: probe)
        } else {
            byKey.insert(slot, at: found)
        }
    }

    /// Takes a slot's key out of the key table (or out of the unmapped count).
    private mutating func unmapKey(of slot: Int32) {
        if hasKey(slots[Int(slot)]) {
            let found = arena.withUnsafeBytes { bytes in
                findKey(UnsafeRawBufferPointer(rebasing: bytes[Self.keyRange(of: slots[Int(slot)])]))
            }
            if found.slot == slot {
                byKey.remove(at: found.bucket)
                return
            }
        }
        unmappedCount -= 1
    }

    private mutating func growTablesIfNeeded() {
        if byName.needsGrowth { rebuildTables(minimumCapacity: count + 1) }
    }

    /// Builds both tables again, without tombstones, with room for half as many records again as
    /// `minimumCapacity` (so that growth costs O(1) amortized a record).
    /// - Complexity: O(*n*).
    private mutating func rebuildTables(minimumCapacity: Int) {
        let capacity = SlotTable.grownCapacity(for: max(minimumCapacity, count))
        var names = SlotTable(capacity: capacity, tagged: false)
        var keys = SlotTable(capacity: capacity, tagged: true)
        for slot in byName.slots { names.insertNew(slot, hash: nameHash(ofSlot: slot)) }
        for slot in byKey.slots { keys.insertNew(slot, hash: keyHash(ofSlot: slot)) }
        byName = names
        byKey = keys
    }

    /// Builds the tables from the slots (after ``IndexSnapshot`` filled them): the first entry
    /// with a name wins, and later ones with the same name are removed. The tables get room for
    /// an eighth more records, so that the first stores after an open do not rebuild them (a
    /// pause of O(*n*) on one store) at the cost of about 1.5 bytes a record.
    /// - Complexity: O(*n*).
    mutating func buildTables(keepingFirstOf order: Range<Int32>) {
        let capacity = SlotTable.capacity(for: count + count / 8)
        byName = SlotTable(capacity: capacity, tagged: false)
        byKey = SlotTable(capacity: capacity, tagged: true)
        unmappedCount = 0
        var duplicates: [Int32] = []
        for slot in order {
            let found = PackedName.stored(slots[Int(slot)], in: arena) { findName($0) }
            guard found.slot == nil else {
                duplicates.append(slot)
                continue
            }
            byName.insert(slot, at: found)
            if hasKey(slots[Int(slot)]) {
                let key = arena.withUnsafeBytes { bytes in
                    findKey(UnsafeRawBufferPointer(rebasing: bytes[Self.keyRange(of: slots[Int(slot)])]))
                }
                if key.slot == nil { byKey.insert(slot, at: key) } else { unmappedCount += 1 }
            } else {
                unmappedCount += 1
            }
        }
        for slot in duplicates {
            // Not in the name table: unlinked and freed by hand.
            account(slot, sign: -1)
            unlink(slot)
            arenaGarbage += Int(slots[Int(slot)].nameLength) + Self.storedKeyLength(slots[Int(slot)])
            slots[Int(slot)] = .free
            freeSlots.append(slot)
            count -= 1
        }
    }

    /// Fills the index from slots in least-recently-used order (the arena offsets refer to
    /// `arena`), linking and counting them; ``buildTables(keepingFirstOf:)`` follows.
    mutating func load(slots loaded: consuming [Slot], arena bytes: consuming [UInt8]) {
        slots = consume loaded
        arena = consume bytes
        count = slots.count
        totalSize = 0
        lockedSize = 0
        for i in slots.indices {
            slots[i].previous = Int32(i) - 1
            slots[i].next = i + 1 < slots.count ? Int32(i + 1) : -1
            account(Int32(i), sign: 1)
        }
        head = slots.isEmpty ? -1 : 0
        tail = slots.isEmpty ? -1 : Int32(slots.count - 1)
        buildTables(keepingFirstOf: 0 ..< Int32(slots.count))
        changes = ChangeLog()
        rebuildExpiryQueues()
    }

    // MARK: - Private: totals and links

    private mutating func account(_ slot: Int32, sign: Int) {
        let s = slots[Int(slot)]
        totalSize += sign * s.diskSize
        if s.lockCount > 0 { lockedSize += sign * s.diskSize }
    }

    private mutating func unlink(_ slot: Int32) {
        let previous = slots[Int(slot)].previous
        let next = slots[Int(slot)].next
        if previous >= 0 { slots[Int(previous)].next = next } else { head = next }
        if next >= 0 { slots[Int(next)].previous = previous } else { tail = previous }
        slots[Int(slot)].previous = -1
        slots[Int(slot)].next = -1
    }

    private mutating func appendToTail(_ slot: Int32) {
        slots[Int(slot)].previous = tail
        slots[Int(slot)].next = -1
        if tail >= 0 { slots[Int(tail)].next = slot } else { head = slot }
        tail = slot
    }
}
