// The index's expiry order: which unlocked records expire first, so that a collection takes
// the expired ones in time proportional to them, not to the index.
//
// The queues are lazy. Every unlocked record has an element in its queue whose key is at most
// its present key (its update time, or its deadline); a use that slides the update time later
// pushes nothing, and only a change that lowers the key (a store with a shorter `ttl`, an
// unlock, a record moving between the queues) pushes a new element. Stale elements are dropped
// or pushed again at their slot's present key when they reach the top, and the queues are
// rebuilt from the slots once they hold a quarter more elements than there are records.
extension DiskIndex {
    /// Which queue a slot waits in and its key there (clamped to 32 bits, so at most the true
    /// one); `nil` while it is locked.
    static func expiryPosition(_ s: Slot) -> (byDeadline: Bool, key: UInt32)? {
        guard s.lockCount == 0 else { return nil }
        if s.ttl == 0 { return (false, UInt32(clamping: s.updateTime)) }
        let (deadline, overflow) = s.updateTime.addingReportingOverflow(UInt64(s.ttl))
        return (true, overflow ? .max : UInt32(clamping: deadline))
    }

    /// Queues a slot whose fields just changed from `old` (`nil`: locked, or new), when its key
    /// dropped, it changed queues, or a collection had taken it; a key that rose keeps its old,
    /// lower element.
    mutating func noteExpiryChange(of slot: Int32, from old: (byDeadline: Bool, key: UInt32)?) {
        guard let new = Self.expiryPosition(slots[Int(slot)]) else { return }
        if let old, old.byDeadline == new.byDeadline, old.key <= new.key, !slots[Int(slot)].flags.contains(.takenForExpiry) {
            return
        }
        push(slot, at: new)
    }

    /// Queues a present, unlocked entry again at its present key: one a collection took from
    /// the queues (``takeExpired(by:now:limit:)``) and kept.
    mutating func queueForExpiry(_ name: String) {
        guard let slot = slot(of: name), let position = Self.expiryPosition(slots[Int(slot)]) else { return }
        push(slot, at: position)
    }

    /// Takes from the queues up to `limit` unlocked entries that `rule` finds expired at `now`,
    /// earliest first within each queue. An entry taken is no longer queued: the caller removes
    /// it, or queues it again (``queueForExpiry(_:)``) once it is done taking; until then no
    /// later call takes it again.
    /// - Complexity: O((*k* + *s*) log *n*) for the *k* entries taken and the *s* stale
    ///   elements met on the way.
    mutating func takeExpired(by rule: ExpiryRule, now: Double, limit: Int) -> [IndexEntry] {
        var taken: [IndexEntry] = []
        var putBack: [(slot: Int32, position: (byDeadline: Bool, key: UInt32))] = []
        for byDeadline in [false, true] {
            while taken.count < limit, let top = byDeadline ? expiry.byDeadline.min : expiry.byUpdateTime.min {
                let (key, slot) = ExpiryQueue.parts(top)
                let isDue =
                    byDeadline
                    ? rule.isPast(deadline: UInt64(key), now: now)
                    : rule.isExpired(lockCount: 0, ttl: 0, anchor: UInt64(key), now: now)
                guard isDue else { break }
                if byDeadline { expiry.byDeadline.removeMin() } else { expiry.byUpdateTime.removeMin() }
                let s = slots[Int(slot)]
                // Freed, locked or in the other queue (that change queued it where it belongs), or
                // taken already.
                guard s.flags.contains(.occupied), !s.flags.contains(.takenForExpiry), let position = Self.expiryPosition(s),
                    position.byDeadline == byDeadline
                else { continue }
                if position.key > key {
                    // A lower bound that a use slid later: back in at the present key.
                    push(slot, at: position)
                } else if !rule.isExpired(lockCount: 0, ttl: UInt64(s.ttl), anchor: s.updateTime, now: now) {
                    // A key clamped to 32 bits: not due yet, queued again once the pass is done.
                    putBack.append((slot, position))
                } else {
                    setFlags(.takenForExpiry, true, atSlot: slot)
                    taken.append(self[slot: slot])
                }
            }
        }
        for (slot, position) in putBack { push(slot, at: position) }
        return taken
    }

    /// Builds both queues from the slots, without stale elements (nor the entries taken and
    /// not queued again).
    /// - Complexity: O(*n*).
    mutating func rebuildExpiryQueues() {
        var byUpdateTime: [UInt64] = []
        var byDeadline: [UInt64] = []
        byUpdateTime.reserveCapacity(count)
        // Entries a collection has taken stay out: it queues them again when it is done.
        for i in slots.indices where slots[i].flags.contains(.occupied) && !slots[i].flags.contains(.takenForExpiry) {
            guard let position = Self.expiryPosition(slots[i]) else { continue }
            let element = ExpiryQueue.element(key: position.key, slot: Int32(i))
            if position.byDeadline { byDeadline.append(element) } else { byUpdateTime.append(element) }
        }
        expiry = ExpiryQueues(byUpdateTime: ExpiryQueue(byUpdateTime), byDeadline: ExpiryQueue(byDeadline))
    }

    private mutating func push(_ slot: Int32, at position: (byDeadline: Bool, key: UInt32)) {
        setFlags(.takenForExpiry, false, atSlot: slot)
        // Stale elements are bounded: past a quarter more than the records, start again.
        if expiry.count >= count + count / 4 + 1024 { return rebuildExpiryQueues() }
        let element = ExpiryQueue.element(key: position.key, slot: slot)
        if position.byDeadline { expiry.byDeadline.insert(element) } else { expiry.byUpdateTime.insert(element) }
    }

    /// Checks that every unlocked entry waits in its queue at a key at most its present one;
    /// traps otherwise.
    /// - Complexity: O(*n*). Called by ``_checkInvariants()``.
    func _checkExpiryQueues() {
        var lowest: [Int32: UInt32] = [:]
        var lowestByDeadline: [Int32: UInt32] = [:]
        for element in expiry.byUpdateTime.elements {
            let (key, slot) = ExpiryQueue.parts(element)
            lowest[slot] = min(lowest[slot] ?? .max, key)
        }
        for element in expiry.byDeadline.elements {
            let (key, slot) = ExpiryQueue.parts(element)
            lowestByDeadline[slot] = min(lowestByDeadline[slot] ?? .max, key)
        }
        for i in slots.indices where slots[i].flags.contains(.occupied) && !slots[i].flags.contains(.takenForExpiry) {
            guard let position = Self.expiryPosition(slots[i]) else { continue }
            let queued = position.byDeadline ? lowestByDeadline[Int32(i)] : lowest[Int32(i)]
            precondition(queued.map { $0 <= position.key } == true, "slot \(i) waits in no expiry queue at or below its key")
        }
    }
}
