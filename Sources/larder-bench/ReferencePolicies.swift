// Bench-only reference policies for `hitratio --synthetic`: straightforward simulators of
// published policies (CLOCK, SIEVE, S3-FIFO, ARC, 2Q), so that a synthetic trace, which has no
// row in expected.csv, still has a "best non-oracle policy" to compare with. They count misses
// only (get; on a miss, insert) and are not part of the package. On the recorded traces
// (`hitratio --references`) CLOCK, SIEVE and ARC count exactly libCacheSim's misses in
// expected.csv, S3-FIFO and 2Q within 0.5 % (they differ in small details of queue sizing).

/// A set of keys in insertion order with O(1) push, pop, removal and lookup: the queues and
/// ghost lists of the simulators.
struct KeyQueue {
    private var slots: [UInt32: Int32] = [:]
    private var keys: [UInt32] = []
    private var previous: [Int32] = []
    private var next: [Int32] = []
    private var free: [Int32] = []
    private var head: Int32 = -1  // oldest
    private var tail: Int32 = -1  // newest
    private(set) var count = 0

    func contains(_ key: UInt32) -> Bool { slots[key] != nil }

    /// Appends `key` as the newest; it must not be in the queue.
    mutating func push(_ key: UInt32) {
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
            keys[Int(slot)] = key
        } else {
            slot = Int32(keys.count)
            keys.append(key)
            previous.append(-1)
            next.append(-1)
        }
        slots[key] = slot
        previous[Int(slot)] = tail
        next[Int(slot)] = -1
        if tail == -1 { head = slot } else { next[Int(tail)] = slot }
        tail = slot
        count += 1
    }

    /// Takes out the oldest key.
    mutating func popOldest() -> UInt32? {
        guard head != -1 else { return nil }
        let key = keys[Int(head)]
        remove(key)
        return key
    }

    /// The oldest key, left in place.
    var oldest: UInt32? { head == -1 ? nil : keys[Int(head)] }

    /// Takes `key` out, if it is in the queue.
    @discardableResult
    mutating func remove(_ key: UInt32) -> Bool {
        guard let slot = slots.removeValue(forKey: key) else { return false }
        let (before, after) = (previous[Int(slot)], next[Int(slot)])
        if before == -1 { head = after } else { next[Int(before)] = after }
        if after == -1 { tail = before } else { previous[Int(after)] = before }
        free.append(slot)
        count -= 1
        return true
    }

    /// The key just newer than `key`, or `nil` for the newest.
    func newer(than key: UInt32) -> UInt32? {
        guard let slot = slots[key], next[Int(slot)] != -1 else { return nil }
        return keys[Int(next[Int(slot)])]
    }
}

/// The reference policies, by the names `hitratio` prints.
let referencePolicies: [(name: String, misses: @Sendable ([UInt32], Int) -> Int)] = [
    ("clock", clockMisses),
    ("sieve", sieveMisses),
    ("s3fifo", s3fifoMisses),
    ("arc", arcMisses),
    ("2q", twoQMisses),
]

/// CLOCK: a ring of slots with a reference bit each; the hand clears set bits until it finds a
/// clear one, and evicts that.
func clockMisses(_ trace: [UInt32], capacity: Int) -> Int {
    var slots: [UInt32: Int] = [:]
    var ring: [UInt32] = []
    var referenced: [Bool] = []
    var hand = 0
    var misses = 0
    for key in trace {
        if let slot = slots[key] {
            referenced[slot] = true
            continue
        }
        misses += 1
        if ring.count < capacity {
            slots[key] = ring.count
            ring.append(key)
            referenced.append(false)
            continue
        }
        while referenced[hand] {
            referenced[hand] = false
            hand = (hand + 1) % capacity
        }
        slots[ring[hand]] = nil
        ring[hand] = key
        slots[key] = hand
        hand = (hand + 1) % capacity
    }
    return misses
}

/// SIEVE (Zhang et al., NSDI 2024): one FIFO queue; a hit sets a bit; a hand walks from the
/// oldest entry to newer ones, clearing bits, and evicts the first clear one, staying there.
func sieveMisses(_ trace: [UInt32], capacity: Int) -> Int {
    var queue = KeyQueue()
    var visited: [UInt32: Bool] = [:]
    var hand: UInt32? = nil
    var misses = 0
    for key in trace {
        if visited[key] != nil {
            visited[key] = true
            continue
        }
        misses += 1
        if queue.count >= capacity {
            var candidate = hand ?? queue.oldest!
            while visited[candidate] == true {
                visited[candidate] = false
                candidate = queue.newer(than: candidate) ?? queue.oldest!
            }
            hand = queue.newer(than: candidate)
            queue.remove(candidate)
            visited[candidate] = nil
        }
        queue.push(key)
        visited[key] = false
    }
    return misses
}

/// S3-FIFO (Yang et al., SOSP 2023): a small FIFO (10 %), a main FIFO and a ghost FIFO of keys;
/// a hit raises a 2-bit count. The small queue's oldest entry moves to main if it was read more
/// than once, else it leaves (its key to the ghost); main reinserts read entries, one count less.
/// A new key found in the ghost goes straight to main.
func s3fifoMisses(_ trace: [UInt32], capacity: Int) -> Int {
    let smallLimit = max(1, capacity / 10)
    var small = KeyQueue()
    var main = KeyQueue()
    var ghost = KeyQueue()
    var frequency: [UInt32: Int] = [:]
    var misses = 0

    func evictMain() {
        while let key = main.popOldest() {
            let count = frequency[key]!
            if count > 0 {
                frequency[key] = count - 1
                main.push(key)
            } else {
                frequency[key] = nil
                return
            }
        }
    }
    func evict() {
        if small.count >= smallLimit || main.count == 0 {
            while let key = small.popOldest() {
                if frequency[key]! > 1 {
                    frequency[key] = 0
                    main.push(key)
                    if main.count > capacity - smallLimit { evictMain() }
                } else {
                    frequency[key] = nil
                    ghost.push(key)
                    if ghost.count > capacity - smallLimit { _ = ghost.popOldest() }
                    return
                }
            }
        } else {
            evictMain()
        }
    }

    for key in trace {
        if let count = frequency[key] {
            frequency[key] = min(count + 1, 3)
            continue
        }
        misses += 1
        if small.count + main.count >= capacity { evict() }
        frequency[key] = 0
        if ghost.remove(key) { main.push(key) } else { small.push(key) }
    }
    return misses
}

/// ARC (Megiddo and Modha, FAST 2003): recency (T1) and frequency (T2) LRU lists with ghost
/// lists B1 and B2 whose hits move the target size of T1.
func arcMisses(_ trace: [UInt32], capacity: Int) -> Int {
    var t1 = KeyQueue()
    var t2 = KeyQueue()
    var b1 = KeyQueue()
    var b2 = KeyQueue()
    var target = 0.0
    var misses = 0

    func replace(inB2: Bool) {
        if t1.count > 0 && (Double(t1.count) > target || (inB2 && Double(t1.count) == target)) {
            b1.push(t1.popOldest()!)
        } else if t2.count > 0 {
            b2.push(t2.popOldest()!)
        } else {
            b1.push(t1.popOldest()!)
        }
    }

    for key in trace {
        if t1.remove(key) || t2.remove(key) {
            t2.push(key)
            continue
        }
        misses += 1
        if b1.contains(key) {
            target = min(Double(capacity), target + max(1, Double(b2.count) / Double(b1.count)))
            replace(inB2: false)
            b1.remove(key)
            t2.push(key)
        } else if b2.contains(key) {
            target = max(0, target - max(1, Double(b1.count) / Double(b2.count)))
            replace(inB2: true)
            b2.remove(key)
            t2.push(key)
        } else {
            if t1.count + b1.count == capacity {
                if t1.count < capacity {
                    _ = b1.popOldest()
                    replace(inB2: false)
                } else {
                    _ = t1.popOldest()
                }
            } else if t1.count + b1.count + t2.count + b2.count >= capacity {
                if t1.count + b1.count + t2.count + b2.count == 2 * capacity { _ = b2.popOldest() }
                replace(inB2: false)
            }
            t1.push(key)
        }
    }
    return misses
}

/// 2Q (Johnson and Shasha, VLDB 1994), full version: a FIFO A1in (25 %), a ghost A1out (50 % of
/// the capacity, keys only) and an LRU Am; a key found in A1out enters Am.
func twoQMisses(_ trace: [UInt32], capacity: Int) -> Int {
    let inLimit = max(1, capacity / 4)
    let outLimit = max(1, capacity / 2)
    var a1in = KeyQueue()
    var a1out = KeyQueue()
    var am = KeyQueue()
    var misses = 0
    for key in trace {
        if am.remove(key) {
            am.push(key)
            continue
        }
        if a1in.contains(key) { continue }
        misses += 1
        if a1in.count + am.count >= capacity {
            if a1in.count > inLimit || am.count == 0 {
                a1out.push(a1in.popOldest()!)
                if a1out.count > outLimit { _ = a1out.popOldest() }
            } else {
                _ = am.popOldest()
            }
        }
        if a1out.remove(key) { am.push(key) } else { a1in.push(key) }
    }
    return misses
}
