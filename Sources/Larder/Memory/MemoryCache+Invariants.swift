// Consistency checks called after every mutation (in the spirit of swift-collections'
// `OrderedDictionary+Invariants.swift`): `_checkInvariants()` is empty outside debug builds and
// inlined, so release builds compile nothing into the hot paths, and call sites need no `#if`.

extension MemoryCache.State {
    /// Traps if the state is inconsistent, in debug builds; nothing otherwise. Call with the lock held.
    @inlinable @inline(__always)
    func _checkInvariants() {
        #if DEBUG
        _checkInvariantsNow()
        #endif
    }

    /// The checks behind ``_checkInvariants()``.
    @usableFromInline
    func _checkInvariantsNow() {
        storage._checkInvariants()
        if countLimit > 0 {
            precondition(storage.count <= countLimit, "more entries than countLimit")
        }
        if totalCostLimit > 0 {
            precondition(storage.totalCost <= totalCostLimit, "more cost than totalCostLimit")
        }
    }
}

extension LRUStorage {
    /// The largest storage walked in full; beyond it only O(1) checks run, so that debug builds of
    /// programs with large caches stay usable.
    static var fullCheckLimit: Int { 1_024 }

    /// Traps if the links, index, free list or cost total disagree.
    func _checkInvariants() {
        precondition((head == Self.none) == (count == 0), "head disagrees with count")
        precondition((tail == Self.none) == (count == 0), "tail disagrees with count")
        precondition(totalCost >= 0, "negative total cost")
        precondition(buckets.count >= 8 && buckets.count & (buckets.count - 1) == 0, "index size not a power of two")
        guard nodes.count <= Self.fullCheckLimit else { return }

        var seen = 0
        var cost = 0
        var previous = Self.none
        var slot = head
        while slot != Self.none {
            let node = nodes[Int(slot)]
            precondition(node.previous == previous, "broken back link at slot \(slot)")
            guard let key = node.key else { preconditionFailure("free slot \(slot) is linked") }
            precondition(node.value != nil, "live slot \(slot) has no value")
            precondition(node.hash == key.hashValue, "stale hash at slot \(slot)")
            precondition(find(key, hash: node.hash).slot == slot, "index disagrees at slot \(slot)")
            precondition(node.cost >= 0, "negative cost at slot \(slot)")
            cost += node.cost
            seen += 1
            precondition(seen <= count, "cycle in the recency list")
            previous = slot
            slot = node.next
        }
        precondition(previous == tail, "tail is not the last linked slot")
        precondition(seen == count, "linked \(seen) entries, indexed \(count)")
        precondition(cost == totalCost, "costs add up to \(cost), not \(totalCost)")

        var free = 0
        slot = freeHead
        while slot != Self.none {
            precondition(nodes[Int(slot)].key == nil && nodes[Int(slot)].value == nil, "free slot \(slot) holds an entry")
            free += 1
            precondition(free <= nodes.count, "cycle in the free list")
            slot = nodes[Int(slot)].next
        }
        precondition(free + count == nodes.count, "\(free) free + \(count) live != \(nodes.count) slots")
        precondition(buckets.lazy.filter { $0 != 0 }.count == count, "index holds other than \(count) entries")
        precondition(count <= buckets.count / 4 * 3, "index over 3/4 full")
    }
}
