/// The entries of a ``MemoryCache``: nodes in one contiguous array, addressed by `Int32` slot
/// numbers, with freed slots kept on a free list; an open-addressing hash index from key to slot;
/// and an ``EvictionOrder`` over the slots, whose links live inside the nodes.
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
struct EntryStorage<Key: Hashable, Value> {
    /// One slot of `nodes`. A free slot has `key == nil` and links only through `evictionLink.next`.
    @usableFromInline
    struct Node: EvictionEntry {
        @usableFromInline var key: Key?
        @usableFromInline var value: Value?
        @usableFromInline var cost: Int
        /// The time, in clock seconds, at and after which the entry has expired; `.infinity` for never.
        @usableFromInline var deadline: Double
        /// The low 32 bits of `key.hashValue`, kept so that growing and removing never hash a key
        /// again; also the eviction order's hash.
        @usableFromInline var hash: UInt32
        @usableFromInline var evictionLink: EvictionLink

        @inlinable
        init(key: Key?, value: Value?, cost: Int, deadline: Double, hash: UInt32, evictionLink: EvictionLink = EvictionLink()) {
            self.key = key
            self.value = value
            self.cost = cost
            self.deadline = deadline
            self.hash = hash
            self.evictionLink = evictionLink
        }

        /// A free slot, linking to the next free one.
        @inlinable
        static func free(next: Int32) -> Node {
            Node(key: nil, value: nil, cost: 0, deadline: .infinity, hash: 0, evictionLink: EvictionLink(next: next))
        }
    }

    /// The slot number meaning "none".
    @inlinable
    static var none: Int32 { -1 }

    @usableFromInline var nodes: [Node] = []
    /// The hash index, a power-of-two number of buckets probed linearly. An empty bucket is 0;
    /// a full one holds the key's low 32 hash bits above `slot + 1`. Filled at most 3/4.
    @usableFromInline var buckets: [UInt64] = Array(repeating: 0, count: 8)
    /// Which entry goes next.
    @usableFromInline var order: EvictionOrder
    /// The first free slot, or `none`.
    @usableFromInline var freeHead: Int32 = -1
    /// The number of entries.
    @usableFromInline var count = 0
    /// The sum of the entries' costs.
    @usableFromInline var totalCost = 0

    @inlinable
    init(policy: EvictionPolicy) {
        order = EvictionOrder(policy: policy)
    }

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
    ///
    /// Always inlined: called out of line, it received a copy of the whole storage struct (168
    /// bytes with the eviction order) on every read.
    @inlinable @inline(__always)
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
    @inlinable
    mutating func growIndex() {
        var grown = [UInt64](repeating: 0, count: buckets.count * 2)
        let mask = grown.count - 1
        for i in nodes.indices where nodes[i].key != nil {
            let hash = Int(nodes[i].hash)
            var bucket = hash & mask
            while grown[bucket] != 0 { bucket = (bucket &+ 1) & mask }
            grown[bucket] = Self.entry(hash: hash, slot: Int32(truncatingIfNeeded: i))
        }
        buckets = grown
    }

    // MARK: Entries

    /// The slot holding `key`, if any.
    @inlinable @inline(__always)
    func slot(forKey key: Key) -> Int32? {
        let slot = find(key, hash: key.hashValue).slot
        return slot == Self.none ? nil : slot
    }

    /// The value in a live slot.
    @inlinable @inline(__always)
    func value(at slot: Int32) -> Value {
        nodes[Int(slot)].value.unsafelyUnwrapped
    }

    /// The key in a live slot.
    @inlinable @inline(__always)
    func key(at slot: Int32) -> Key {
        nodes[Int(slot)].key.unsafelyUnwrapped
    }

    /// The deadline of the entry in a live slot; `.infinity` for none.
    @inlinable @inline(__always)
    func deadline(at slot: Int32) -> Double {
        nodes[Int(slot)].deadline
    }

    /// Tells the eviction order that the entry in `slot` was used: under LRU it becomes the most
    /// recently used; under TinyLFU its bit is set and its key counted.
    @inlinable @inline(__always)
    mutating func touch(_ slot: Int32) {
        order.recordUse(slot, in: &nodes)
    }

    /// The most entries the cache holds, as the eviction order sizes itself: the count limit, or,
    /// when only a cost (or nothing) limits the cache, its current count.
    @inlinable @inline(__always)
    func capacity(countLimit: Int) -> Int {
        countLimit > 0 ? countLimit : max(count, 1)
    }

    /// Stores `value` under `key`, replacing the entry there (a use) or adding one (the newest).
    /// - Parameter countLimit: The cache's count limit (0 for none), for sizing the eviction order.
    @inlinable
    mutating func setValue(_ value: Value, forKey key: Key, cost: Int, deadline: Double, countLimit: Int) {
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
        let node = Node(key: key, value: value, cost: cost, deadline: deadline, hash: UInt32(truncatingIfNeeded: hash))
        let slot: Int32
        if freeHead != Self.none {
            slot = freeHead
            freeHead = nodes[Int(slot)].evictionLink.next
            nodes[Int(slot)] = node
        } else {
            precondition(nodes.count < Int(Int32.max) - 1, "MemoryCache holds fewer than Int32.max entries")
            slot = Int32(truncatingIfNeeded: nodes.count)
            nodes.append(node)
        }
        buckets[bucket] = Self.entry(hash: hash, slot: slot)
        count += 1
        totalCost += cost
        order.insert(slot, capacity: capacity(countLimit: countLimit), in: &nodes)
        if count > buckets.count / 4 * 3 { growIndex() }
    }

    /// The entry the eviction order would drop next, if any; remove it with `evicted: true`.
    @inlinable @inline(__always)
    mutating func nextVictim(capacity: Int) -> Int32? {
        order.nextVictim(capacity: capacity, in: &nodes)
    }

    /// Lets the eviction order settle once the cache is within its limits.
    @inlinable @inline(__always)
    mutating func settle(capacity: Int) {
        order.settle(capacity: capacity, in: &nodes)
    }

    /// Removes the entry in `slot` and puts the slot on the free list.
    /// - Parameter evicted: Whether the eviction order chose it (``nextVictim(capacity:)``), as
    ///   opposed to a removal or an expiry.
    /// - Returns: The removed key, value and cost.
    @inlinable @discardableResult
    mutating func remove(_ slot: Int32, evicted: Bool = false) -> (key: Key, value: Value, cost: Int) {
        order.remove(slot, evicted: evicted, in: &nodes)
        let i = Int(slot)
        unindex(slot, hash: Int(nodes[i].hash))
        let key = nodes[i].key.unsafelyUnwrapped
        let value = nodes[i].value.unsafelyUnwrapped
        let cost = nodes[i].cost
        count -= 1
        totalCost -= cost
        // Drop the references now so that a freed slot keeps nothing alive.
        nodes[i] = .free(next: freeHead)
        freeHead = slot
        return (key, value, cost)
    }

    /// Removes the entry in `slot` like ``remove(_:evicted:)``, without handing back its key and
    /// value: they are released in place, sparing a copy out and back on the eviction path.
    @inlinable
    mutating func discard(_ slot: Int32, evicted: Bool) {
        order.remove(slot, evicted: evicted, in: &nodes)
        let i = Int(slot)
        unindex(slot, hash: Int(nodes[i].hash))
        count -= 1
        totalCost -= nodes[i].cost
        nodes[i] = .free(next: freeHead)
        freeHead = slot
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
        order.removeAll()
        freeHead = Self.none
        count = 0
        totalCost = 0
    }

    /// The slots in eviction order (under LRU, from least to most recently used).
    /// - Complexity: O(n).
    var slotsInOrder: [Int32] {
        order.slots(in: nodes)
    }

    /// The keys in eviction order (under LRU, from least to most recently used).
    /// - Complexity: O(n).
    var keysInOrder: [Key] {
        slotsInOrder.map { nodes[Int($0)].key.unsafelyUnwrapped }
    }
}
