/// An exact LRU by bytes over a sample of the keys, holding only hashes: what an LRU disk tier
/// scaled down to the sample would hold. The adaptive policy replays its sampled requests
/// through one to learn whether plain LRU would miss less on the current workload.
/// Not thread-safe; its owner guards it.
struct SampledLRU {
    private var nodes: [UInt32: Int32] = [:]
    private var hashes: [UInt32] = []
    private var free: [Int32] = []
    private var order = RecordQueues(queues: 1)
    /// The byte budget of the sample.
    var capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The number of hashes it holds.
    var count: Int { order.counts[1] }

    /// Requests the key hashing to `hash`, of `size` bytes: whether LRU would have hit. A miss
    /// inserts it (unless it is larger than the capacity), evicting the least recently used.
    /// - Complexity: O(1) amortized.
    mutating func access(_ hash: UInt32, size: Int) -> Bool {
        if let node = nodes[hash] {
            order.move(node, to: 1)
            return true
        }
        guard size <= capacity else { return false }
        while order.bytes[1] + size > capacity { _evictHead() }
        let node: Int32
        if let reused = free.popLast() {
            node = reused
            hashes[Int(node)] = hash
        } else {
            node = Int32(hashes.count)
            hashes.append(hash)
        }
        nodes[hash] = node
        order.append(node, size: size, to: 1)
        return false
    }

    /// The hashes it holds and their sizes, least recently used first: given to ``access(_:size:)``
    /// in this order, an empty one of the same capacity holds the same.
    /// - Complexity: O(*n*).
    var leastRecentFirst: [(hash: UInt32, size: Int)] {
        order.ids(in: 1).map { (hashes[Int($0)], order.size(of: $0)) }
    }

    /// Forgets `hash` (its record was removed, not evicted).
    mutating func remove(_ hash: UInt32) {
        guard let node = nodes.removeValue(forKey: hash) else { return }
        order.unlink(node)
        free.append(node)
    }

    private mutating func _evictHead() {
        let node = order.heads[1]
        nodes[hashes[Int(node)]] = nil
        order.unlink(node)
        free.append(node)
    }
}
