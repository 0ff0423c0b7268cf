// The changes since the index journal last took them: what a journal append writes instead of
// a whole image.

extension DiskIndex {
    /// What changed since ``takeChanges()`` beyond the slots' own flags.
    struct ChangeLog: Sendable {
        /// Names removed, in order (a name may repeat).
        var removed: [String] = []
        /// Slots changed in place, in order (a slot may repeat, or be free or moved since).
        var changedSlots: [Int32] = []
        /// Slots flagged ``Flags/movedSinceTaken``.
        var movedCount = 0
        /// An order change other than moves to the most recent end (an insertion among older
        /// entries, a sort), or more removals than are worth listing: the changes cannot be
        /// replayed, so the next image must be the whole index.
        var needsImage = false
    }

    /// The changes since the last ``takeChanges()``, as a journal commit replays them: the
    /// names removed, the entries changed in place (their place kept), then the entries moved
    /// to the most recent end or inserted there, least recently used first. Applied in that
    /// order to the index as it was at the last call, they give the index as it is.
    struct Changes {
        var removed: [String]
        var changedInPlace: [IndexEntry]
        var moved: [IndexEntry]

        var isEmpty: Bool { removed.isEmpty && changedInPlace.isEmpty && moved.isEmpty }
    }

    /// The changes since the last call (or since ``load(slots:arena:)``), and starts anew; `nil`
    /// when they cannot be replayed (``ChangeLog/needsImage``), so the caller writes the whole
    /// index instead.
    /// - Complexity: O(*c*) for the *c* changes; O(*n*) when it returns `nil`.
    mutating func takeChanges() -> Changes? {
        defer { clearChanges() }
        guard !changes.needsImage else { return nil }
        // Moved slots end the list: every move goes to the most recent end, and nothing else
        // moves an entry (an insertion among older ones sets `needsImage`).
        var moved: [IndexEntry] = []
        var slot = tail
        while slot >= 0, slots[Int(slot)].flags.contains(.movedSinceTaken) {
            moved.append(self[slot: slot])
            slot = slots[Int(slot)].previous
        }
        guard moved.count == changes.movedCount else { return nil }
        var changedInPlace: [IndexEntry] = []
        for slot in changes.changedSlots where slots[Int(slot)].flags.contains(.changedSinceTaken) {
            slots[Int(slot)].flags.remove(.changedSinceTaken)
            if !slots[Int(slot)].flags.contains(.movedSinceTaken) { changedInPlace.append(self[slot: slot]) }
        }
        return Changes(removed: changes.removed, changedInPlace: changedInPlace, moved: moved.reversed())
    }

    /// Forgets the changes since ``takeChanges()``: the index as it is becomes the reference
    /// (a whole image of it was written, or it was loaded from one).
    /// - Complexity: O(*c*) for the *c* changes; O(*n*) after an order change.
    mutating func clearChanges() {
        if changes.needsImage || changes.movedCount > 0 && !clearMovedAtTail() {
            for i in slots.indices { slots[i].flags.subtract([.movedSinceTaken, .changedSinceTaken]) }
        } else {
            for slot in changes.changedSlots { slots[Int(slot)].flags.remove(.changedSinceTaken) }
        }
        changes = ChangeLog()
    }

    /// Whether the changes can be replayed, without taking them.
    var changesNeedImage: Bool { changes.needsImage }

    /// Clears the moved flags of the run that ends the list; whether it held every moved slot.
    private mutating func clearMovedAtTail() -> Bool {
        var cleared = 0
        var slot = tail
        while slot >= 0, slots[Int(slot)].flags.contains(.movedSinceTaken) {
            slots[Int(slot)].flags.remove(.movedSinceTaken)
            cleared += 1
            slot = slots[Int(slot)].previous
        }
        return cleared == changes.movedCount
    }

    mutating func markMoved(_ slot: Int32) {
        guard !slots[Int(slot)].flags.contains(.movedSinceTaken) else { return }
        slots[Int(slot)].flags.insert(.movedSinceTaken)
        changes.movedCount += 1
    }

    mutating func markChanged(_ slot: Int32) {
        guard !changes.needsImage, slots[Int(slot)].flags.isDisjoint(with: [.movedSinceTaken, .changedSinceTaken]) else { return }
        slots[Int(slot)].flags.insert(.changedSinceTaken)
        changes.changedSlots.append(slot)
        noteGrowth()
    }

    mutating func noteRemoval(_ slot: Int32) {
        if slots[Int(slot)].flags.contains(.movedSinceTaken) { changes.movedCount -= 1 }
        guard !changes.needsImage else { return }
        changes.removed.append(name(atSlot: slot))
        noteGrowth()
    }

    /// Bounds the log (a cache that never takes its changes, as a read-only one): past a
    /// quarter of the records, the next image is the whole index anyway.
    private mutating func noteGrowth() {
        guard changes.removed.count + changes.changedSlots.count > 1024 + count / 4 else { return }
        changes.removed = []
        changes.changedSlots = []
        changes.needsImage = true
    }
}
