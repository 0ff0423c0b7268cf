/// The entries of a ``MemoryCache`` in recency order: a hash index from key to slot, and nodes in
/// one contiguous array linked by `Int32` slot numbers, with freed slots kept on a free list.
///
/// Every operation is O(1) apart from ``keysInOrder`` and ``removeAll()``, and no entry costs a
/// heap allocation of its own: the nodes live inline in `nodes`, which grows by doubling and is
/// reused through the free list. Not thread-safe; ``MemoryCache`` guards it with its mutex.
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
        @usableFromInline var previous: Int32
        @usableFromInline var next: Int32
        @inlinable
        init(key: Key?, value: Value?, cost: Int, deadline: Double, previous: Int32, next: Int32) {
            self.key = key
            self.value = value
            self.cost = cost
            self.deadline = deadline
            self.previous = previous
            self.next = next
        }
    }

    /// The slot number meaning "none".
    @inlinable
    static var none: Int32 { -1 }

    @usableFromInline var nodes: [Node] = []
    @usableFromInline var index: [Key: Int32] = [:]
    /// The least recently used entry, or `none`.
    @usableFromInline var head: Int32 = -1
    /// The most recently used entry, or `none`.
    @usableFromInline var tail: Int32 = -1
    /// The first free slot, or `none`.
    @usableFromInline var freeHead: Int32 = -1
    /// The sum of the entries' costs.
    @usableFromInline var totalCost = 0

    @inlinable
    init() {}

    /// The number of entries.
    @inlinable
    var count: Int { index.count }

    /// The slot holding `key`, if any.
    @inlinable
    func slot(forKey key: Key) -> Int32? {
        index[key]
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

    /// Replaces the value, cost and deadline of the entry in `slot`, and marks it most recently used.
    @inlinable
    mutating func update(_ slot: Int32, value: Value, cost: Int, deadline: Double) {
        let i = Int(slot)
        totalCost += cost - nodes[i].cost
        nodes[i].value = value
        nodes[i].cost = cost
        nodes[i].deadline = deadline
        touch(slot)
    }

    /// Stores `value` under `key`, replacing the entry there or adding one, as the most recently used.
    @inlinable
    mutating func setValue(_ value: Value, forKey key: Key, cost: Int, deadline: Double) {
        let freeSlot = freeHead != Self.none ? freeHead : Int32(truncatingIfNeeded: nodes.count)
        // One hash lookup for both cases: the defaulted subscript's modify accessor finds the
        // entry or inserts the free slot's number in place.
        let existing = Self.claim(&index[key, default: Self.none], for: freeSlot)
        if existing != Self.none {
            update(existing, value: value, cost: cost, deadline: deadline)
        } else {
            occupy(freeSlot, key: key, value: value, cost: cost, deadline: deadline)
        }
    }

    /// Returns the slot number in `entry`, or stores `freeSlot` there when it holds `none`.
    @inlinable
    static func claim(_ entry: inout Int32, for freeSlot: Int32) -> Int32 {
        if entry != none { return entry }
        entry = freeSlot
        return none
    }

    /// Adds an entry for a key that is not present, as the most recently used.
    /// - Returns: The entry's slot.
    @inlinable @discardableResult
    mutating func insert(key: Key, value: Value, cost: Int, deadline: Double) -> Int32 {
        let slot = freeHead != Self.none ? freeHead : Int32(truncatingIfNeeded: nodes.count)
        index[key] = slot
        occupy(slot, key: key, value: value, cost: cost, deadline: deadline)
        return slot
    }

    /// Fills `slot`, the free list's head or the next new slot, already indexed under `key`.
    @inlinable
    mutating func occupy(_ slot: Int32, key: Key, value: Value, cost: Int, deadline: Double) {
        let node = Node(key: key, value: value, cost: cost, deadline: deadline, previous: Self.none, next: Self.none)
        if slot == freeHead {
            let i = Int(slot)
            freeHead = nodes[i].next
            nodes[i] = node
        } else {
            precondition(nodes.count < Int(Int32.max), "MemoryCache holds at most Int32.max entries")
            nodes.append(node)
        }
        totalCost += cost
        linkAtTail(slot)
    }

    /// Removes the entry in `slot` and puts the slot on the free list.
    /// - Returns: The removed key, value and cost.
    @inlinable @discardableResult
    mutating func remove(_ slot: Int32) -> (key: Key, value: Value, cost: Int) {
        unlink(slot)
        let i = Int(slot)
        let key = nodes[i].key.unsafelyUnwrapped
        let value = nodes[i].value.unsafelyUnwrapped
        let cost = nodes[i].cost
        index.removeValue(forKey: key)
        totalCost -= cost
        // Drop the references now so that a freed slot keeps nothing alive.
        nodes[i] = Node(key: nil, value: nil, cost: 0, deadline: .infinity, previous: Self.none, next: freeHead)
        freeHead = slot
        return (key, value, cost)
    }

    /// Removes every entry.
    /// - Parameter keepingCapacity: Whether to keep the node array and index allocated.
    /// - Complexity: O(n).
    mutating func removeAll(keepingCapacity: Bool = false) {
        nodes.removeAll(keepingCapacity: keepingCapacity)
        index.removeAll(keepingCapacity: keepingCapacity)
        head = Self.none
        tail = Self.none
        freeHead = Self.none
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
