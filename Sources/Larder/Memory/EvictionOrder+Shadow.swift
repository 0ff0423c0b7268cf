// TinyLFU's check against plain LRU. The window histories tune the window by what the evicted
// keys do next, and on some workloads that points the wrong way: on a working set sliding through
// the keys, the most used keys are the oldest, about to be left behind, so frequency keeps the
// wrong ones and the histories settle at a third of the cache, where LRU misses much less.
// So a sample of the keys (all of them below 8,192 entries, else a power-of-two fraction chosen
// by hash, keeping 2,048 to 8,191 of the capacity) is also replayed through an exact LRU scaled
// down with it (`ShadowLRU`), and the two are compared on the same requests. While the order is
// full, the shadow holds as many keys as the order holds of sampled keys, rather than the
// capacity times the rate: near a working set the size of the cache, a sample whose share of the
// working set strays from the rate by a few keys made the shadow hit much more or much less than
// an LRU of the whole cache would, and the verdicts followed the sample, not the policy. Every
// `2 ×` the shadow's capacity sampled requests, the requests only one of the two missed are weighed:
// - the order missed significantly more (by three standard deviations, at least 32 such requests,
//   and by at least 1/64 of the shadow's misses): the window's share gets a floor a quarter of
//   the cache above its current share, up to the whole cache, where the window's near-LRU order
//   misses about as LRU does;
// - the order missed significantly less: the floor sinks by an eighth;
// - neither after `32 ×` the shadow's capacity: the floor sinks by 1/32, unless the order still
//   missed more (then it holds), so a floor no longer needed is tried lower.
// At floor zero the histories tune alone, as without this check.

extension EvictionOrder {
    /// Keeps the sample at about 4,000 to 8,000 of the `capacity` keys: while the shadow would
    /// hold 8,192 or more, it samples half as many keys; while it would hold fewer than 2,048, twice
    /// as many (down to all of them). A new rate starts an empty shadow and a new verdict, and
    /// counts the entries of the newly sampled keys (O(n), only when the rate changes).
    @inlinable
    mutating func _resizeShadow<E: EvictionEntry>(in entries: [E]) {
        var shift = sampleMask.nonzeroBitCount
        while capacity &>> shift >= 8_192 && shift < 16 { shift &+= 1 }
        while shift > 0 && capacity &>> shift < 2_048 { shift &-= 1 }
        let mask = UInt32((1 &<< shift) &- 1)
        if mask != sampleMask {
            sampleMask = mask
            shadow = ShadowLRU()
            _startVerdict()
            sampledEntries = _countSampledEntries(in: entries)
        }
        shadow.capacity = max(1, capacity &>> shift)
    }

    /// Whether the key hashing to `hash` is in the sample: the bits of ``sampleMask`` in its
    /// hash's high half are all clear.
    @inlinable @inline(__always)
    func _isSampled(_ hash: UInt32) -> Bool {
        (hash &>> 16) & sampleMask == 0
    }

    /// How many of the order's entries are of sampled keys, counted by walking its queues.
    /// - Complexity: O(n).
    @usableFromInline
    func _countSampledEntries<E: EvictionEntry>(in entries: [E]) -> Int {
        slots(in: entries).count { _isSampled(entries[Int($0)].hash) }
    }

    /// Notes a request for a sampled key hashing to `hash`, which this order hit or (a new entry) missed.
    @usableFromInline
    mutating func _sampleRequest(_ hash: UInt32, hit: Bool) {
        // Full, the order holds `sampledEntries` sampled keys, and so would an LRU cache of its
        // capacity, give or take the keys the two disagree on; below its capacity, the shadow may
        // fill to the scaled capacity.
        if count >= capacity { shadow.capacity = max(1, sampledEntries) }
        let shadowHit = shadow.access(hash)
        sampledRequests &+= 1
        if !shadowHit { shadowMisses &+= 1 }
        if hit && !shadowHit { onlyShadowMissed &+= 1 }
        if !hit && shadowHit { onlyOrderMissed &+= 1 }
        guard sampledRequests % (2 &* shadow.capacity) == 0 else { return }
        let difference = onlyOrderMissed &- onlyShadowMissed
        let discordant = onlyOrderMissed &+ onlyShadowMissed
        let significant = discordant >= 32 && difference &* difference > 9 &* discordant
        if significant && difference > 0 && difference &* 64 > shadowMisses {
            // LRU misses clearly less: at least a quarter more of the cache is window.
            windowFloor = min(1, max(windowFloor, windowFraction) + 0.25)
            windowFraction = max(windowFraction, windowFloor)
            _startVerdict()
        } else if significant && difference < 0 {
            _lowerWindowFloor(by: 0.125)
        } else if sampledRequests >= 32 &* shadow.capacity {
            if difference > 0 {
                _startVerdict()
            } else {
                _lowerWindowFloor(by: 1.0 / 32)
            }
        }
    }

    /// Lowers the window's floor, and while the floor holds the window up (it was raised and has
    /// not sunk back to zero), the window with it: so a window that had grown to the whole cache,
    /// where no main entry is evicted to argue for a smaller one, still comes down to be tried.
    @inlinable
    mutating func _lowerWindowFloor(by step: Double) {
        if windowFloor > 0 {
            windowFloor = max(0, windowFloor - step)
            windowFraction = max(windowFloor, windowFraction - step)
        }
        _startVerdict()
    }

    @inlinable
    mutating func _startVerdict() {
        sampledRequests = 0
        onlyOrderMissed = 0
        onlyShadowMissed = 0
        shadowMisses = 0
    }
}
