/// An approximate count of how often keys were used recently: a count-min sketch of 4-bit
/// counters (TinyLFU, Einziger et al. 2017), whose owner halves them periodically so that old
/// popularity fades.
///
/// A key maps to one 64-byte block of eight words and to four counters in four different words
/// of it, so an update or an estimate touches one cache line. Its estimate is the smallest of the
/// four: never below what was counted for the key since the last halving (capped at 15), and
/// above it only when other keys share all four counters. Not thread-safe; its owner guards it.
@usableFromInline
struct FrequencySketch: Sendable {
    /// Sixteen 4-bit counters per word, a power-of-two number of words, at least one block.
    @usableFromInline var table: [UInt64] = []
    /// The number of blocks minus one.
    @usableFromInline var blockMask = 0

    /// The counters' largest value.
    @inlinable
    static var maximum: UInt64 { 15 }

    @inlinable
    init() {}

    /// Makes room for about `capacity` keys: one word (16 counters) per key, rounded up to a
    /// power of two. Growing clears every count; a smaller capacity keeps the table.
    /// - Complexity: O(capacity) when it grows, else O(1).
    @inlinable
    mutating func ensureCapacity(_ capacity: Int) {
        guard capacity > table.count else { return }
        var words = 8
        while words < capacity { words &<<= 1 }
        table = [UInt64](repeating: 0, count: words)
        blockMask = words / 8 - 1
    }

    /// Calls `body` with the word index and bit shift of each of `hash`'s four counters.
    ///
    /// Counter i lives in word 2i or 2i + 1 of the block (bit 0 of byte i of the mix's high half),
    /// at the nibble that bits 1-4 of that byte name; the block comes from the mix's low bits.
    @inlinable @inline(__always)
    static func forEachCounter(of hash: UInt32, blockMask: Int, _ body: (Int, UInt64) -> Void) {
        let mixed = mix(hash)
        let block = (Int(truncatingIfNeeded: mixed) & blockMask) &<< 3
        let bits = mixed &>> 32
        for i in 0 ..< 4 {
            let byte = bits &>> UInt64(i &* 8)
            body(block &+ i &* 2 &+ Int(byte & 1), ((byte &>> 1) & 15) &* 4)
        }
    }

    /// The estimated count for `hash` (0 through 15).
    @inlinable
    func frequency(_ hash: UInt32) -> Int {
        guard !table.isEmpty else { return 0 }
        let blockMask = blockMask
        return table.withUnsafeBufferPointer { words in
            var least = Self.maximum
            Self.forEachCounter(of: hash, blockMask: blockMask) { word, shift in least = min(least, (words[word] &>> shift) & 15) }
            return Int(least)
        }
    }

    /// Counts one use of `hash`.
    /// - Returns: Whether a counter grew (false when all four were at 15, or the table is empty).
    @inlinable @discardableResult
    mutating func increment(_ hash: UInt32) -> Bool {
        add(hash, 1)
    }

    /// Adds `count` uses of `hash` to each of its counters, up to 15.
    /// - Returns: Whether a counter grew.
    @inlinable @discardableResult
    mutating func add(_ hash: UInt32, _ count: UInt64) -> Bool {
        guard !table.isEmpty && count > 0 else { return false }
        let blockMask = blockMask
        return table.withUnsafeMutableBufferPointer { words in
            var grew = false
            Self.forEachCounter(of: hash, blockMask: blockMask) { word, shift in
                let counter = (words[word] &>> shift) & 15
                let raised = min(Self.maximum, counter &+ count)
                if raised != counter {
                    words[word] &+= (raised &- counter) &<< shift
                    grew = true
                }
            }
            return grew
        }
    }

    /// Halves every counter.
    /// - Complexity: O(table size).
    @usableFromInline
    mutating func halve() {
        for i in table.indices { table[i] = (table[i] &>> 1) & 0x7777_7777_7777_7777 }
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
