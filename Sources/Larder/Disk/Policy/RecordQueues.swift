/// Doubly linked queues over dense record ids (the disk index's slots): each record's links and
/// byte size live together in one array indexed by id (a use touches one cache line of it, not
/// one per field), the queue it is in in another, so a record costs 13 bytes here and no
/// allocation, and the whole state can be written out as arrays. A size is kept in 32 bits: a
/// record's payload is bounded far below 4 GiB by default, and the rare size that does not fit
/// (a raised `DiskCacheOptions.maximumRecordSize`) is kept beside, in a table of its own.
///
/// Each queue runs from its head (the oldest, the next victim) to its tail (the newest). Queue 0
/// means "in no queue"; the owner numbers the others from 1. Not thread-safe; its owner guards it.
struct RecordQueues {
    /// A record's neighbours towards the head and the tail (-1 for none), and its size in bytes
    /// while it is in a queue (``largeSize`` for one kept in ``largeSizes``): 12 bytes.
    struct Link {
        var previous: Int32
        var next: Int32
        var size: UInt32

        static let none = Link(previous: -1, next: -1, size: 0)
    }

    /// Per id: its links and size.
    private(set) var links: [Link] = []
    /// The sizes of at least ``largeSize`` bytes, by id.
    private(set) var largeSizes: [Int32: Int] = [:]
    /// Per id: the queue it is in, 0 for none.
    private(set) var queueOf: [UInt8] = []
    /// Per queue: its head, tail, number of records and bytes.
    private(set) var heads: [Int32]
    private(set) var tails: [Int32]
    private(set) var counts: [Int]
    private(set) var bytes: [Int]

    /// Queues numbered 1 through `queues`.
    init(queues: Int) {
        heads = Array(repeating: -1, count: queues + 1)
        tails = heads
        counts = Array(repeating: 0, count: queues + 1)
        bytes = counts
    }

    /// The queue `id` is in, 0 when it is in none (or was never seen).
    @inline(__always)
    func queue(of id: Int32) -> UInt8 {
        Int(id) < queueOf.count ? queueOf[Int(id)] : 0
    }

    /// The 32-bit size that stands for one kept in ``largeSizes``.
    static let largeSize = UInt32.max

    /// The size `id` was linked with.
    @inline(__always)
    func size(of id: Int32) -> Int {
        let size = links[Int(id)].size
        return size == Self.largeSize ? largeSizes[id, default: 0] : Int(size)
    }

    /// Room for ids below `ids` without growing the per-id arrays (reserved, not touched: what
    /// is never filled costs no resident memory).
    mutating func reserveCapacity(_ ids: Int) {
        links.reserveCapacity(ids)
        queueOf.reserveCapacity(ids)
    }

    /// The record after `id`, towards the tail of its queue.
    @inline(__always)
    func after(_ id: Int32) -> Int32 { links[Int(id)].next }

    /// Appends `id`, which is in no queue, at the tail of `queue`.
    mutating func append(_ id: Int32, size: Int, to queue: UInt8) {
        let i = Int(id)
        if i >= queueOf.count {
            // Only as far as `id`: the arrays' own growth is geometric, and the capacity it adds
            // stays untouched (not resident) until ids reach it.
            let grown = i + 1
            links.append(contentsOf: repeatElement(.none, count: grown - links.count))
            queueOf.append(contentsOf: repeatElement(0, count: grown - queueOf.count))
        }
        let q = Int(queue)
        let stored: UInt32
        if size >= Int(Self.largeSize) {
            stored = Self.largeSize
            largeSizes[id] = size
        } else {
            if links[i].size == Self.largeSize { largeSizes[id] = nil }
            stored = UInt32(size)
        }
        queueOf[i] = queue
        let tail = tails[q]
        links[i] = Link(previous: tail, next: -1, size: stored)
        if tail == -1 { heads[q] = id } else { links[Int(tail)].next = id }
        tails[q] = id
        counts[q] += 1
        bytes[q] += size
    }

    /// Takes `id` out of its queue; its size is kept until it is linked again.
    mutating func unlink(_ id: Int32) {
        let i = Int(id)
        let q = Int(queueOf[i])
        let link = links[i]
        let (before, after) = (link.previous, link.next)
        if before == -1 { heads[q] = after } else { links[Int(before)].next = after }
        if after == -1 { tails[q] = before } else { links[Int(after)].previous = before }
        queueOf[i] = 0
        links[i].previous = -1
        links[i].next = -1
        counts[q] -= 1
        bytes[q] -= link.size == Self.largeSize ? largeSizes[id, default: 0] : Int(link.size)
    }

    /// Moves `id` to the tail of `queue` (its own, for a use).
    mutating func move(_ id: Int32, to queue: UInt8) {
        // Already the newest of its queue: nothing would change (a record used twice in a row).
        if tails[Int(queue)] == id { return }
        let size = size(of: id)
        unlink(id)
        append(id, size: size, to: queue)
    }

    /// The ids of `queue` from head to tail.
    /// - Complexity: O(records in the queue).
    func ids(in queue: UInt8) -> [Int32] {
        var result: [Int32] = []
        var id = heads[Int(queue)]
        while id != -1 {
            result.append(id)
            id = links[Int(id)].next
        }
        return result
    }
}
