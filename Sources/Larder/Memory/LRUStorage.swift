/// The entries of a ``MemoryCache`` in recency order: nodes in one contiguous array, linked by
/// `Int32` slot numbers, with freed slots kept on a free list; and an open-addressing hash index
/// from key to slot.
///
/// Every operation is O(1) on average apart from ``keysInOrder`` and ``removeAll(keepingCapacity:)``,
/// and no entry costs a heap allocation of its own: the nodes live inline in `nodes`, which grows
/// by doubling and is reused through the free list. Not thread-safe; ``MemoryCache`` guards it.
///
/// Why not a `[Key: Int32]`: each node keeps its key's hash, so evicting one never hashes a key
/// again, and removal shifts the probe run back using the hash bits kept in the index itself.
/// `Dictionary` has to rehash every key it shifts on removal, which made an insert-and-evict cost
/// about five times a plain dictionary insert (see BENCHMARKS.md).
@usableFromInline
struct LRUStorage<Key: Hashable, Value> {
    /// One slot of `nodes`. A free slot has `key == nil` and links only through `next`.
    @usableFromInline
    struct Node {
        @usableFromInline var key: Key?
        @usableFromInline var value: Value?
        @usableFromInline var cost: Int
        /// The time, in clock seconds, at and after which the entry has expired; `.infinity` for never.
        @usableFromInline var deadline: Double
        /// `key.hashValue`, kept so that growing and removing never hash a key again.
        @usableFromInline var hash: Int
        @usableFromInline var previous: Int32
        @usableFromInline var next: Int32

        @inlinable
        init(key: Key?, value: Value?, cost: Int, deadline: Double, hash: Int, previous: Int32, next: Int32) {
            self.key = key
            self.value = value
            self.cost = cost
            self.deadline = deadline
            self.hash = hash
            self.previous = previous
            self.next = next
        }
    }

    /// The slot number meaning "none".
    @inlinable
    static var none: Int32 { -1 }

    @usableFromInline var nodes: [Node] = []
    /// The hash index, a power-of-two number of buckets probed linearly. An empty bucket is 0;
    /// a full one holds the key's low 32 hash bits above `slot + 1`. Filled at most 3/4.
    @usableFromInline var buckets: [UInt64] = Array(repeating: 0, count: 8)
    /// The least recently used entry, or `none`.
    @usableFromInline var head: Int32 = -1
    /// The most recently used entry, or `none`.
    @usableFromInline var tail: Int32 = -1
    /// The first free slot, or `none`.
    @usableFromInline var freeHead: Int32 = -1
    /// The number of entries.
    @usableFromInline var count = 0
    /// The sum of the entries' costs.
    @usableFromInline var totalCost = 0

    @inlinable
    init() {}

    // MARK: Hash index

    @inlinable
    static func entry(hash: Int, slot: Int32) -> UInt64 {
        UInt64(UInt32(truncatingIfNeeded: hash)) << 32 | UInt64(UInt32(bitPattern: slot &+ 1))
    }

    @inlinable
    static func slot(of entry: UInt64) -> Int32 {
        Int32(bitPattern: UInt32(truncatingIfNeeded: entry)) &- 1
    }

    @inlinable
    static func hashBits(of entry: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: entry >> 32)
    }

    /// Finds `key`: its slot when present, else the empty bucket where it belongs.
    @inlinable
    func find(_ key: Key, hash: Int) -> (bucket: Int, slot: Int32) {
        let mask = buckets.count &- 1
        let bits = UInt32(truncatingIfNeeded: hash)
        var bucket = hash & mask
        while true {
            let entry = buckets[bucket]
            if entry == 0 { return (bucket, Self.none) }
            if Self.hashBits(of: entry) == bits {
                let slot = Self.slot(of: entry)
                if nodes[Int(slot)].key == key { return (bucket, slot) }
            }
            bucket = (bucket &+ 1) & mask
        }
    }

    /// Removes the index entry for `slot`, whose key hashes to `hash`, shifting later entries of
    /// its probe run back so that no lookup needs a tombstone.
    @inlinable
    mutating func unindex(_ slot: Int32, hash: Int) {
        let mask = buckets.count &- 1
        var hole = hash & mask
        while Self.slot(of: buckets[hole]) != slot { hole = (hole &+ 1) & mask }
        var next = (hole &+ 1) & mask
        while true {
            let entry = buckets[next]
            if entry == 0 { break }
            // The entry may move back into the hole unless its home bucket lies after the hole.
            let home = Int(Self.hashBits(of: entry)) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                buckets[hole] = entry
                hole = next
            }
            next = (next &+ 1) & mask
        }
        buckets[hole] = 0
    }

    /// Doubles the index and reinserts every entry from the hashes kept in the nodes.
    /// - Complexity: O(n).
    @usableFromInline
    mutating func growIndex() {
        var grown = [UInt64](repeating: 0, count: buckets.count * 2)
        let mask = grown.count - 1
        for (i, node) in nodes.enumerated() where node.key != nil {
            var bucket = node.hash & mask
            while grown[bucket] != 0 { bucket = (bucket &+ 1) & mask }
            grown[bucket] = Self.entry(hash: node.hash, slot: Int32(truncatingIfNeeded: i))
        }
        buckets = grown
    }

    // MARK: Entries

    /// The slot holding `key`, if any.
    @inlinable
    func slot(forKey key: Key) -> Int32? {
        let slot = find(key, hash: key.hashValue).slot
        return slot == Self.none ? nil : slot
    }

    /// The slot of the least recently used entry, if any.
    @inlinable
    var leastRecentlyUsed: Int32? {
        head == Self.none ? nil : head
    }

    /// The value in a live slot.
    @inlinable
    func value(at slot: Int32) -> Value {
        nodes[Int(slot)].value.unsafelyUnwrapped
    }

    /// The key in a live slot.
    @inlinable
    func key(at slot: Int32) -> Key {
        nodes[Int(slot)].key.unsafelyUnwrapped
    }

    /// The deadline of the entry in a live slot; `.infinity` for none.
    @inlinable
    func deadline(at slot: Int32) -> Double {
        nodes[Int(slot)].deadline
    }

    /// Marks the entry in `slot` as the most recently used.
    @inlinable
    mutating func touch(_ slot: Int32) {
        guard slot != tail else { return }
        unlink(slot)
        linkAtTail(slot)
    }

    /// Stores `value` under `key`, replacing the entry there or adding one, as the most recently used.
    @inlinable
    mutating func setValue(_ value: Value, forKey key: Key, cost: Int, deadline: Double) {
        let hash = key.hashValue
        let (bucket, existing) = find(key, hash: hash)
        if existing != Self.none {
            let i = Int(existing)
            totalCost += cost - nodes[i].cost
            nodes[i].value = value
            nodes[i].cost = cost
            nodes[i].deadline = deadline
            touch(existing)
            return
        }
        let node = Node(key: key, value: value, cost: cost, deadline: deadline, hash: hash, previous: Self.none, next: Self.none)
        let slot: Int32
        if freeHead != Self.none {
            slot = freeHead
            freeHead = nodes[Int(slot)].next
            nodes[Int(slot)] = node
        } else {
            precondition(nodes.count < Int(Int32.max) - 1, "MemoryCache holds fewer than Int32.max entries")
            slot = Int32(truncatingIfNeeded: nodes.count)
            nodes.append(node)
        }
        buckets[bucket] = Self.entry(hash: hash, slot: slot)
        count += 1
        totalCost += cost
        linkAtTail(slot)
        if count > buckets.count / 4 * 3 { growIndex() }
    }

    /// Removes the entry in `slot` and puts the slot on the free list.
    /// - Returns: The removed key, value and cost.
    @inlinable @discardableResult
    mutating func remove(_ slot: Int32) -> (key: Key, value: Value, cost: Int) {
        unlink(slot)
        let i = Int(slot)
        unindex(slot, hash: nodes[i].hash)
        let key = nodes[i].key.unsafelyUnwrapped
        let value = nodes[i].value.unsafelyUnwrapped
        let cost = nodes[i].cost
        count -= 1
        totalCost -= cost
        // Drop the references now so that a freed slot keeps nothing alive.
        nodes[i] = Node(key: nil, value: nil, cost: 0, deadline: .infinity, hash: 0, previous: Self.none, next: freeHead)
        freeHead = slot
        return (key, value, cost)
    }

    /// Removes every entry.
    /// - Parameter keepingCapacity: Whether to keep the node array and index allocated.
    /// - Complexity: O(n).
    mutating func removeAll(keepingCapacity: Bool = false) {
        nodes.removeAll(keepingCapacity: keepingCapacity)
        if keepingCapacity {
            for i in buckets.indices { buckets[i] = 0 }
        } else {
            buckets = Array(repeating: 0, count: 8)
        }
        head = Self.none
        tail = Self.none
        freeHead = Self.none
        count = 0
        totalCost = 0
    }

    /// The slots from least to most recently used.
    /// - Complexity: O(n).
    var slotsInOrder: [Int32] {
        var result: [Int32] = []
        result.reserveCapacity(count)
        var slot = head
        while slot != Self.none {
            result.append(slot)
            slot = nodes[Int(slot)].next
        }
        return result
    }

    /// The keys from least to most recently used.
    /// - Complexity: O(n).
    var keysInOrder: [Key] {
        slotsInOrder.map { nodes[Int($0)].key.unsafelyUnwrapped }
    }

    // MARK: Links

    @inlinable
    mutating func unlink(_ slot: Int32) {
        let i = Int(slot)
        let previous = nodes[i].previous
        let next = nodes[i].next
        if previous == Self.none { head = next } else { nodes[Int(previous)].next = next }
        if next == Self.none { tail = previous } else { nodes[Int(next)].previous = previous }
    }

    @inlinable
    mutating func linkAtTail(_ slot: Int32) {
        let i = Int(slot)
        nodes[i].previous = tail
        nodes[i].next = Self.none
        if tail == Self.none { head = slot } else { nodes[Int(tail)].next = slot }
        tail = slot
    }
}
