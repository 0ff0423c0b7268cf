/// An exact LRU over key hashes only, no values: what an LRU cache of `capacity` entries would
/// hold. TinyLFU replays a sample of its requests through one, scaled down, to learn whether
/// plain LRU would miss less than it does on the current workload (see
/// ``EvictionOrder/_sampleRequest(_:hit:)``).
///
/// Not thread-safe; its owner guards it.
@usableFromInline
struct ShadowLRU {
    /// Per node: the key's hash and its neighbours, `previous` towards the least recently used.
    @usableFromInline var hashes: [UInt32] = []
    @usableFromInline var previous: [Int32] = []
    @usableFromInline var next: [Int32] = []
    /// The node of each hash held.
    @usableFromInline var nodes: [UInt32: Int32] = [:]
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

    /// How many hashes it holds.
    @inlinable
    var count: Int { nodes.count }

    /// Requests `hash`: whether LRU would have hit. A miss adds it, dropping the least recently
    /// used hashes beyond the capacity; either way it becomes the most recently used.
    /// - Complexity: O(1) amortized.
    @inlinable
    mutating func access(_ hash: UInt32) -> Bool {
        if let node = nodes[hash] {
            if node != tail {
                _unlink(node)
                _append(node)
            }
            return true
        }
        while nodes.count >= max(capacity, 1) { remove(hashes[Int(head)]) }
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
        nodes[hash] = node
        _append(node)
        return false
    }

    /// Forgets `hash`, if it holds it.
    @inlinable
    mutating func remove(_ hash: UInt32) {
        guard let node = nodes.removeValue(forKey: hash) else { return }
        _unlink(node)
        free.append(node)
    }

    /// Drops the least recently used hashes until it holds at most `count`.
    @inlinable
    mutating func removeLeastRecent(keeping count: Int) {
        while nodes.count > max(count, 0) { remove(hashes[Int(head)]) }
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
