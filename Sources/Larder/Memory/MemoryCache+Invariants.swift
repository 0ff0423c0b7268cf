// Consistency checks called after every mutation (in the spirit of swift-collections'
// `OrderedDictionary+Invariants.swift`): `_checkInvariants()` is empty outside debug builds and
// inlined, so release builds compile nothing into the hot paths, and call sites need no `#if`.

extension MemoryCache.State {
    /// Traps if the state is inconsistent, in debug builds; nothing otherwise. Call with the lock held.
    ///
    /// Up to 64 entries, every call walks the whole storage; above, every `count / 16`-th call
    /// does (O(1) the others), so that the checks cost O(1) per mutation on average and debug
    /// builds of programs with large caches, or replaying long traces, stay usable.
    @inlinable @inline(__always)
    mutating func _checkInvariants() {
        #if DEBUG
        _checksDone &+= 1
        _checkInvariantsNow(walking: storage.count <= 64 || _checksDone % (storage.count / 16) == 0)
        #endif
    }

    /// The checks behind ``_checkInvariants()``.
    @usableFromInline
    func _checkInvariantsNow(walking: Bool) {
        storage._checkInvariants(walking: walking)
        if countLimit > 0 {
            precondition(storage.count <= countLimit, "more entries than countLimit")
        }
        if totalCostLimit > 0 {
            precondition(storage.totalCost <= totalCostLimit, "more cost than totalCostLimit")
        }
    }
}

extension EntryStorage {
    /// Traps if the table, its metadata, the counts or the eviction order disagree.
    /// - Parameter walking: Whether to walk every bucket (O(capacity)), or only run the O(1) checks.
    func _checkInvariants(walking: Bool) {
        precondition(order.count == count, "the eviction order holds \(order.count) entries, not \(count)")
        precondition(totalCost >= 0, "negative total cost")
        precondition(tags.count >= 8 && tags.count & (tags.count - 1) == 0, "table size not a power of two")
        precondition(nodes.count == tags.count, "\(nodes.count) buckets, \(tags.count) tags")
        precondition(count <= tags.count / 8 * 7, "table over 7/8 full")
        guard walking else { return }

        order._checkInvariants(nodes)
        var cost = 0
        var live = 0
        for i in nodes.indices {
            let node = nodes[i]
            switch tags[i] {
            case Self.emptyTag:
                precondition(node.key == nil && node.value == nil, "empty bucket \(i) holds an entry")
            default:
                guard let key = node.key else { preconditionFailure("full bucket \(i) holds no entry") }
                precondition(node.value != nil, "live bucket \(i) has no value")
                precondition(node.hash == UInt32(truncatingIfNeeded: key.hashValue), "stale hash in bucket \(i)")
                precondition(tags[i] == Self.tag(node.hash), "wrong tag in bucket \(i)")
                precondition(find(key, hash: node.hash).slot == Int32(i), "lookup of bucket \(i)'s key goes elsewhere")
                precondition(node.cost >= 0, "negative cost in bucket \(i)")
                cost += node.cost
                live += 1
            }
        }
        precondition(live == count, "\(live) live buckets, count \(count)")
        precondition(cost == totalCost, "costs add up to \(cost), not \(totalCost)")
        precondition(Set(order.slots(in: nodes)).count == count, "the eviction order repeats a slot")
    }
}

extension EvictionOrder {
    /// Traps if a queue's links, ends, count or entries' queue numbers disagree, or if LRU uses a
    /// queue other than its one list.
    func _checkInvariants<E: EvictionEntry>(_ entries: [E]) {
        if policy.kind == .tinyLFU {
            // The window's entries are linked in its buckets, whose counts are not kept.
            precondition(window.head == -1 && window.tail == -1, "TinyLFU links its window in buckets")
            var linked = 0
            for bucket in buckets {
                linked += _checkLinks(of: bucket, number: Self.window, atMost: window.count - linked, in: entries)
            }
            precondition(linked == window.count, "the window's buckets link \(linked) entries, count \(window.count)")
            let sampled = _countSampledEntries(in: entries)
            precondition(sampled == sampledEntries, "\(sampled) entries of sampled keys, counted \(sampledEntries)")
        }
        for number in [Self.window, Self.probation, Self.protected] where number != Self.window || policy.kind == .lru {
            let queue = self[queue: number]
            precondition(policy.kind == .tinyLFU || number == Self.window || queue.count == 0, "LRU uses queue \(number)")
            precondition((queue.head == -1) == (queue.count == 0), "queue \(number): head disagrees with count")
            precondition((queue.tail == -1) == (queue.count == 0), "queue \(number): tail disagrees with count")
            let seen = _checkLinks(of: queue, number: number, atMost: queue.count, in: entries)
            precondition(seen == queue.count, "queue \(number) links \(seen) entries, counts \(queue.count)")
        }
    }

    /// Walks one queue, trapping on a broken back link, a wrong queue number, LRU marks, more than
    /// `limit` entries (a cycle) or a wrong tail, and returns how many entries it links.
    func _checkLinks<E: EvictionEntry>(of queue: Queue, number: UInt8, atMost limit: Int, in entries: [E]) -> Int {
        var seen = 0
        var previous: Int32 = -1
        var slot = queue.head
        while slot != -1 {
            let link = entries[Int(slot)].evictionLink
            precondition(link.previous == previous, "broken back link at slot \(slot)")
            precondition(link.queue == number, "slot \(slot) in queue \(number) says \(link.queue)")
            precondition(policy.kind == .tinyLFU || link.marks == 0, "LRU slot \(slot) has marks")
            seen += 1
            precondition(seen <= limit, "cycle in queue \(number)")
            previous = slot
            slot = link.next
        }
        precondition(previous == queue.tail, "queue \(number): tail is not the last linked slot")
        return seen
    }
}
