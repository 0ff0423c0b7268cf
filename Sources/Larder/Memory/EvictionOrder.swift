/// The fields an ``EvictionOrder`` keeps inline in each entry of its host: the links of the
/// entry's queue and a few bits. A free slot of the host may reuse `next` for its free list.
@usableFromInline
struct EvictionLink {
    @usableFromInline var previous: Int32
    @usableFromInline var next: Int32
    /// The queue the entry is in: ``EvictionOrder/window`` (the only one under LRU), probation or protected.
    @usableFromInline var queue: UInt8
    /// ``EvictionOrder/referenced`` and ``EvictionOrder/returning``.
    @usableFromInline var marks: UInt8

    @inlinable
    init(previous: Int32 = -1, next: Int32 = -1, queue: UInt8 = 0, marks: UInt8 = 0) {
        self.previous = previous
        self.next = next
        self.queue = queue
        self.marks = marks
    }
}

/// An entry that an ``EvictionOrder`` can order: it carries an ``EvictionLink`` and a 32-bit hash
/// of its key. ``MemoryCache``'s storage nodes are such entries; the disk index's can be next.
@usableFromInline
protocol EvictionEntry {
    /// The order's links and bits for this entry.
    var evictionLink: EvictionLink { get set }
    /// A hash of the entry's key (its low 32 bits suffice), for the frequency sketch.
    var evictionHash: UInt32 { get }
}

/// Which entry to evict next, under an ``EvictionPolicy``, for a host that keeps its entries in
/// an array of slots (`Int32` indices). The host owns the entries and this order's links inside
/// them; it tells the order about every insertion, use and removal, and asks it for victims.
///
/// - `.lru`: one doubly linked list in recency order (the `window` queue); a use relinks the
///   entry at the tail, and the head is the victim.
/// - `.tinyLFU`: three FIFO queues, a use only sets the entry's `referenced` bit and counts its
///   key in a ``FrequencySketch``. New entries enter the *window*; when it is over its share of
///   the capacity, its oldest unreferenced entry (a referenced one goes round again, bit cleared)
///   is the *candidate*, and the main area's next victim (the oldest unreferenced entry of
///   *probation*; a referenced one is promoted to *protected*, whose overflow is demoted back) is
///   compared with it: the candidate moves into probation only if the sketch counts it more often,
///   or if it is *returning* (it was refused recently and came back); the loser is evicted. While
///   the cache is within its limits, the window's overflow moves into probation without a contest.
///   The window's share starts at 1 % and is tuned by two ``EvictionHistory`` tables of keys that
///   recently left the window and the main area: a new key found in the window's (seen within the
///   last `capacity / 4` insertions) grows it by one entry and ages two protected entries, a key found
///   in the main area's (within its last `capacity / 4` evictions) shrinks it by one.
///
/// Not thread-safe; ``MemoryCache`` guards it.
@usableFromInline
struct EvictionOrder {
    /// A queue's ends and length.
    @usableFromInline
    struct Queue {
        @usableFromInline var head: Int32 = -1
        @usableFromInline var tail: Int32 = -1
        @usableFromInline var count = 0

        @inlinable
        init() {}
    }

    /// The queue numbers kept in ``EvictionLink/queue``.
    @inlinable static var window: UInt8 { 0 }
    @inlinable static var probation: UInt8 { 1 }
    @inlinable static var protected: UInt8 { 2 }
    /// The marks kept in ``EvictionLink/marks``.
    @inlinable static var referenced: UInt8 { 1 }
    @inlinable static var returning: UInt8 { 2 }

    @usableFromInline let policy: EvictionPolicy
    /// LRU's recency list, or TinyLFU's admission window.
    @usableFromInline var window = Queue()
    @usableFromInline var probation = Queue()
    @usableFromInline var protected = Queue()

    // TinyLFU's state; empty under LRU.
    @usableFromInline var sketch = FrequencySketch()
    @usableFromInline var windowHistory = EvictionHistory()
    @usableFromInline var mainHistory = EvictionHistory()
    /// The capacity the sizes below were last computed for, in entries.
    @usableFromInline var capacity = 0
    /// The window's share of the capacity, tuned by the histories.
    @usableFromInline var windowFraction = 0.01
    /// New entries so far: the window history's clock.
    @usableFromInline var insertions: UInt32 = 0
    /// Evictions from the main area so far: the main history's clock.
    @usableFromInline var mainEvictions: UInt32 = 0

    @inlinable
    init(policy: EvictionPolicy) {
        self.policy = policy
    }

    /// The number of entries in the order.
    @inlinable
    var count: Int { window.count &+ probation.count &+ protected.count }

    // MARK: Notifications from the host

    /// Notes a use of the entry in `slot` (a read, or a write that replaces its value).
    @inlinable
    mutating func recordUse<E: EvictionEntry>(_ slot: Int32, in entries: inout [E]) {
        switch policy.kind {
        case .lru:
            guard slot != window.tail else { return }
            unlink(slot, in: &entries)
            link(slot, to: Self.window, in: &entries)
        case .tinyLFU:
            entries[Int(slot)].evictionLink.marks |= Self.referenced
            sketch.increment(entries[Int(slot)].evictionHash)
        }
    }

    /// Adds the new entry in `slot`, with its link unset, as the newest.
    /// - Parameter capacity: How many entries the host holds at most (its count limit, or its
    ///   count when only a cost limits it), for sizing the window and the sketch.
    @inlinable
    mutating func insert<E: EvictionEntry>(_ slot: Int32, capacity: Int, in entries: inout [E]) {
        entries[Int(slot)].evictionLink = EvictionLink()
        switch policy.kind {
        case .lru:
            link(slot, to: Self.window, in: &entries)
        case .tinyLFU:
            resize(for: capacity)
            let hash = entries[Int(slot)].evictionHash
            insertions &+= 1
            sketch.increment(hash)
            let marks = _tuneWindow(forNewKey: hash, in: &entries)
            link(slot, to: Self.window, in: &entries)
            entries[Int(slot)].evictionLink.marks = marks
        }
    }

    /// Removes the entry in `slot`. An entry the host evicts (the one ``nextVictim(capacity:in:)``
    /// returned) is remembered in the history of the area it left; a removed or expired one is not.
    @inlinable
    mutating func remove<E: EvictionEntry>(_ slot: Int32, evicted: Bool, in entries: inout [E]) {
        if policy.kind == .tinyLFU && evicted {
            let hash = entries[Int(slot)].evictionHash
            if entries[Int(slot)].evictionLink.queue == Self.window {
                windowHistory.record(hash, at: insertions)
            } else {
                mainEvictions &+= 1
                mainHistory.record(hash, at: mainEvictions)
            }
        }
        unlink(slot, in: &entries)
    }

    /// The entry to evict now, or `nil` when the order is empty. The host must then remove it
    /// with `evicted: true`. Under TinyLFU this may move entries between queues: a candidate that
    /// wins its contest moves into probation, and the loser is returned.
    @inlinable
    mutating func nextVictim<E: EvictionEntry>(capacity: Int, in entries: inout [E]) -> Int32? {
        switch policy.kind {
        case .lru:
            return window.head == -1 ? nil : window.head
        case .tinyLFU:
            resize(for: capacity)
            let hasMain = probation.count &+ protected.count > 0
            if window.count > windowLimit && hasMain {
                return _contest(in: &entries)
            }
            if hasMain { return _mainVictim(in: &entries) }
            return window.count > 0 ? _windowVictim(in: &entries) : nil
        }
    }

    /// Moves the window's overflow into probation without a contest: the host calls it when it
    /// is within its limits again, so that the main area fills while there is room.
    @inlinable
    mutating func settle<E: EvictionEntry>(capacity: Int, in entries: inout [E]) {
        guard policy.kind == .tinyLFU else { return }
        resize(for: capacity)
        while window.count > windowLimit { _admit(_windowVictim(in: &entries), in: &entries) }
    }

    /// Forgets every entry; TinyLFU keeps its counts and histories, which describe the workload,
    /// not the entries.
    mutating func removeAll() {
        window = Queue()
        probation = Queue()
        protected = Queue()
    }

    /// The slots in eviction order: LRU from least to most recently used; TinyLFU the window,
    /// then probation, then protected, each oldest first.
    /// - Complexity: O(n).
    func slots<E: EvictionEntry>(in entries: [E]) -> [Int32] {
        var result: [Int32] = []
        result.reserveCapacity(count)
        for queue in [window, probation, protected] {
            var slot = queue.head
            while slot != -1 {
                result.append(slot)
                slot = entries[Int(slot)].evictionLink.next
            }
        }
        return result
    }

    // MARK: Sizes

    /// The window's size in entries: at least 1, at most the capacity.
    @inlinable
    var windowLimit: Int {
        max(1, min(capacity, Int(windowFraction * Double(capacity))))
    }

    /// Protected's size in entries: 80 % of the main area.
    @inlinable
    var protectedLimit: Int {
        max(0, capacity &- windowLimit) &* 4 / 5
    }

    /// Adopts a new capacity, growing the sketch and histories to it.
    @inlinable
    mutating func resize(for newCapacity: Int) {
        let newCapacity = max(newCapacity, 1)
        guard newCapacity != capacity else { return }
        capacity = newCapacity
        sketch.ensureCapacity(newCapacity)
        windowHistory.ensureCapacity(newCapacity)
        mainHistory.ensureCapacity(newCapacity)
    }

    // MARK: Queues

    @inlinable
    subscript(queue number: UInt8) -> Queue {
        get {
            switch number {
            case Self.window: window
            case Self.probation: probation
            default: protected
            }
        }
        set {
            switch number {
            case Self.window: window = newValue
            case Self.probation: probation = newValue
            default: protected = newValue
            }
        }
    }

    /// Appends `slot` to the tail of queue `number`.
    @inlinable
    mutating func link<E: EvictionEntry>(_ slot: Int32, to number: UInt8, in entries: inout [E]) {
        var queue = self[queue: number]
        entries[Int(slot)].evictionLink.previous = queue.tail
        entries[Int(slot)].evictionLink.next = -1
        entries[Int(slot)].evictionLink.queue = number
        if queue.tail == -1 { queue.head = slot } else { entries[Int(queue.tail)].evictionLink.next = slot }
        queue.tail = slot
        queue.count &+= 1
        self[queue: number] = queue
    }

    /// Takes `slot` out of its queue.
    @inlinable
    mutating func unlink<E: EvictionEntry>(_ slot: Int32, in entries: inout [E]) {
        let link = entries[Int(slot)].evictionLink
        var queue = self[queue: link.queue]
        if link.previous == -1 { queue.head = link.next } else { entries[Int(link.previous)].evictionLink.next = link.next }
        if link.next == -1 { queue.tail = link.previous } else { entries[Int(link.next)].evictionLink.previous = link.previous }
        queue.count &-= 1
        self[queue: link.queue] = queue
    }

    @inlinable
    mutating func move<E: EvictionEntry>(_ slot: Int32, to number: UInt8, in entries: inout [E]) {
        unlink(slot, in: &entries)
        link(slot, to: number, in: &entries)
    }

    /// Clears `slot`'s referenced bit and reports whether it was set.
    @inlinable
    mutating func takeReference<E: EvictionEntry>(_ slot: Int32, in entries: inout [E]) -> Bool {
        let marks = entries[Int(slot)].evictionLink.marks
        entries[Int(slot)].evictionLink.marks = marks & ~Self.referenced
        return marks & Self.referenced != 0
    }
}
