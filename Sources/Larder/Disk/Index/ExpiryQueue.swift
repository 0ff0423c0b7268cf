/// A min-heap of index slots by a 32-bit expiry key, for ``DiskIndex``'s expiry order: each
/// element packs the key above the slot number into one `UInt64`, so that comparing elements
/// compares keys (then slots) and the heap costs 8 bytes an element.
///
/// The heap is lazy: an element's key is a lower bound of its slot's key when it was pushed,
/// and the owner pushes again only when a slot's key drops (a use that slides an update time
/// later pushes nothing). So a slot may have stale elements, and a popped one is checked
/// against the slot before it counts (see ``DiskIndex/takeExpired(by:now:limit:)``).
struct ExpiryQueue: Sendable {
    private(set) var elements: [UInt64] = []

    /// The number of elements, stale ones included.
    var count: Int { elements.count }

    /// A heap of `elements` in any order.
    /// - Complexity: O(*n*).
    init(_ elements: [UInt64] = []) {
        self.elements = elements
        guard elements.count > 1 else { return }
        for i in stride(from: elements.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    /// One element: `key` above `slot`.
    static func element(key: UInt32, slot: Int32) -> UInt64 {
        UInt64(key) << 32 | UInt64(UInt32(bitPattern: slot))
    }

    /// The key and the slot of an element.
    static func parts(_ element: UInt64) -> (key: UInt32, slot: Int32) {
        (UInt32(truncatingIfNeeded: element >> 32), Int32(bitPattern: UInt32(truncatingIfNeeded: element)))
    }

    /// The least element.
    var min: UInt64? { elements.first }

    /// - Complexity: O(log *n*).
    mutating func insert(_ element: UInt64) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard elements[child] < elements[parent] else { break }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes the least element.
    /// - Complexity: O(log *n*).
    @discardableResult
    mutating func removeMin() -> UInt64? {
        guard let first = elements.first else { return nil }
        let last = elements.removeLast()
        if !elements.isEmpty {
            elements[0] = last
            siftDown(0)
        }
        return first
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < elements.count else { return }
            let right = left + 1
            let child = right < elements.count && elements[right] < elements[left] ? right : left
            guard elements[child] < elements[parent] else { return }
            elements.swapAt(child, parent)
            parent = child
        }
    }
}

/// The index's two expiry orders: records of `ttl` 0 by their update time (their threshold is
/// the cache's default expiration, the same for all, which the index does not know), and
/// records with a `ttl` of their own by their deadline, update time plus `ttl`. Locked records
/// wait in neither: they never expire, and go back in when unlocked.
struct ExpiryQueues: Sendable {
    var byUpdateTime = ExpiryQueue()
    var byDeadline = ExpiryQueue()

    /// Elements in both, stale ones included.
    var count: Int { byUpdateTime.count + byDeadline.count }
}
