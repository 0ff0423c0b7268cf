/// The entries of a ``MemoryCache``: an open-addressing hash table whose buckets hold the entries
/// themselves, a byte of metadata per bucket beside it, and an ``EvictionOrder`` over the
/// buckets (slot numbers), whose links live inside the entries.
///
/// Every operation is O(1) on average apart from ``keysInOrder``, ``removeAll(keepingCapacity:)``
/// and the occasional rehash, and no entry costs a heap allocation of its own.
///
/// Why the entries sit in the table: a hit then reads the dense metadata (one byte per bucket,
/// 64 to a cache line, usually cached) and one entry, the line that holds its key and value. With
/// a separate index of slot numbers in front of an array of nodes, a hit waited for the index's
/// line, then for the node's: two dependent cache misses where a `Dictionary`, whose keys and
/// values both sit at the bucket's index, waits for two independent ones (see BENCHMARKS.md).
/// The cost is that an entry's slot changes when the table is rehashed; the eviction order is
/// then told where each entry went.
///
/// Probing is linear; the metadata byte keeps seven bits of each key's hash, so a probe reads
/// another entry only once in 128 full buckets, and the table can fill up to 7/8 before it
/// doubles. Removal shifts the rest of the probe run back into the hole (no tombstones, so no
/// lookup probes past dead buckets and no periodic rehash stalls the lock); each shifted entry's
/// neighbours in the eviction order are told its new slot. Not thread-safe; ``MemoryCache``
/// guards it.
@usableFromInline
struct EntryStorage<Key: Hashable, Value> {
    /// One bucket. An empty one (or a tombstone) has `key == nil`.
    @usableFromInline
    struct Node: EvictionEntry {
        // What a hit never reads comes first (the cost, the eviction order's links), then what
        // it reads (the order's stamp and marks, the hash, the key and the value), so that a hit
        // reads the last 48 of the node's bytes. With String keys and Data values a node is 64
        // bytes; in a large table (a page-aligned allocation, the array's header in front) the
        // 48 bytes then sit in one cache line. The deadline is not here: see `deadlines`.
        @usableFromInline var cost: Int
        @usableFromInline var evictionLink: EvictionLink
        /// The low 32 bits of `key.hashValue`, kept so that rehashing never hashes a key again;
        /// also the eviction order's hash.
        @usableFromInline var hash: UInt32
        /// Whether the entry has a deadline, in ``EntryStorage/deadlines``.
        @usableFromInline var expires: Bool
        @usableFromInline var key: Key?
        @usableFromInline var value: Value?

        @inlinable
        init(key: Key?, value: Value?, cost: Int, expires: Bool, hash: UInt32, evictionLink: EvictionLink = EvictionLink()) {
            self.cost = cost
            self.evictionLink = evictionLink
            self.hash = hash
            self.expires = expires
            self.key = key
            self.value = value
        }

        /// An empty bucket.
        @inlinable
        static var empty: Node {
            Node(key: nil, value: nil, cost: 0, expires: false, hash: 0)
        }
    }

    /// The slot number meaning "none".
    @inlinable
    static var none: Int32 { -1 }

    /// The metadata of an empty bucket.
    @inlinable
    static var emptyTag: UInt8 { 0 }

    /// The metadata of a full bucket: its top bit set, and the top seven bits of the key's hash.
    @inlinable
    static func tag(_ hash: UInt32) -> UInt8 {
        0x80 | UInt8(truncatingIfNeeded: hash &>> 25)
    }

    /// The buckets, a power of two of them (at least 8). Slot numbers are their indices.
    @usableFromInline var nodes: [Node] = Self.emptyNodes(8)
    /// One byte per bucket: ``emptyTag``, or a full bucket's ``tag(_:)``.
    @usableFromInline var tags: [UInt8] = Array(repeating: 0, count: 8)
    /// Per bucket, the time, in clock seconds, at and after which its entry has expired; only
    /// meaningful where the node `expires`. Kept apart so that entries without a lifetime (most,
    /// in most caches) are 8 bytes smaller and never touch it, on a hit or on an insertion.
    @usableFromInline var deadlines: [Double] = Array(repeating: .infinity, count: 8)
    /// Which entry goes next.
    @usableFromInline var order: EvictionOrder
    /// The number of entries.
    @usableFromInline var count = 0
    /// The sum of the entries' costs.
    @usableFromInline var totalCost = 0

    @inlinable
    init(policy: EvictionPolicy) {
        order = EvictionOrder(policy: policy)
    }

    // MARK: Hash table

    /// Finds `key`: its slot when present, else the empty bucket that ends its probe run.
    ///
    /// Always inlined: called out of line, it received a copy of the whole storage struct (about
    /// 170 bytes with the eviction order) on every read.
    @inlinable @inline(__always)
    func find(_ key: Key, hash: UInt32) -> (bucket: Int, slot: Int32) {
        let mask = tags.count &- 1
        let tag = Self.tag(hash)
        var bucket = Int(hash) & mask
        while true {
            let found = tags[bucket]
            if found == Self.emptyTag { return (bucket, Self.none) }
            if found == tag && nodes[bucket].hash == hash && nodes[bucket].key == key {
                return (bucket, Int32(truncatingIfNeeded: bucket))
            }
            bucket = (bucket &+ 1) & mask
        }
    }

    /// Takes the entry out of bucket `slot` (it must have left the eviction order already), and
    /// shifts later entries of its probe run back so that no lookup needs a tombstone.
    ///
    /// The entries are moved as raw memory, with the hole left uninitialized until the run ends:
    /// assigning nodes went through the generic value witnesses of their key and value, which
    /// cost more than the rest of an eviction.
    @inlinable
    mutating func takeOut(_ slot: Int) -> Node {
        let mask = tags.count &- 1
        return nodes.withUnsafeMutableBufferPointer { buffer -> Node in
            let base = buffer.baseAddress.unsafelyUnwrapped
            let taken = (base + slot).move()
            var hole = slot
            var next = (hole &+ 1) & mask
            while tags[next] != Self.emptyTag {
                // The entry may move back into the hole unless its home bucket lies after the hole.
                let home = Int((base + next).pointee.hash) & mask
                if (next &- home) & mask >= (next &- hole) & mask {
                    tags[hole] = tags[next]
                    if (base + next).pointee.expires { deadlines[hole] = deadlines[next] }
                    (base + hole).moveInitialize(from: base + next, count: 1)
                    order.relocate(from: Int32(truncatingIfNeeded: next), to: Int32(truncatingIfNeeded: hole), in: buffer)
                    hole = next
                }
                next = (next &+ 1) & mask
            }
            (base + hole).initialize(to: .empty)
            tags[hole] = Self.emptyTag
            return taken
        }
    }

    /// `capacity` empty buckets.
    @inlinable
    static func emptyNodes(_ capacity: Int) -> [Node] {
        // Written in place: `Array(repeating:count:)` copied the empty node through generic value
        // witnesses, about 180 instructions a bucket.
        [Node](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            for i in 0 ..< capacity { (buffer.baseAddress! + i).initialize(to: .empty) }
            initialized = capacity
        }
    }

    /// Rebuilds the table with `capacity` buckets (a power of two), and tells the eviction order
    /// where each entry went.
    /// - Complexity: O(capacity).
    @inlinable
    mutating func rehash(capacity: Int) {
        precondition(capacity <= 1 << 31, "MemoryCache holds fewer than 2^31 buckets' worth of entries")
        let mask = capacity &- 1
        var newTags = [UInt8](repeating: Self.emptyTag, count: capacity)
        var newSlots = [Int32](repeating: Self.none, count: nodes.count)
        var newDeadlines = [Double](repeating: .infinity, count: capacity)
        let oldTags = tags
        // Entries are moved, not copied: each old bucket gets an empty node back in exchange. The
        // old array is taken out of `self`, and the new one built in place, so that each is
        // uniquely referenced when written (a second reference made the eviction order's pass
        // below copy the whole table).
        var oldNodes: [Node] = []
        swap(&oldNodes, &nodes)
        nodes = Self.emptyNodes(capacity)
        oldNodes.withUnsafeMutableBufferPointer { old in
            nodes.withUnsafeMutableBufferPointer { new in
                for i in 0 ..< old.count where oldTags[i] >= 0x80 {
                    let hash = old[i].hash
                    var bucket = Int(hash) & mask
                    while newTags[bucket] != Self.emptyTag { bucket = (bucket &+ 1) & mask }
                    newTags[bucket] = oldTags[i]
                    if old[i].expires { newDeadlines[bucket] = deadlines[i] }
                    swap(&new[bucket], &old[i])
                    newSlots[i] = Int32(truncatingIfNeeded: bucket)
                }
            }
        }
        tags = newTags
        deadlines = newDeadlines
        order.relocate(to: newSlots, in: &nodes)
    }

    /// Doubles the table when entries fill more than 7/8 of its buckets.
    @inlinable
    mutating func rehashIfFull() {
        if count > tags.count / 8 * 7 { rehash(capacity: tags.count * 2) }
    }

    // MARK: Entries

    /// The slot holding `key`, if any.
    @inlinable @inline(__always)
    func slot(forKey key: Key) -> Int32? {
        let slot = find(key, hash: UInt32(truncatingIfNeeded: key.hashValue)).slot
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
        nodes[Int(slot)].expires ? deadlines[Int(slot)] : .infinity
    }

    /// Tells the eviction order that the entry in `slot` was used: under LRU it becomes the most
    /// recently used; under TinyLFU its bit is set and its use counted.
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
        let hash = UInt32(truncatingIfNeeded: key.hashValue)
        let (bucket, existing) = find(key, hash: hash)
        if existing != Self.none {
            totalCost += cost - nodes[bucket].cost
            nodes[bucket].value = value
            nodes[bucket].cost = cost
            nodes[bucket].expires = deadline != .infinity
            if deadline != .infinity { deadlines[bucket] = deadline }
            touch(existing)
            return
        }
        tags[bucket] = Self.tag(hash)
        // An empty bucket's node holds no key and no value (nothing to release), so the new node
        // is written over it as raw memory: an assignment would destroy the empty node through the
        // generic value witnesses of the key and value, a sixth of an insert's time (a remote hit
        // promoted through `HybridCache`, `perf` of `larder-bench remote`).
        nodes.withUnsafeMutableBufferPointer { buffer in
            (buffer.baseAddress.unsafelyUnwrapped + bucket).initialize(
                to: Node(key: key, value: value, cost: cost, expires: deadline != .infinity, hash: hash))
        }
        if deadline != .infinity { deadlines[bucket] = deadline }
        count += 1
        totalCost += cost
        order.insert(Int32(truncatingIfNeeded: bucket), capacity: capacity(countLimit: countLimit), in: &nodes)
        rehashIfFull()
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

    /// Removes the entry in `slot`.
    /// - Parameter evicted: Whether the eviction order chose it (``nextVictim(capacity:)``), as
    ///   opposed to a removal or an expiry.
    /// - Returns: The removed key, value and cost.
    @inlinable @discardableResult
    mutating func remove(_ slot: Int32, evicted: Bool = false) -> (key: Key, value: Value, cost: Int) {
        order.remove(slot, evicted: evicted, in: &nodes)
        let node = takeOut(Int(slot))
        count -= 1
        totalCost -= node.cost
        return (node.key.unsafelyUnwrapped, node.value.unsafelyUnwrapped, node.cost)
    }

    /// Removes the entry in `slot` like ``remove(_:evicted:)``, without handing back its key and
    /// value: they are released in place, sparing a copy out and back on the eviction path.
    @inlinable
    mutating func discard(_ slot: Int32, evicted: Bool) {
        order.remove(slot, evicted: evicted, in: &nodes)
        let node = takeOut(Int(slot))
        count -= 1
        totalCost -= node.cost
    }

    /// Removes every entry.
    /// - Parameter keepingCapacity: Whether to keep the table's size.
    /// - Complexity: O(n).
    mutating func removeAll(keepingCapacity: Bool = false) {
        let capacity = keepingCapacity ? tags.count : 8
        nodes = Self.emptyNodes(capacity)
        tags = Array(repeating: Self.emptyTag, count: capacity)
        deadlines = Array(repeating: .infinity, count: capacity)
        order.removeAll()
        count = 0
        totalCost = 0
    }

    /// The slots in eviction order (under LRU, from least to most recently used). A removal can
    /// move other entries to other slots, so the list is only good until the next one.
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
