import Foundation

/// The disk tier's recommended eviction order: a window LRU in front of a segmented main area,
/// with frequency- and size-weighed admission, a window share that climbs towards fewer misses,
/// and a sampled LRU that keeps it from doing much worse than LRU.
///
/// - New records enter the *window*, an LRU holding `windowShare` of the capacity's bytes.
/// - The *main* area is segmented: *probation* and *protected* (an LRU of at most 95 % of main's
///   bytes), into which a use in probation promotes a record; protected's oldest fall back to
///   probation. Main's victims are drawn at random from probation (`contestSample` of them)
///   and the least valuable goes first: value is frequency over size to the power 0.3, so
///   small records used as often as big ones stay longer (fewer records missed), while records
///   in use are kept by recency in protected (big popular records keep their bytes). Only when
///   probation cannot free the bytes needed do protected's oldest join the victims.
/// - When the cache is over its capacity and the window over its share, the window's oldest
///   record (the candidate) must earn its way into main: the victims it would displace are
///   chosen as above until they free its bytes, and it is admitted only if a shared frequency
///   sketch (TinyLFU's count-min sketch of 4-bit counters, halved periodically) counts it used
///   at least as often as each of them (of records used as often, the newer stays); otherwise
///   it is the one evicted. A big newcomer thus has to out-earn the many small records it would
///   displace, and a one-off scan displaces only records used as rarely.
/// - Every period of requests, the share of the window climbs (a hill climber, as Caffeine's)
///   in whichever direction lowered the misses, counting objects and bytes alike.
/// - A sample of the keys is also replayed through an exact LRU scaled down to the sample
///   (`SampledLRU`); where it misses significantly fewer records, or more than 2 % fewer bytes,
///   the window's share gets a floor half the capacity higher (a window of the whole capacity
///   is plain LRU), which sinks again while the policy does better.
///
/// Records are the disk index's dense ids; the host passes a 32-bit hash of each record's key,
/// which the sketch counts (ids are reused; keys are not), with each use and, for the victims a
/// contest weighs, as a function of the id (`hashOf`): the policy keeps no hashes, which the
/// host can compute from what it keeps anyway. Memory: 17 bytes a record id (two links and the
/// size in 32 bits, the queue byte, the probation slot), 4 bytes a probation record (its slot)
/// and 8 to 16 bytes a record for the sketch; a host that knows
/// how many ids it will use reserves them (``reserveCapacity(_:)``), so that no array grows by
/// doubling and leaves the storage it outgrew resident. Victims are drawn by a seeded
/// generator kept in the state, so a policy restored from its stored state (``StoredPolicy``,
/// which the index image carries) decides as the one it was saved from.
package struct DiskAdaptivePolicy: Sendable {
    static let window: UInt8 = 1
    static let probation: UInt8 = 2
    static let protected: UInt8 = 3

    // The state is internal, not private, so that the host can walk the order
    // (`DiskAdaptivePolicy+Order.swift`) and the index image can save and restore it
    // (`DiskAdaptivePolicy+Stored.swift`).
    var queues = RecordQueues(queues: 3)
    var sketch = FrequencySketch()
    var sketchUses = 0
    /// A contest's pool of possible victims, kept to reuse its storage.
    private var contestPool: [(value: Double, id: Int32, frequency: Int)] = []
    /// Probation's records in no order, for drawing victims at random.
    var probationSlots: [Int32] = []
    /// Per id: its index in `probationSlots`, while it is in probation.
    var probationSlotOf: [Int32] = []
    /// The state of the generator that draws victims (SplitMix64).
    var randomState: UInt64 = 0x2545_F491_4F6C_DD1D

    /// The byte budget.
    package private(set) var capacity: Int
    /// The window's share of the capacity, 0 through 1.
    package internal(set) var windowShare = 0.01
    /// The least share the LRU check allows.
    package internal(set) var windowFloor = 0.0

    // The hill climber.
    var periodRequests = 0
    var periodHits = 0
    var periodBytes = 0
    var periodHitBytes = 0
    var previousScore = -1.0
    var climbStep = 0.0625
    var climbDirection = 1.0

    // The LRU check.
    var sampleMask: UInt32 = 0
    var shadow: SampledLRU
    var onlyOrderMissed = 0
    var onlyShadowMissed = 0
    var sampledRequests = 0
    var shadowMisses = 0
    var shadowMissedBytes = 0
    var onlyOrderMissedBytes = 0
    var onlyShadowMissedBytes = 0

    /// A policy that holds at most `capacity` bytes, its victims drawn by a generator seeded
    /// with `seed` (the same seed, the same decisions).
    package init(capacity: Int, seed: UInt64 = 0) {
        self.capacity = max(0, capacity)
        shadow = SampledLRU(capacity: self.capacity)
        randomState ^= seed &* 0xD6E8_FEB8_6659_FD93
    }

    /// Makes room for ids below `ids` without growing its per-id arrays, and sizes the frequency
    /// sketch for that many records if it counted nothing yet (reserved, not touched: what is
    /// never filled costs no resident memory).
    /// - Complexity: O(`ids`) for a sketch sized now, else O(1) amortized.
    package mutating func reserveCapacity(_ ids: Int) {
        queues.reserveCapacity(ids)
        probationSlotOf.reserveCapacity(ids)
        probationSlots.reserveCapacity(ids)
        if sketchUses == 0 && sketch.table.count < ids { sketch.ensureCapacity(ids) }
    }

    /// The bytes of the records it holds.
    package var byteCount: Int { queues.bytes[1] + queues.bytes[2] + queues.bytes[3] }

    /// The number of records it holds.
    package var count: Int { queues.counts[1] + queues.counts[2] + queues.counts[3] }

    /// Whether it holds `id`.
    package func contains(_ id: Int32) -> Bool { queues.queue(of: id) != 0 }

    /// Notes a use of `id`, which it holds, its key hashing to `hash` (as when it was inserted).
    package mutating func access(_ id: Int32, hash: UInt32) {
        let queue = queues.queue(of: id)
        guard queue != 0 else { return }
        let size = queues.size(of: id)
        _countUse(hash)
        _sample(hash, size: size, hit: true)
        _climb(hit: true, size: size)
        switch queue {
        case Self.window, Self.protected:
            queues.move(id, to: queue)
        default:
            _leaveProbation(id)
            queues.move(id, to: Self.protected)
            _demoteProtectedOverflow()
        }
    }

    /// Inserts `id`, which it does not hold, with `size` bytes, its key hashing to `hash` (a miss
    /// of that key), evicting records until the cache is within its capacity; each victim is
    /// passed to `evict`. `hashOf` gives the hash each record it holds was inserted with.
    /// - Returns: Whether `id` was kept: false when `size` exceeds the capacity, or when it lost
    ///   its admission at once (then it is not passed to `evict`).
    /// - Complexity: O(victims) amortized.
    @discardableResult
    package mutating func insert(
        _ id: Int32, size: Int, hash: UInt32, hashOf: (Int32) -> UInt32, evicting evict: (Int32) -> Void
    ) -> Bool {
        precondition(!contains(id), "record \(id) is already in the order")
        _countUse(hash)
        _sample(hash, size: size, hit: false)
        _climb(hit: false, size: size)
        guard size <= capacity else { return false }
        queues.append(id, size: max(0, size), to: Self.window)
        _ensureSketchCapacity()
        _resizeSample()
        var kept = true
        _evict(hashOf) { victim in
            if victim == id { kept = false } else { evict(victim) }
        }
        return kept
    }

    /// Takes `id` out (the record was removed or expired), if it holds it; `hash` is its key's.
    package mutating func remove(_ id: Int32, hash: UInt32) {
        guard contains(id) else { return }
        if _isSampled(hash) { shadow.remove(hash) }
        if queues.queue(of: id) == Self.probation { _leaveProbation(id) }
        queues.unlink(id)
    }

    /// The records in eviction order, approximately: the window's and probation's, then
    /// protected's, each oldest first. The contests decide between the window and probation.
    /// - Complexity: O(n).
    package var evictionOrder: [Int32] {
        queues.ids(in: Self.window) + queues.ids(in: Self.probation) + queues.ids(in: Self.protected)
    }

    private var windowLimit: Int { Int(Double(capacity) * max(windowShare, windowFloor)) }
    private var mainCount: Int { queues.counts[2] + queues.counts[3] }

    /// Evicts until the cache is within its capacity, then lets the window's overflow into probation.
    private mutating func _evict(_ hashOf: (Int32) -> UInt32, _ evict: (Int32) -> Void) {
        let limit = windowLimit
        while byteCount > capacity {
            if queues.bytes[1] > limit && mainCount > 0 {
                _contest(hashOf, evict)
            } else if mainCount > 0 {
                evict(_takeMainVictim(hashOf))
            } else {
                let victim = queues.heads[1]
                queues.unlink(victim)
                evict(victim)
            }
        }
        while queues.bytes[1] > limit && queues.counts[1] > 0 {
            _enterProbation(queues.heads[1])
        }
    }

    /// How many of probation's records are drawn to choose a victim, at least. A larger sample
    /// ranks the victims more exactly by value: with the size's power at 3/4, on the sized
    /// traces (geometric means of the misses against LRU's, records / bytes, over three seeds of
    /// the draws) 16 missed 0.836-0.837 / 0.904-0.906 and 64, 0.819-0.820 / 0.908-0.909. The
    /// records a sample of 64 gains leave room to lower the power, which gives them back for
    /// bytes (see `_value`); 16 draws at a low power missed up to 2.8 % more records than the
    /// best online policy in a cell. Eight missed about 1 % more records.
    static let contestSample = 64

    /// The window's oldest record against the main victims whose bytes it would take.
    ///
    /// The victims are drawn from probation (at least `contestSample`, more until they hold
    /// the bytes needed) and taken least valuable first (see `_value`).
    private mutating func _contest(_ hashOf: (Int32) -> UInt32, _ evict: (Int32) -> Void) {
        let candidate = queues.heads[1]
        let needed = byteCount - capacity
        let pool = _victimPool(count: Self.contestSample, needed: needed, hashOf)
        // The candidate must be used at least as often as every victim it displaces: a tie goes
        // to the newer record. Admitting only the more often used missed about 1 % more records
        // on the sized traces, and up to 5 % more in a cell where the draws went against it.
        var freed = 0
        var victimsFrequency = 0
        var victims = 0
        for victim in pool where freed < needed {
            freed += queues.size(of: victim.id)
            victimsFrequency = max(victimsFrequency, victim.frequency)
            victims += 1
        }
        if freed >= needed && sketch.frequency(hashOf(candidate)) >= victimsFrequency {
            for victim in pool.prefix(victims) {
                if queues.queue(of: victim.id) == Self.probation { _leaveProbation(victim.id) }
                queues.unlink(victim.id)
                evict(victim.id)
            }
            _enterProbation(candidate)
        } else {
            queues.unlink(candidate)
            evict(candidate)
        }
        contestPool = pool
    }

    /// Unlinks and returns main's next victim: the least valuable of a sample of probation, else
    /// protected's oldest.
    private mutating func _takeMainVictim(_ hashOf: (Int32) -> UInt32) -> Int32 {
        let pool = _victimPool(count: Self.contestSample, needed: 0, hashOf)
        let victim = pool[0].id
        contestPool = pool
        if queues.queue(of: victim) == Self.probation { _leaveProbation(victim) }
        queues.unlink(victim)
        return victim
    }

    /// What a record is worth keeping: its frequency (plus one) over its size to the power 0.3.
    ///
    /// Between GDSF's frequency over size (fewest records missed, but big records given up so
    /// readily that more bytes are missed than under LRU) and frequency alone (bytes, not records).
    /// Lower powers trade records for bytes. With 64 draws, on the sized traces (geometric means
    /// of the misses against LRU's over the cells, records / bytes, several seeds of the draws):
    /// 3/4 missed 0.819-0.820 / 0.908-0.909; 1/2, 0.822-0.825 / 0.903-0.904; 0.3 with protected
    /// at 95 % of main, 0.830-0.837 / 0.895-0.899 over ten seeds, at most 1.4 % more records
    /// than the best online policy whose byte misses are no worse than LRU's in any cell; 1/4
    /// missed the fewest bytes but, in a cell where the draws went against it, 5 % more records
    /// than that policy, and 5/16 crossed 0.90 of LRU's bytes under two seeds of six.
    private func _value(_ id: Int32, frequency: Int) -> Double {
        Double(frequency + 1) / pow(Double(max(queues.size(of: id), 1)), 0.3)
    }

    /// Main's possible victims, least valuable first: `count` records of probation drawn at
    /// random (more until they hold `needed` bytes), then, if probation runs out, protected's
    /// oldest.
    private mutating func _victimPool(
        count: Int, needed: Int, _ hashOf: (Int32) -> UInt32
    ) -> [(value: Double, id: Int32, frequency: Int)] {
        var pool = contestPool
        pool.removeAll(keepingCapacity: true)
        var pooledBytes = 0
        let available = probationSlots.count
        var drawn = 0
        while drawn < available && (pool.count < count || pooledBytes < needed) {
            // Draws without replacement: the drawn records gather at the end of the slots.
            let slot = Int(_nextRandom() % UInt64(available - drawn))
            let last = available - 1 - drawn
            probationSlots.swapAt(slot, last)
            probationSlotOf[Int(probationSlots[slot])] = Int32(slot)
            probationSlotOf[Int(probationSlots[last])] = Int32(last)
            let id = probationSlots[last]
            let frequency = sketch.frequency(hashOf(id))
            pool.append((_value(id, frequency: frequency), id, frequency))
            pooledBytes += queues.size(of: id)
            drawn += 1
        }
        var id = queues.heads[3]
        while id != -1 && (pool.isEmpty || pooledBytes < needed) {
            let frequency = sketch.frequency(hashOf(id))
            pool.append((_value(id, frequency: frequency), id, frequency))
            pooledBytes += queues.size(of: id)
            id = queues.after(id)
        }
        pool.sort { $0.value < $1.value }
        return pool
    }

    /// Moves `id` (from the window or protected, or a newcomer) to probation's tail.
    private mutating func _enterProbation(_ id: Int32) {
        queues.move(id, to: Self.probation)
        let i = Int(id)
        if i >= probationSlotOf.count {
            // Only as far as `id`, as `RecordQueues` grows.
            probationSlotOf.append(contentsOf: repeatElement(-1, count: i + 1 - probationSlotOf.count))
        }
        probationSlotOf[i] = Int32(probationSlots.count)
        probationSlots.append(id)
    }

    /// Forgets `id`'s place among probation's slots (it is about to leave probation).
    private mutating func _leaveProbation(_ id: Int32) {
        let slot = Int(probationSlotOf[Int(id)])
        let last = probationSlots.removeLast()
        if last != id {
            probationSlots[slot] = last
            probationSlotOf[Int(last)] = Int32(slot)
        }
        probationSlotOf[Int(id)] = -1
    }

    private mutating func _nextRandom() -> UInt64 {
        randomState &+= 0x9E37_79B9_7F4A_7C15
        var z = randomState
        z = (z ^ (z &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z &>> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z &>> 31)
    }

    /// Keeps protected within 95 % of main's bytes. A larger protected share keeps more of the
    /// records in use by recency, big ones included: at 90 % the sized traces missed about 0.3 %
    /// more bytes over the cells, at 97 % the draws' luck moved the bytes more than the share did.
    private mutating func _demoteProtectedOverflow() {
        let limit = Int(Double(capacity - windowLimit) * 0.95)
        while queues.bytes[3] > limit && queues.counts[3] > 1 {
            _enterProbation(queues.heads[3])
        }
    }

    // MARK: The sketch

    /// A sketch word (sixteen counters) for each record held, rounded up to a power of two: 8 to
    /// 16 bytes a record. Ranking victims by frequency needs the finer counts: half that missed
    /// about 0.5 % more records and bytes on the sized traces.
    private mutating func _ensureSketchCapacity() {
        let wanted = max(64, count)
        if wanted > sketch.table.count { sketch.ensureCapacity(wanted) }
    }

    private mutating func _countUse(_ hash: UInt32) {
        sketch.increment(hash)
        sketchUses += 1
        if sketchUses >= 20 * max(sketch.table.count, 64) {
            sketch.halve()
            sketchUses /= 2
        }
    }

    // MARK: The hill climber

    private mutating func _climb(hit: Bool, size: Int) {
        periodRequests += 1
        periodBytes += size
        if hit {
            periodHits += 1
            periodHitBytes += size
        }
        guard periodRequests >= max(1_000, 10 * count) else { return }
        let score = Double(periodHits) / Double(periodRequests) + Double(periodHitBytes) / Double(max(periodBytes, 1))
        if previousScore >= 0 {
            if score < previousScore { climbDirection = -climbDirection }
            if abs(score - previousScore) > 0.05 * max(previousScore, 0.01) {
                climbStep = 0.0625
            } else {
                climbStep *= 0.98
            }
            windowShare = min(1, max(0, windowShare + climbDirection * climbStep))
        }
        previousScore = score
        (periodRequests, periodHits, periodBytes, periodHitBytes) = (0, 0, 0, 0)
    }

    // MARK: The LRU check

    /// Keeps the sample at about 2,048 to 4,095 of the records held: while more are sampled, half
    /// as many keys are; a new rate starts an empty shadow and a new verdict.
    private mutating func _resizeSample() {
        var shift = sampleMask.nonzeroBitCount
        while count >> shift >= 4_096 && shift < 16 { shift += 1 }
        guard shift != sampleMask.nonzeroBitCount else { return }
        sampleMask = UInt32((1 << shift) - 1)
        shadow = SampledLRU(capacity: capacity >> shift)
        _startVerdict()
    }

    private func _isSampled(_ hash: UInt32) -> Bool {
        FrequencySketch.mix(hash) & UInt64(sampleMask) == 0
    }

    private mutating func _sample(_ hash: UInt32, size: Int, hit: Bool) {
        guard _isSampled(hash) else { return }
        shadow.capacity = capacity >> sampleMask.nonzeroBitCount
        let shadowHit = shadow.access(hash, size: size)
        sampledRequests += 1
        if !shadowHit { shadowMisses += 1 }
        if hit && !shadowHit { onlyShadowMissed += 1 }
        if !hit && shadowHit { onlyOrderMissed += 1 }
        if !shadowHit { shadowMissedBytes += size }
        if hit && !shadowHit { onlyShadowMissedBytes += size }
        if !hit && shadowHit { onlyOrderMissedBytes += size }
        // A verdict every half the shadow's records in sampled requests: at twice that, a workload
        // whose reuses all fit in the cache (where LRU misses only first requests) came to a
        // verdict too rarely to lift the floor in time.
        guard sampledRequests % max(256, shadow.count / 2) == 0 else { return }
        let difference = onlyOrderMissed - onlyShadowMissed
        let discordant = onlyOrderMissed + onlyShadowMissed
        let significant = discordant >= 32 && difference * difference > 9 * discordant
        // Bytes count too: the policy weighs sizes, so it may miss fewer records than LRU but
        // more bytes (big records given up for many small ones); more than 2 % more raises the
        // floor as well.
        let moreBytes = discordant >= 32 && (onlyOrderMissedBytes - onlyShadowMissedBytes) * 50 > shadowMissedBytes
        if (significant && difference > 0 && difference * 64 > shadowMisses) || moreBytes {
            windowFloor = min(1, max(windowFloor, windowShare) + 0.5)
            windowShare = max(windowShare, windowFloor)
            _startVerdict()
        } else if significant && difference < 0 {
            _lowerWindowFloor(by: 0.125)
        } else if sampledRequests >= 32 * max(256, shadow.count) {
            if difference > 0 { _startVerdict() } else { _lowerWindowFloor(by: 1.0 / 32) }
        }
    }

    private mutating func _lowerWindowFloor(by step: Double) {
        if windowFloor > 0 {
            windowFloor = max(0, windowFloor - step)
            windowShare = max(windowFloor, windowShare - step)
        }
        _startVerdict()
    }

    private mutating func _startVerdict() {
        (sampledRequests, onlyOrderMissed, onlyShadowMissed, shadowMisses) = (0, 0, 0, 0)
        (shadowMissedBytes, onlyOrderMissedBytes, onlyShadowMissedBytes) = (0, 0, 0)
    }
}
