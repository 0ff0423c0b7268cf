/// Which keys left one area of a TinyLFU order recently, and when: a direct-mapped table of
/// 24-bit fingerprints and 32-bit time stamps, keyed by hash.
///
/// It is lossy by design: a key evicted later takes the place of an earlier one in the same
/// bucket, and two keys with the same bucket and fingerprint are confused (about one lookup in
/// 16 million). Both only blur the window's tuning a little; no entry's value depends on it.
/// Not thread-safe; its owner guards it.
@usableFromInline
struct EvictionHistory {
    /// Per bucket: 0 when empty, else `1 << 63 | fingerprint << 32 | stamp`.
    @usableFromInline var buckets: [UInt64] = []

    @inlinable
    init() {}

    /// Makes the table at least `capacity` buckets, a power of two. Growing forgets every key.
    /// - Complexity: O(capacity) when it grows, else O(1).
    @inlinable
    mutating func ensureCapacity(_ capacity: Int) {
        guard capacity > buckets.count else { return }
        var count = 8
        while count < capacity { count &<<= 1 }
        buckets = [UInt64](repeating: 0, count: count)
    }

    @inlinable
    func bucket(_ mixed: UInt64) -> Int {
        Int(truncatingIfNeeded: mixed &>> 7) & (buckets.count &- 1)
    }

    @inlinable
    static func fingerprint(_ mixed: UInt64) -> UInt64 {
        (mixed &>> 40) & 0xFF_FFFF
    }

    /// Remembers that the key hashing to `hash` left at time `stamp`.
    @inlinable
    mutating func record(_ hash: UInt32, at stamp: UInt32) {
        guard !buckets.isEmpty else { return }
        let mixed = FrequencySketch.mix(hash)
        buckets[bucket(mixed)] = 1 &<< 63 | Self.fingerprint(mixed) &<< 32 | UInt64(stamp)
    }

    /// The time the key hashing to `hash` left, if it is remembered; forgets it.
    @inlinable
    mutating func take(_ hash: UInt32) -> UInt32? {
        guard !buckets.isEmpty else { return nil }
        let mixed = FrequencySketch.mix(hash)
        let i = bucket(mixed)
        let entry = buckets[i]
        guard entry != 0 && (entry &>> 32) & 0xFF_FFFF == Self.fingerprint(mixed) else { return nil }
        buckets[i] = 0
        return UInt32(truncatingIfNeeded: entry)
    }

    /// Forgets every key.
    mutating func clear() {
        for i in buckets.indices { buckets[i] = 0 }
    }
}
