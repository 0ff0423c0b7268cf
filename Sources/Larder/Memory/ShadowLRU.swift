/// An exact LRU over key hashes only, no values: what an LRU cache of `capacity` entries would
/// hold. TinyLFU replays a sample of its requests through one, scaled down, to learn whether
/// plain LRU would miss less than it does on the current workload (see
/// ``EvictionOrder/_sampleRequest(_:hit:)``).
///
/// The hashes are found through a small open-addressing table of node numbers (linear probing,
/// at most half full, removal by shifting the probe run back), not a `Dictionary`: every request
/// of a small cache is sampled, and a `Dictionary` spent most of such a hit hashing the hash again
/// (SipHash) before relinking the node.
///
/// Not thread-safe; its owner guards it.
@usableFromInline
struct ShadowLRU {
    /// Per node: the key's hash and its neighbours, `previous` towards the least recently used.
    @usableFromInline var hashes: [UInt32] = []
    @usableFromInline var previous: [Int32] = []
    @usableFromInline var next: [Int32] = []
    /// The open-addressing table: per bucket, the node whose hash lives there, or -1. A power of
    /// two of buckets, at least twice the count.
    @usableFromInline var table: [Int32] = []
    /// How many hashes it holds.
    @usableFromInline var count = 0
    /// Nodes no hash holds, for reuse.
    @usableFromInline var free: [Int32] = []
    /// The least and the most recently used node.
    @usableFromInline var head: Int32 = -1
    @usableFromInline var tail: Int32 = -1
    /// How many hashes it holds at most.
    @usableFromInline var capacity = 1

    @inlinable
    init(capacity: Int = 1) {
        self.capacity = capacity
    }

    /// Requests `hash`: whether LRU would have hit. A miss adds it, dropping the least recently
    /// used hashes beyond the capacity; either way it becomes the most recently used.
    /// - Complexity: O(1) amortized.
    @inlinable
    mutating func access(_ hash: UInt32) -> Bool {
        let (bucket, found) = _find(hash)
        if found != -1 {
            if found != tail {
                _unlink(found)
                _append(found)
            }
            return true
        }
        if count >= max(capacity, 1) {
            while count >= max(capacity, 1) { remove(hashes[Int(head)]) }
            return _add(hash, at: _find(hash).bucket)
        }
        return _add(hash, at: bucket)
    }

    /// Adds `hash`, which it does not hold, in the empty `bucket` that ends its probe run, as
    /// the most recently used; returns `false` (a miss).
    @inlinable
    mutating func _add(_ hash: UInt32, at bucket: Int) -> Bool {
        let node: Int32
        if let reused = free.popLast() {
            node = reused
            hashes[Int(node)] = hash
        } else {
            node = Int32(hashes.count)
            hashes.append(hash)
            previous.append(-1)
            next.append(-1)
        }
        count &+= 1
        if count &* 2 > table.count {
            _grow()
            table[_find(hash).bucket] = node
        } else {
            table[bucket] = node
        }
        _append(node)
        return false
    }

    /// Forgets `hash`, if it holds it.
    @inlinable
    mutating func remove(_ hash: UInt32) {
        let (bucket, node) = _find(hash)
        guard node != -1 else { return }
        _takeOut(bucket)
        count &-= 1
        _unlink(node)
        free.append(node)
    }

    /// Drops the least recently used hashes until it holds at most `count`.
    @inlinable
    mutating func removeLeastRecent(keeping count: Int) {
        while self.count > max(count, 0) { remove(hashes[Int(head)]) }
    }

    /// The bucket where `hash` starts its probe run: its top bits after a multiplication by an
    /// odd constant (Fibonacci hashing), which spreads hashes whatever bits they differ in.
    @inlinable @inline(__always)
    func _home(_ hash: UInt32) -> Int {
        let mixed = UInt64(hash) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed &>> 32) & (table.count &- 1)
    }

    /// The bucket holding `hash` and its node, or the empty bucket ending its probe run and -1.
    @inlinable @inline(__always)
    func _find(_ hash: UInt32) -> (bucket: Int, node: Int32) {
        guard !table.isEmpty else { return (0, -1) }
        let mask = table.count &- 1
        var bucket = _home(hash)
        while true {
            let node = table[bucket]
            if node == -1 || hashes[Int(node)] == hash { return (bucket, node) }
            bucket = (bucket &+ 1) & mask
        }
    }

    /// Empties `bucket` and shifts the rest of its probe run back, so that no lookup needs a tombstone.
    @inlinable
    mutating func _takeOut(_ bucket: Int) {
        let mask = table.count &- 1
        var hole = bucket
        var next = (hole &+ 1) & mask
        while table[next] != -1 {
            let home = _home(hashes[Int(table[next])])
            // It may move back into the hole unless its home bucket lies after the hole.
            if (next &- home) & mask >= (next &- hole) & mask {
                table[hole] = table[next]
                hole = next
            }
            next = (next &+ 1) & mask
        }
        table[hole] = -1
    }

    /// Doubles the table (to 16 buckets at first) and puts every node back.
    @usableFromInline
    mutating func _grow() {
        let size = max(16, table.count &* 2)
        table = [Int32](repeating: -1, count: size)
        var node = head
        while node != -1 {
            var bucket = _home(hashes[Int(node)])
            while table[bucket] != -1 { bucket = (bucket &+ 1) & (size &- 1) }
            table[bucket] = node
            node = next[Int(node)]
        }
    }

    /// Forgets every hash.
    mutating func removeAll() {
        self = ShadowLRU(capacity: capacity)
    }

    /// The hashes from the least to the most recently used.
    /// - Complexity: O(count).
    func hashesInOrder() -> [UInt32] {
        var result: [UInt32] = []
        var node = head
        while node != -1 {
            result.append(hashes[Int(node)])
            node = next[Int(node)]
        }
        return result
    }

    @inlinable
    mutating func _append(_ node: Int32) {
        previous[Int(node)] = tail
        next[Int(node)] = -1
        if tail == -1 { head = node } else { next[Int(tail)] = node }
        tail = node
    }

    @inlinable
    mutating func _unlink(_ node: Int32) {
        let before = previous[Int(node)]
        let after = next[Int(node)]
        if before == -1 { head = after } else { next[Int(before)] = after }
        if after == -1 { tail = before } else { previous[Int(after)] = before }
    }
}
