/// What the index knows of one record.
struct IndexEntry: Sendable {
    /// The record's file name.
    var name: String
    /// The original key, where the record stores it or the encoding is verbatim.
    var key: String?
    /// Bytes the record occupies on disk: its length rounded up to the block size.
    var diskSize: Int
    /// The record file's exact length, 0 when unknown (entries from a snapshot until first read).
    var fileSize: Int = 0
    /// The update time that anchors expiry, in whole seconds. For `ttl` 0 records, reads slide it.
    var updateTime: UInt64
    /// The last use, in milliseconds since the epoch.
    var lastAccessMs: UInt64
    /// Time to live in seconds, 0 for the default.
    var ttl: UInt64
    /// The lock count.
    var lockCount: UInt32
    /// Whether `updateTime` or `lastAccessMs` is newer than the record's header.
    var isAccessDirty = false

    // Links of the least-recently-used list, as slot numbers (-1 for none).
    fileprivate var previous: Int32 = -1
    fileprivate var next: Int32 = -1

    init(
        name: String, key: String?, diskSize: Int, fileSize: Int = 0, updateTime: UInt64, lastAccessMs: UInt64, ttl: UInt64,
        lockCount: UInt32, isAccessDirty: Bool = false
    ) {
        self.name = name
        self.key = key
        self.diskSize = diskSize
        self.fileSize = fileSize
        self.updateTime = updateTime
        self.lastAccessMs = lastAccessMs
        self.ttl = ttl
        self.lockCount = lockCount
        self.isAccessDirty = isAccessDirty
    }
}

/// The in-memory index of every record: a dictionary from file name to a slot in contiguous
/// storage, a second from original key to slot (so a load of a known key needs no hashing of
/// it into a file name), the slots linked in least-recently-used order, and running totals.
///
/// Every operation is O(1) except where noted; no per-entry class allocation.
struct DiskIndex: Sendable {
    private var slots: [IndexEntry] = []
    private var freeSlots: [Int32] = []
    private var positions: [String: Int32] = [:]
    private var keyPositions: [String: Int32] = [:]
    /// Entries the key dictionary does not hold: no key known, or a key another entry claims.
    private(set) var unmappedCount = 0
    private var head: Int32 = -1  // least recently used
    private var tail: Int32 = -1  // most recently used

    /// Bytes on disk, over every record.
    private(set) var totalSize = 0
    /// Bytes on disk, over locked records.
    private(set) var lockedSize = 0

    /// The number of records.
    var count: Int { positions.count }

    /// The entry for a file name.
    subscript(name: String) -> IndexEntry? {
        guard let slot = positions[name] else { return nil }
        return slots[Int(slot)]
    }

    func contains(_ name: String) -> Bool { positions[name] != nil }

    /// The slot that holds a name's entry, for several operations on it with one lookup.
    func slot(of name: String) -> Int32? { positions[name] }

    /// The slot that holds the entry stored under an original key.
    func slot(forKey key: String) -> Int32? { keyPositions[key] }

    /// The entry in a slot returned by ``slot(of:)``.
    subscript(slot slot: Int32) -> IndexEntry { slots[Int(slot)] }

    /// Changes the entry in a slot returned by ``slot(of:)``; `moveToMostRecent` also records a use.
    /// The name must not change.
    mutating func modify(slot: Int32, moveToMostRecent: Bool, _ body: (inout IndexEntry) -> Void) {
        account(slots[Int(slot)], sign: -1)
        let oldKey = slots[Int(slot)].key
        if oldKey == nil { unmapKey(of: slot) }
        body(&slots[Int(slot)])
        if oldKey == nil { mapKey(of: slot) }
        precondition(oldKey == nil || slots[Int(slot)].key == oldKey, "an entry's key does not change")
        account(slots[Int(slot)], sign: 1)
        if moveToMostRecent, slot != tail {
            unlink(slot)
            appendToTail(slot)
        }
    }

    /// Inserts or replaces an entry and makes it the most recently used.
    mutating func upsert(_ entry: IndexEntry) {
        if let slot = positions[entry.name] {
            account(slots[Int(slot)], sign: -1)
            unmapKey(of: slot)
            unlink(slot)
            slots[Int(slot)] = entry
            account(entry, sign: 1)
            mapKey(of: slot)
            appendToTail(slot)
        } else {
            let slot = allocate(entry)
            positions[entry.name] = slot
            account(entry, sign: 1)
            mapKey(of: slot)
            appendToTail(slot)
        }
    }

    /// Inserts entries older than every present one, keeping their order (least recent first).
    /// Names already present are skipped.
    /// - Complexity: O(*m*) for *m* entries.
    mutating func prependOlder(_ entries: [IndexEntry]) {
        for entry in entries.reversed() where positions[entry.name] == nil {
            let slot = allocate(entry)
            positions[entry.name] = slot
            account(entry, sign: 1)
            mapKey(of: slot)
            slots[Int(slot)].next = head
            slots[Int(slot)].previous = -1
            if head >= 0 { slots[Int(head)].previous = slot } else { tail = slot }
            head = slot
        }
    }

    /// Replaces an entry without moving it in the LRU order; an absent one is inserted as the
    /// least recently used.
    mutating func replaceKeepingPosition(_ entry: IndexEntry) {
        guard let slot = positions[entry.name] else { return prependOlder([entry]) }
        account(slots[Int(slot)], sign: -1)
        unmapKey(of: slot)
        let (previous, next) = (slots[Int(slot)].previous, slots[Int(slot)].next)
        slots[Int(slot)] = entry
        slots[Int(slot)].previous = previous
        slots[Int(slot)].next = next
        account(entry, sign: 1)
        mapKey(of: slot)
    }

    /// Changes an entry in place, if there is one; `moveToMostRecent` also records a use.
    mutating func modify(_ name: String, moveToMostRecent: Bool = false, _ body: (inout IndexEntry) -> Void) {
        guard let slot = positions[name] else { return }
        modify(slot: slot, moveToMostRecent: moveToMostRecent, body)
    }

    /// Removes an entry, returning it.
    @discardableResult
    mutating func remove(_ name: String) -> IndexEntry? {
        guard let slot = positions.removeValue(forKey: name) else { return nil }
        let entry = slots[Int(slot)]
        account(entry, sign: -1)
        unmapKey(of: slot)
        unlink(slot)
        slots[Int(slot)] = IndexEntry(name: "", key: nil, diskSize: 0, updateTime: 0, lastAccessMs: 0, ttl: 0, lockCount: 0)
        freeSlots.append(slot)
        return entry
    }

    /// Entries from least to most recently used, stopping when `body` returns `false`.
    /// - Complexity: O(*k*) for the *k* entries visited.
    func forEachLeastRecentFirst(_ body: (IndexEntry) -> Bool) {
        var slot = head
        while slot >= 0 {
            let entry = slots[Int(slot)]
            if !body(entry) { return }
            slot = entry.next
        }
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

    /// Visits the entries in slots `range` (for passes that take the lock a batch at a time);
    /// returns the next slot to visit, or `nil` at the end.
    /// - Complexity: O(*batch*).
    func forEachInSlots(from start: Int, batch: Int, _ body: (IndexEntry) -> Void) -> Int? {
        var slot = start
        let end = min(slots.count, start + batch)
        while slot < end {
            let entry = slots[slot]
            if !entry.name.isEmpty, positions[entry.name] == Int32(slot) { body(entry) }
            slot += 1
        }
        return end < slots.count ? end : nil
    }

    // MARK: - Private

    private mutating func allocate(_ entry: IndexEntry) -> Int32 {
        if let slot = freeSlots.popLast() {
            slots[Int(slot)] = entry
            return slot
        }
        slots.append(entry)
        return Int32(slots.count - 1)
    }

    /// Adds a slot's key to the key dictionary (or counts it as unmapped).
    private mutating func mapKey(of slot: Int32) {
        guard let key = slots[Int(slot)].key, keyPositions[key] == nil else {
            unmappedCount += 1
            return
        }
        keyPositions[key] = slot
    }

    /// Takes a slot's key out of the key dictionary (or out of the unmapped count).
    private mutating func unmapKey(of slot: Int32) {
        if let key = slots[Int(slot)].key, keyPositions[key] == slot {
            keyPositions[key] = nil
        } else {
            unmappedCount -= 1
        }
    }

    private mutating func account(_ entry: IndexEntry, sign: Int) {
        totalSize += sign * entry.diskSize
        if entry.lockCount > 0 { lockedSize += sign * entry.diskSize }
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

extension DiskIndex {
    /// Checks the list links and totals against the dictionary; traps on a mismatch.
    /// - Complexity: O(*n*). Called by tests.
    func _checkInvariants() {
        var seen = 0
        var size = 0
        var locked = 0
        var previous: Int32 = -1
        var slot = head
        while slot >= 0 {
            let entry = slots[Int(slot)]
            precondition(entry.previous == previous, "broken back link at \(entry.name)")
            precondition(positions[entry.name] == slot, "list entry \(entry.name) not in the dictionary")
            size += entry.diskSize
            if entry.lockCount > 0 { locked += entry.diskSize }
            seen += 1
            precondition(seen <= positions.count, "cycle in the LRU list")
            previous = slot
            slot = entry.next
        }
        precondition(previous == tail, "tail does not end the list")
        precondition(seen == positions.count, "list has \(seen) entries, dictionary \(positions.count)")
        precondition(size == totalSize && locked == lockedSize, "totals drifted")
        for (key, slot) in keyPositions {
            precondition(slots[Int(slot)].key == key && positions[slots[Int(slot)].name] == slot, "key \(key) maps to a wrong slot")
        }
        precondition(keyPositions.count + unmappedCount == positions.count, "key dictionary and unmapped count disagree")
    }
}
