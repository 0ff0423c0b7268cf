/// An approximate count of how often each key was used recently: a count-min sketch of 4-bit
/// counters, halved periodically so that old popularity fades (TinyLFU, Einziger et al. 2017).
///
/// A key maps to one 64-byte block of eight words and to four counters in four different words
/// of it, so an increment or an estimate touches one cache line. Its estimate is the smallest of
/// the four, never below the key's true count since the last halving (capped at 15), and above it
/// only when other keys share all four counters. After `10 × capacity` increments every counter is
/// halved. Not thread-safe; its owner guards it.
@usableFromInline
struct FrequencySketch {
    /// Sixteen 4-bit counters per word, a power-of-two number of words, at least one block.
    @usableFromInline var table: [UInt64] = []
    /// The number of blocks minus one.
    @usableFromInline var blockMask = 0
    /// Increments since the last halving.
    @usableFromInline var additions = 0
    /// The increments after which every counter is halved.
    @usableFromInline var sampleSize = 0

    /// The counters' largest value.
    @inlinable
    static var maximum: UInt64 { 15 }

    @inlinable
    init() {}

    /// Makes room for about `capacity` keys: one word per key, rounded up to a power of two.
    /// Growing clears every count; a smaller capacity keeps the table and only shortens the period.
    /// - Complexity: O(capacity) when it grows, else O(1).
    @inlinable
    mutating func ensureCapacity(_ capacity: Int) {
        let capacity = max(capacity, 1)
        sampleSize = 10 * capacity
        guard capacity > table.count else { return }
        var words = 8
        while words < capacity { words &<<= 1 }
        table = [UInt64](repeating: 0, count: words)
        blockMask = words / 8 - 1
        additions = 0
    }

    /// The four (word, bit offset) places of the counters for `hash`.
    @inlinable
    func places(_ hash: UInt32) -> (Int, Int, Int, Int, UInt64, UInt64, UInt64, UInt64) {
        let mixed = Self.mix(hash)
        let block = (Int(truncatingIfNeeded: mixed) & blockMask) &<< 3
        let bits = mixed &>> 32
        // Counter i lives in word 2i or 2i + 1 of the block, at one of its sixteen nibbles.
        @inline(__always)
        func place(_ i: UInt64) -> (Int, UInt64) {
            let byte = bits &>> (i &* 8)
            return (block &+ Int(i &* 2) &+ Int(byte & 1), ((byte &>> 1) & 15) &* 4)
        }
        let (w0, s0) = place(0)
        let (w1, s1) = place(1)
        let (w2, s2) = place(2)
        let (w3, s3) = place(3)
        return (w0, w1, w2, w3, s0, s1, s2, s3)
    }

    /// The estimated count for `hash` (0 through 15).
    @inlinable
    func frequency(_ hash: UInt32) -> Int {
        guard !table.isEmpty else { return 0 }
        let p = places(hash)
        let c0 = (table[p.0] &>> p.4) & 15
        let c1 = (table[p.1] &>> p.5) & 15
        let c2 = (table[p.2] &>> p.6) & 15
        let c3 = (table[p.3] &>> p.7) & 15
        return Int(min(min(c0, c1), min(c2, c3)))
    }

    /// Counts one use of `hash`; every `sampleSize` counted uses, halves all counters.
    @inlinable
    mutating func increment(_ hash: UInt32) {
        guard !table.isEmpty else { return }
        let p = places(hash)
        var added = false
        added = bump(p.0, p.4) || added
        added = bump(p.1, p.5) || added
        added = bump(p.2, p.6) || added
        added = bump(p.3, p.7) || added
        if added {
            additions &+= 1
            if additions >= sampleSize { halve() }
        }
    }

    @inlinable
    mutating func bump(_ word: Int, _ shift: UInt64) -> Bool {
        guard (table[word] &>> shift) & 15 < Self.maximum else { return false }
        table[word] &+= 1 &<< shift
        return true
    }

    /// Halves every counter, and the count of additions with them.
    /// - Complexity: O(table size), once every `sampleSize` increments.
    @usableFromInline
    mutating func halve() {
        var odd = 0
        for i in table.indices {
            odd &+= (table[i] & 0x1111_1111_1111_1111).nonzeroBitCount
            table[i] = (table[i] &>> 1) & 0x7777_7777_7777_7777
        }
        additions = (additions - odd / 4) / 2
    }

    /// Forgets every count.
    mutating func clear() {
        for i in table.indices { table[i] = 0 }
        additions = 0
    }

    /// Spreads a 32-bit hash over 64 bits (the SplitMix64 finalizer), so that the block and the
    /// counters depend on every bit of it.
    @inlinable
    static func mix(_ hash: UInt32) -> UInt64 {
        var z = UInt64(hash) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z &>> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z &>> 31)
    }
}
