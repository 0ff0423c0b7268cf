/// Least recently used first, by bytes: the disk tier's eviction order under `.lru`.
///
/// Records are the disk index's dense ids, each with a byte size. An insertion evicts the least
/// recently used records until the newcomer fits, and refuses a record larger than the whole
/// capacity, as libCacheSim's LRU does (so its misses match that simulator's to the request).
/// Memory: 17 bytes a record id (two links, the size, the queue byte).
package struct DiskLRUPolicy: Sendable {
    private var queues = RecordQueues(queues: 1)
    private static let order: UInt8 = 1

    /// The byte budget.
    package private(set) var capacity: Int

    /// A policy that holds at most `capacity` bytes.
    package init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The bytes of the records it holds.
    package var byteCount: Int { queues.bytes[1] }

    /// The number of records it holds.
    package var count: Int { queues.counts[1] }

    /// Whether it holds `id`.
    package func contains(_ id: Int32) -> Bool { queues.queue(of: id) != 0 }

    /// Notes a use of `id`, which it holds: it becomes the most recently used.
    package mutating func access(_ id: Int32) {
        guard contains(id) else { return }
        queues.move(id, to: Self.order)
    }

    /// Inserts `id`, which it does not hold, with `size` bytes, evicting the least recently used
    /// records until it fits; each victim is passed to `evict`, least recent first.
    /// - Returns: Whether `id` was admitted: false, and nothing evicted, when `size` exceeds the capacity.
    /// - Complexity: O(victims).
    @discardableResult
    package mutating func insert(_ id: Int32, size: Int, evicting evict: (Int32) -> Void) -> Bool {
        precondition(!contains(id), "record \(id) is already in the order")
        guard size <= capacity else { return false }
        while byteCount + size > capacity {
            let victim = queues.heads[1]
            queues.unlink(victim)
            evict(victim)
        }
        queues.append(id, size: max(0, size), to: Self.order)
        return true
    }

    /// Takes `id` out (the record was removed or expired), if it holds it.
    package mutating func remove(_ id: Int32) {
        guard contains(id) else { return }
        queues.unlink(id)
    }

    /// The records in eviction order: the next victim first.
    /// - Complexity: O(n).
    package var evictionOrder: [Int32] { queues.ids(in: Self.order) }
}
