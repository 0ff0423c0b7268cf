/// Doubly linked queues over dense record ids (the disk index's slots): the links, each record's
/// byte size and the queue it is in live in plain arrays indexed by id, so a record costs 13
/// bytes here and no allocation, and the whole state can be written out as arrays. A size is
/// kept in 32 bits: a record's payload is bounded far below 4 GiB by default, and the rare
/// size that does not fit (a raised `DiskCacheOptions.maximumRecordSize`) is kept beside, in
/// a table of its own.
///
/// Each queue runs from its head (the oldest, the next victim) to its tail (the newest). Queue 0
/// means "in no queue"; the owner numbers the others from 1. Not thread-safe; its owner guards it.
struct RecordQueues {
    /// Per id: its neighbours towards the head and the tail, or -1.
    private(set) var previous: [Int32] = []
    private(set) var next: [Int32] = []
    /// Per id: its size in bytes, while it is in a queue; ``largeSize`` for one kept in
    /// ``largeSizes``.
    private(set) var sizes: [UInt32] = []
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
        let size = sizes[Int(id)]
        return size == Self.largeSize ? largeSizes[id, default: 0] : Int(size)
    }

    /// Room for ids below `ids` without growing the per-id arrays (reserved, not touched: what
    /// is never filled costs no resident memory).
    mutating func reserveCapacity(_ ids: Int) {
        previous.reserveCapacity(ids)
        next.reserveCapacity(ids)
        sizes.reserveCapacity(ids)
        queueOf.reserveCapacity(ids)
    }

    /// The record after `id`, towards the tail of its queue.
    @inline(__always)
    func after(_ id: Int32) -> Int32 { next[Int(id)] }

    /// Appends `id`, which is in no queue, at the tail of `queue`.
    mutating func append(_ id: Int32, size: Int, to queue: UInt8) {
        let i = Int(id)
        if i >= queueOf.count {
            // Only as far as `id`: the arrays' own growth is geometric, and the capacity it adds
            // stays untouched (not resident) until ids reach it.
            let grown = i + 1
            previous.append(contentsOf: repeatElement(-1, count: grown - previous.count))
            next.append(contentsOf: repeatElement(-1, count: grown - next.count))
            sizes.append(contentsOf: repeatElement(0, count: grown - sizes.count))
            queueOf.append(contentsOf: repeatElement(0, count: grown - queueOf.count))
        }
        let q = Int(queue)
        if size >= Int(Self.largeSize) {
            sizes[i] = Self.largeSize
            largeSizes[id] = size
        } else {
            if sizes[i] == Self.largeSize { largeSizes[id] = nil }
            sizes[i] = UInt32(size)
        }
        queueOf[i] = queue
        previous[i] = tails[q]
        next[i] = -1
        if tails[q] == -1 { heads[q] = id } else { next[Int(tails[q])] = id }
        tails[q] = id
        counts[q] += 1
        bytes[q] += size
    }

    /// Takes `id` out of its queue; its size is kept until it is linked again.
    mutating func unlink(_ id: Int32) {
        let i = Int(id)
        let q = Int(queueOf[i])
        let (before, after) = (previous[i], next[i])
        if before == -1 { heads[q] = after } else { next[Int(before)] = after }
        if after == -1 { tails[q] = before } else { previous[Int(after)] = before }
        queueOf[i] = 0
        previous[i] = -1
        next[i] = -1
        counts[q] -= 1
        bytes[q] -= size(of: id)
    }

    /// Moves `id` to the tail of `queue` (its own, for a use).
    mutating func move(_ id: Int32, to queue: UInt8) {
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
            id = next[Int(id)]
        }
        return result
    }
}
