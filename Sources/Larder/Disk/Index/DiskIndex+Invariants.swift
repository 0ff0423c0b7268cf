extension DiskIndex {
    /// Checks the list links, totals and tables; traps on a mismatch.
    /// - Complexity: O(*n*). Called by tests.
    func _checkInvariants() {
        var seen = 0
        var size = 0
        var locked = 0
        var previous: Int32 = -1
        var slot = head
        while slot >= 0 {
            let s = slots[Int(slot)]
            let name = name(atSlot: slot)
            precondition(s.flags.contains(.occupied), "a free slot in the list")
            precondition(s.previous == previous, "broken back link at \(name)")
            precondition(self.slot(of: name) == slot, "list entry \(name) not in the name table")
            size += s.diskSize
            if s.lockCount > 0 { locked += s.diskSize }
            seen += 1
            precondition(seen <= count, "cycle in the LRU list")
            previous = slot
            slot = s.next
        }
        precondition(previous == tail, "tail does not end the list")
        precondition(seen == count, "list has \(seen) entries, count is \(count)")
        precondition(size == totalSize && locked == lockedSize, "totals drifted")
        precondition(byName.count == count, "name table holds \(byName.count), count is \(count)")
        for slot in byKey.slots {
            let key = key(atSlot: slot)
            precondition(key != nil && self.slot(forKey: key!) == slot, "key \(key ?? "-") maps to a wrong slot")
        }
        precondition(byKey.count + unmappedCount == count, "key table and unmapped count disagree")
        _checkExpiryQueues()
        _checkPolicy()
    }
}
