/// The fields an ``EvictionOrder`` keeps inline in each entry of its host: the links of the
/// entry's queue and a few bits.
///
/// The links, which only insertions and evictions use, come first, and the fields a TinyLFU hit
/// reads (`stamp`, `marks`, `queue`) last, so that a host can put them next to its key and value
/// (see ``EntryStorage/Node``). 15 bytes.
@usableFromInline
struct EvictionLink {
    @usableFromInline var previous: Int32
    @usableFromInline var next: Int32
    /// TinyLFU's clock (``EvictionOrder/clock``, its low 32 bits) at the entry's insertion or
    /// last use in the window: where its window entry belongs in the window's recency buckets.
    /// Main entries' stamps are not kept up to date (no one reads them).
    @usableFromInline var stamp: UInt32
    /// ``EvictionOrder/referenced`` and ``EvictionOrder/returning`` in the low bits, and TinyLFU's
    /// count of the entry's uses in the high four (see ``EvictionOrder/countUnit``).
    @usableFromInline var marks: UInt8
    /// The queue the entry is in: ``EvictionOrder/window`` (the only one under LRU), probation or protected.
    @usableFromInline var queue: UInt8
    /// The window bucket the entry was linked to: where to unlink it, unless a splice has since
    /// moved it to the next bucket (then its bucket is found by scanning the buckets' ends).
    @usableFromInline var bucket: UInt8 = 0

    @inlinable
    init(previous: Int32 = -1, next: Int32 = -1, queue: UInt8 = 0, marks: UInt8 = 0, stamp: UInt32 = 0) {
        self.previous = previous
        self.next = next
        self.queue = queue
        self.marks = marks
        self.stamp = stamp
    }
}

/// An entry that an ``EvictionOrder`` can order: it carries an ``EvictionLink`` and a 32-bit hash
/// of its key. ``MemoryCache``'s storage nodes are such entries; the disk index's can be next.
@usableFromInline
protocol EvictionEntry {
    /// The order's links and bits for this entry.
    var evictionLink: EvictionLink { get set }
    /// A hash of the entry's key (its low 32 bits suffice), for the frequency sketch.
    var hash: UInt32 { get }
}

/// Which entry to evict next, under an ``EvictionPolicy``, for a host that keeps its entries in
/// an array of slots (`Int32` indices). The host owns the entries and this order's links inside
/// them; it tells the order about every insertion, use and removal, and asks it for victims.
///
/// - `.lru`: one doubly linked list in recency order (the `window` queue); a use relinks the
///   entry at the tail, and the head is the victim.
/// - `.tinyLFU`: three FIFO queues; a use only sets the entry's `referenced` bit and adds one to
///   a 4-bit count in its link, so a hit touches nothing but the entry. A ``FrequencySketch``
///   remembers how often keys that are not cached were used: a new key is counted there, and an
///   entry's count goes back into it when the entry leaves. An entry's frequency is its count
///   plus the sketch's estimate for its key, at most 15; every `20 × capacity` uses, all counts
///   and the sketch are halved. New entries enter the *window*; when it is over its share of
///   the capacity, its least recently used entry (nearly: see below) is the *candidate*, and the main area's next victim (the oldest unreferenced entry of
///   *probation*; a referenced one is promoted to *protected*, whose overflow is demoted back) is
///   compared with it: the candidate moves into probation only if its frequency is higher, or if
///   it is *returning* (it was refused recently and came back); the loser is evicted. While
///   the cache is within its limits, the window's overflow moves into probation without a contest.
///   A use also writes the entry's *stamp* (a clock of uses and insertions), and the window is kept
///   as 32 FIFO buckets of consecutive stretches of that clock: its candidate is the head of the
///   oldest bucket once that entry's stamp says it belongs there (a used one moves to the bucket
///   of its last use), so the window evicts in nearly LRU order although a use relinks nothing.
///   The window's share starts at 1 % and is tuned by two ``EvictionHistory`` tables of keys that
///   recently left the window and the main area: a new key found in the window's (seen within the
///   last `capacity / 4` insertions) grows it and ages two protected entries, a key found in the
///   main area's (within its last `capacity / 4` evictions) shrinks it; by one entry, and by up to
///   eight when several signals in a row agree. A sample of the requests is also replayed through
///   a scaled-down ``ShadowLRU`` (which, while the order is full, holds as many keys as the order
///   holds sampled ones): while it misses significantly less than this order on the same
///   keys, the window's share gets a floor (see `EvictionOrder+Shadow.swift`), so that workloads
///   on which frequency misleads the histories still get an LRU-like cache.
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
    /// One use in the count kept in the high four bits of ``EvictionLink/marks``.
    @inlinable static var countUnit: UInt8 { 0x10 }

    @usableFromInline let policy: EvictionPolicy
    /// LRU's recency list. Under TinyLFU only its `count` is used: the window's entries are in
    /// `buckets`.
    @usableFromInline var window = Queue()
    /// TinyLFU's window: a ring of ``bucketCount`` FIFO queues, `newestBucket` the current one and
    /// the one after it the oldest. Their `count`s are not kept; `window.count` is the total.
    @usableFromInline var buckets: [Queue] = []
    /// The clock at which each bucket's stretch began.
    @usableFromInline var bucketStarts: [UInt64] = []
    @usableFromInline var newestBucket = 0
    /// How many of the oldest buckets are known to be empty: where the candidate search starts.
    @usableFromInline var emptyOldBuckets = 0
    /// TinyLFU's clock: one tick per use and per insertion.
    @usableFromInline var clock: UInt64 = 0
    /// A moving average of the window candidates' ages (clock ticks since their last use), which
    /// sets the length of a bucket's stretch: the ring spans about twice that age.
    @usableFromInline var candidateAge: UInt64 = 1024
    /// How many window-tuning signals in a row went the same way: positive for growth, negative
    /// for shrinkage. Each step moves the window by that many entries.
    @usableFromInline var tuneMomentum = 0
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
    /// Uses counted (in entries and the sketch) since the counts were last halved.
    @usableFromInline var uses = 0
    /// An exact LRU over a sample of the keys, scaled down with them: what LRU would hit.
    @usableFromInline var shadow = ShadowLRU()
    /// Which keys are sampled: those whose hash has these bits (of its high half) all clear.
    @usableFromInline var sampleMask: UInt32 = 0
    /// The least the window's share may be: it rises while the shadow misses clearly less than
    /// this order does on the sampled keys, and falls while it does not.
    @usableFromInline var windowFloor = 0.0
    /// The sampled requests since the last verdict, of which only this order missed, only the
    /// shadow missed, and the shadow missed.
    @usableFromInline var sampledRequests = 0
    @usableFromInline var onlyOrderMissed = 0
    @usableFromInline var onlyShadowMissed = 0
    @usableFromInline var shadowMisses = 0
    /// How many of the order's entries are of sampled keys. While the order is full, the shadow
    /// holds that many keys: the share of sampled keys among what an LRU cache of this capacity
    /// would hold, not `capacity` scaled by the sampling rate, which misjudges LRU where the
    /// sample's share of a working set strays from the rate and the working set is near the capacity.
    @usableFromInline var sampledEntries = 0

    @inlinable
    init(policy: EvictionPolicy) {
        self.policy = policy
        if policy.kind == .tinyLFU {
            buckets = [Queue](repeating: Queue(), count: Self.bucketCount)
            bucketStarts = [UInt64](repeating: 0, count: Self.bucketCount)
        }
    }

    /// The number of entries in the order.
    @inlinable
    var count: Int { window.count &+ probation.count &+ protected.count }

    // MARK: Notifications from the host
    //
    // Each is always inlined with LRU's branch, a few instructions, written out; TinyLFU's work
    // is in out-of-line `_tinyLFU...` functions, so that LRU pays nothing for it on its paths.

    /// Notes a use of the entry in `slot` (a read, or a write that replaces its value).
    @inlinable @inline(__always)
    mutating func recordUse<E: EvictionEntry>(_ slot: Int32, in entries: inout [E]) {
        if policy.kind == .lru {
            guard slot != window.tail else { return }
            Self.unlink(slot, from: &window, in: &entries)
            Self.link(slot, to: &window, number: Self.window, in: &entries)
        } else {
            // A hit writes only what changes: the marks until the count saturates, and the stamp
            // of a window entry (only the window reads stamps). A main entry that is hit often
            // is thus only read, and its line stays clean, as a dictionary's would.
            let marks = entries[Int(slot)].evictionLink.marks
            let used = (marks < 0xF0 ? marks &+ Self.countUnit : marks) | Self.referenced
            clock &+= 1
            if used != marks { entries[Int(slot)].evictionLink.marks = used }
            if entries[Int(slot)].evictionLink.queue == Self.window {
                entries[Int(slot)].evictionLink.stamp = UInt32(truncatingIfNeeded: clock)
            }
            _countUse(in: &entries)
            let hash = entries[Int(slot)].hash
            if _isSampled(hash) { _sampleRequest(hash, hit: true) }
        }
    }

    /// Notes one counted use, and halves every count once there have been `20 × capacity`.
    @inlinable @inline(__always)
    mutating func _countUse<E: EvictionEntry>(in entries: inout [E]) {
        uses &+= 1
        if uses >= 20 &* capacity { _age(in: &entries) }
    }

    /// Adds the new entry in `slot`, with its link unset, as the newest.
    /// - Parameter capacity: How many entries the host holds at most (its count limit, or its
    ///   count when only a cost limits it), for sizing the window and the sketch.
    @inlinable @inline(__always)
    mutating func insert<E: EvictionEntry>(_ slot: Int32, capacity: Int, in entries: inout [E]) {
        entries[Int(slot)].evictionLink = EvictionLink()
        if policy.kind == .lru {
            Self.link(slot, to: &window, number: Self.window, in: &entries)
        } else {
            _tinyLFUInsert(slot, capacity: capacity, in: &entries)
        }
    }

    /// Removes the entry in `slot`. An entry the host evicts (the one ``nextVictim(capacity:in:)``
    /// returned) is remembered in the history of the area it left; a removed or expired one is not.
    @inlinable @inline(__always)
    mutating func remove<E: EvictionEntry>(_ slot: Int32, evicted: Bool, in entries: inout [E]) {
        if policy.kind == .lru {
            Self.unlink(slot, from: &window, in: &entries)
        } else {
            _tinyLFURemove(slot, evicted: evicted, in: &entries)
        }
    }

    /// The entry to evict now, or `nil` when the order is empty. The host must then remove it
    /// with `evicted: true`. Under TinyLFU this may move entries between queues: a candidate that
    /// wins its contest moves into probation, and the loser is returned.
    @inlinable @inline(__always)
    mutating func nextVictim<E: EvictionEntry>(capacity: Int, in entries: inout [E]) -> Int32? {
        if policy.kind == .lru {
            return window.head == -1 ? nil : window.head
        }
        return _tinyLFUNextVictim(capacity: capacity, in: &entries)
    }

    /// Moves the window's overflow into probation without a contest: the host calls it when it
    /// is within its limits again, so that the main area fills while there is room.
    @inlinable @inline(__always)
    mutating func settle<E: EvictionEntry>(capacity: Int, in entries: inout [E]) {
        if policy.kind == .tinyLFU { _tinyLFUSettle(capacity: capacity, in: &entries) }
    }

    /// Follows one entry from slot `old` to slot `new`, where the host has moved it, links and all:
    /// its neighbours (or its queue's ends) now point at `new`.
    @inlinable
    mutating func relocate<E: EvictionEntry>(from old: Int32, to new: Int32, in entries: UnsafeMutableBufferPointer<E>) {
        let link = entries[Int(new)].evictionLink
        let inBucket = link.queue == Self.window && policy.kind == .tinyLFU
        if inBucket && (link.previous == -1 || link.next == -1) {
            let hint = Int(link.bucket)
            if (link.previous != -1 || buckets[hint].head == old) && (link.next != -1 || buckets[hint].tail == old) {
                if link.previous == -1 { buckets[hint].head = new }
                if link.next == -1 { buckets[hint].tail = new }
            } else {
                for i in buckets.indices {
                    if buckets[i].head == old { buckets[i].head = new }
                    if buckets[i].tail == old { buckets[i].tail = new }
                }
            }
        }
        if link.previous == -1 {
            if !inBucket { Self.setHead(new, of: link.queue, in: &self) }
        } else {
            entries[Int(link.previous)].evictionLink.next = new
        }
        if link.next == -1 {
            if !inBucket { Self.setTail(new, of: link.queue, in: &self) }
        } else {
            entries[Int(link.next)].evictionLink.previous = new
        }
    }

    @inlinable
    static func setHead(_ slot: Int32, of number: UInt8, in order: inout EvictionOrder) {
        switch number {
        case window: order.window.head = slot
        case probation: order.probation.head = slot
        default: order.protected.head = slot
        }
    }

    @inlinable
    static func setTail(_ slot: Int32, of number: UInt8, in order: inout EvictionOrder) {
        switch number {
        case window: order.window.tail = slot
        case probation: order.probation.tail = slot
        default: order.protected.tail = slot
        }
    }

    /// Follows the host's entries to new slots: `newSlots[old]` is where the entry in slot `old`
    /// now is, links and all, and the links still name old slots.
    /// - Complexity: O(n).
    @inlinable
    mutating func relocate<E: EvictionEntry>(to newSlots: [Int32], in entries: inout [E]) {
        Self.relocate(&window, to: newSlots, in: &entries)
        for i in buckets.indices { Self.relocate(&buckets[i], to: newSlots, in: &entries) }
        Self.relocate(&probation, to: newSlots, in: &entries)
        Self.relocate(&protected, to: newSlots, in: &entries)
    }

    @inlinable
    static func relocate<E: EvictionEntry>(_ queue: inout Queue, to newSlots: [Int32], in entries: inout [E]) {
        func moved(_ slot: Int32) -> Int32 { slot == -1 ? -1 : newSlots[Int(slot)] }
        queue.head = moved(queue.head)
        queue.tail = moved(queue.tail)
        var slot = queue.head
        while slot != -1 {
            var link = entries[Int(slot)].evictionLink
            link.previous = moved(link.previous)
            link.next = moved(link.next)
            entries[Int(slot)].evictionLink = link
            slot = link.next
        }
    }

    /// Forgets every entry; TinyLFU keeps its counts and histories, which describe the workload,
    /// not the entries, and empties its shadow LRU, as an LRU cache would be emptied.
    mutating func removeAll() {
        window = Queue()
        probation = Queue()
        protected = Queue()
        for i in buckets.indices { buckets[i] = Queue() }
        shadow.removeAll()
        sampledEntries = 0
    }

    /// The slots in eviction order: LRU from least to most recently used; TinyLFU the window's
    /// buckets from the oldest, then probation, then protected, each oldest first.
    /// - Complexity: O(n).
    func slots<E: EvictionEntry>(in entries: [E]) -> [Int32] {
        var result: [Int32] = []
        result.reserveCapacity(count)
        let windowQueues = policy.kind == .lru ? [window] : (1 ... buckets.count).map { buckets[(newestBucket + $0) % buckets.count] }
        for queue in windowQueues + [probation, protected] {
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
    mutating func resize<E: EvictionEntry>(for newCapacity: Int, in entries: [E]) {
        let newCapacity = max(newCapacity, 1)
        guard newCapacity != capacity else { return }
        capacity = newCapacity
        _resizeShadow(in: entries)
        sketch.ensureCapacity(newCapacity)
        windowHistory.ensureCapacity(newCapacity)
        mainHistory.ensureCapacity(newCapacity)
    }

    // MARK: Queues

    @inlinable
    subscript(queue number: UInt8) -> Queue {
        switch number {
        case Self.window: window
        case Self.probation: probation
        default: protected
        }
    }

    /// Appends `slot` to the tail of queue `number`.
    @inlinable
    mutating func link<E: EvictionEntry>(_ slot: Int32, to number: UInt8, in entries: inout [E]) {
        switch number {
        case Self.window where policy.kind == .tinyLFU: _linkToWindow(slot, bucket: newestBucket, in: &entries)
        case Self.window: Self.link(slot, to: &window, number: number, in: &entries)
        case Self.probation: Self.link(slot, to: &probation, number: number, in: &entries)
        default: Self.link(slot, to: &protected, number: number, in: &entries)
        }
    }

    /// Takes `slot` out of its queue.
    @inlinable
    mutating func unlink<E: EvictionEntry>(_ slot: Int32, in entries: inout [E]) {
        switch entries[Int(slot)].evictionLink.queue {
        case Self.window where policy.kind == .tinyLFU: _unlinkFromWindow(slot, in: &entries)
        case Self.window: Self.unlink(slot, from: &window, in: &entries)
        case Self.probation: Self.unlink(slot, from: &probation, in: &entries)
        default: Self.unlink(slot, from: &protected, in: &entries)
        }
    }

    @inlinable @inline(__always)
    static func link<E: EvictionEntry>(_ slot: Int32, to queue: inout Queue, number: UInt8, in entries: inout [E]) {
        let tail = queue.tail
        entries[Int(slot)].evictionLink.previous = tail
        entries[Int(slot)].evictionLink.next = -1
        entries[Int(slot)].evictionLink.queue = number
        if tail == -1 { queue.head = slot } else { entries[Int(tail)].evictionLink.next = slot }
        queue.tail = slot
        queue.count &+= 1
    }

    @inlinable @inline(__always)
    static func unlink<E: EvictionEntry>(_ slot: Int32, from queue: inout Queue, in entries: inout [E]) {
        let previous = entries[Int(slot)].evictionLink.previous
        let next = entries[Int(slot)].evictionLink.next
        if previous == -1 { queue.head = next } else { entries[Int(previous)].evictionLink.next = next }
        if next == -1 { queue.tail = previous } else { entries[Int(next)].evictionLink.previous = previous }
        queue.count &-= 1
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
