/// The disk tier's recommended eviction order: a window LRU in front of a segmented main area,
/// with frequency- and size-weighed admission, a window share that climbs towards fewer misses,
/// and a sampled LRU that keeps it from doing much worse than LRU.
///
/// - New records enter the *window*, an LRU holding `windowShare` of the capacity's bytes.
/// - The *main* area is a segmented LRU: *probation* (the oldest is the next victim) and
///   *protected* (at most 90 % of main's bytes), into which a use in probation promotes a record.
/// - When the cache is over its capacity and the window over its share, the window's oldest
///   record (the candidate) must earn its way into main: the main victims it would displace
///   (from probation's head, then protected's) are gathered until they free its bytes, and it
///   is admitted only if a shared frequency sketch (TinyLFU's count-min sketch of 4-bit
///   counters, halved periodically) counts it used more often than those victims together;
///   otherwise it is the one evicted. A big newcomer thus has to out-earn the many small
///   records it would displace, and a one-off scan never flushes the main area.
/// - Every period of requests, the share of the window climbs (a hill climber, as Caffeine's)
///   in whichever direction lowered the misses, counting objects and bytes alike.
/// - A sample of the keys is also replayed through an exact LRU scaled down to the sample
///   (`SampledLRU`); where it misses significantly less, the window's share gets a floor half
///   the capacity higher (a window of the whole capacity is plain LRU), which sinks
///   again while the policy does better.
///
/// Records are the disk index's dense ids; the host passes a 32-bit hash of each record's key,
/// which the sketch counts (ids are reused; keys are not). Memory: 21 bytes a record id (two
/// links, the size, the hash, the queue byte) plus 4 bytes a record for the sketch.
package struct DiskAdaptivePolicy: Sendable {
    static let window: UInt8 = 1
    static let probation: UInt8 = 2
    static let protected: UInt8 = 3

    /// Internal, not private, so that the host can walk the order (`DiskAdaptivePolicy+Order.swift`).
    var queues = RecordQueues(queues: 3)
    private var hashes: [UInt32] = []
    private var sketch = FrequencySketch()
    private var sketchUses = 0
    /// A contest's pool of possible victims, kept to reuse its storage.
    private var contestPool: [(value: Double, id: Int32, frequency: Int)] = []

    /// The byte budget.
    package private(set) var capacity: Int
    /// The window's share of the capacity, 0 through 1.
    package private(set) var windowShare = 0.01
    /// The least share the LRU check allows.
    package private(set) var windowFloor = 0.0

    // The hill climber.
    private var periodRequests = 0
    private var periodHits = 0
    private var periodBytes = 0
    private var periodHitBytes = 0
    private var previousScore = -1.0
    private var climbStep = 0.0625
    private var climbDirection = 1.0

    // The LRU check.
    private var sampleMask: UInt32 = 0
    private var shadow: SampledLRU
    private var onlyOrderMissed = 0
    private var onlyShadowMissed = 0
    private var sampledRequests = 0
    private var shadowMisses = 0

    /// A policy that holds at most `capacity` bytes.
    package init(capacity: Int) {
        self.capacity = max(0, capacity)
        shadow = SampledLRU(capacity: self.capacity)
    }

    /// The bytes of the records it holds.
    package var byteCount: Int { queues.bytes[1] + queues.bytes[2] + queues.bytes[3] }

    /// The number of records it holds.
    package var count: Int { queues.counts[1] + queues.counts[2] + queues.counts[3] }

    /// Whether it holds `id`.
    package func contains(_ id: Int32) -> Bool { queues.queue(of: id) != 0 }

    /// Notes a use of `id`, which it holds.
    package mutating func access(_ id: Int32) {
        let queue = queues.queue(of: id)
        guard queue != 0 else { return }
        let hash = hashes[Int(id)]
        let size = queues.size(of: id)
        _countUse(hash)
        _sample(hash, size: size, hit: true)
        _climb(hit: true, size: size)
        switch queue {
        case Self.window, Self.protected:
            queues.move(id, to: queue)
        default:
            queues.move(id, to: Self.protected)
            _demoteProtectedOverflow()
        }
    }

    /// Inserts `id`, which it does not hold, with `size` bytes, its key hashing to `hash` (a miss
    /// of that key), evicting records until the cache is within its capacity; each victim is
    /// passed to `evict`.
    /// - Returns: Whether `id` was kept: false when `size` exceeds the capacity, or when it lost
    ///   its admission at once (then it is not passed to `evict`).
    /// - Complexity: O(victims) amortized.
    @discardableResult
    package mutating func insert(_ id: Int32, size: Int, hash: UInt32, evicting evict: (Int32) -> Void) -> Bool {
        precondition(!contains(id), "record \(id) is already in the order")
        _countUse(hash)
        _sample(hash, size: size, hit: false)
        _climb(hit: false, size: size)
        guard size <= capacity else { return false }
        if Int(id) >= hashes.count { hashes.append(contentsOf: repeatElement(0, count: Int(id) + 1 - hashes.count)) }
        hashes[Int(id)] = hash
        queues.append(id, size: max(0, size), to: Self.window)
        _ensureSketchCapacity()
        _resizeSample()
        var kept = true
        _evict { victim in
            if victim == id { kept = false } else { evict(victim) }
        }
        return kept
    }

    /// Takes `id` out (the record was removed or expired), if it holds it.
    package mutating func remove(_ id: Int32) {
        guard contains(id) else { return }
        let hash = hashes[Int(id)]
        if _isSampled(hash) { shadow.remove(hash) }
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
    private mutating func _evict(_ evict: (Int32) -> Void) {
        let limit = windowLimit
        while byteCount > capacity {
            if queues.bytes[1] > limit && mainCount > 0 {
                _contest(evict)
            } else if mainCount > 0 {
                evict(_takeMainVictim())
            } else {
                let victim = queues.heads[1]
                queues.unlink(victim)
                evict(victim)
            }
        }
        while queues.bytes[1] > limit && queues.counts[1] > 0 {
            queues.move(queues.heads[1], to: Self.probation)
        }
    }

    /// How many of main's oldest records a contest weighs, at least.
    static let contestSample = 8

    /// The window's oldest record against the main victims whose bytes it would take.
    ///
    /// The victims are chosen among main's oldest records (at least `contestSample`, more
    /// until they hold the bytes needed), least valuable first: by frequency over the square root
    /// of the size, so that of two records used as often the bigger goes first, but a big record
    /// used more often stays (ranking by frequency over size, as GDSF does, cost bytes missed).
    private mutating func _contest(_ evict: (Int32) -> Void) {
        let candidate = queues.heads[1]
        let needed = byteCount - capacity
        var pool = contestPool
        pool.removeAll(keepingCapacity: true)
        var id = queues.heads[2]
        var queue = Self.probation
        var pooledBytes = 0
        while pool.count < Self.contestSample || pooledBytes < needed {
            if id == -1 {
                guard queue == Self.probation, queues.heads[3] != -1 else { break }
                queue = Self.protected
                id = queues.heads[3]
            }
            let frequency = sketch.frequency(hashes[Int(id)])
            let size = queues.size(of: id)
            pool.append((Double(frequency + 1) / Double(max(size, 1)).squareRoot(), id, frequency))
            pooledBytes += size
            id = queues.after(id)
        }
        pool.sort { $0.value < $1.value }
        // The candidate must be used more often than every victim it displaces.
        var freed = 0
        var victimsFrequency = 0
        var victims = 0
        for victim in pool where freed < needed {
            freed += queues.size(of: victim.id)
            victimsFrequency = max(victimsFrequency, victim.frequency)
            victims += 1
        }
        if freed >= needed && sketch.frequency(hashes[Int(candidate)]) > victimsFrequency {
            for victim in pool.prefix(victims) {
                queues.unlink(victim.id)
                evict(victim.id)
            }
            queues.move(candidate, to: Self.probation)
        } else {
            queues.unlink(candidate)
            evict(candidate)
        }
        contestPool = pool
    }

    /// Unlinks and returns main's next victim: probation's oldest, else protected's.
    private mutating func _takeMainVictim() -> Int32 {
        let victim = queues.heads[2] != -1 ? queues.heads[2] : queues.heads[3]
        queues.unlink(victim)
        return victim
    }

    private mutating func _demoteProtectedOverflow() {
        let limit = Int(Double(capacity - windowLimit) * 0.9)
        while queues.bytes[3] > limit && queues.counts[3] > 1 {
            queues.move(queues.heads[3], to: Self.probation)
        }
    }

    // MARK: The sketch

    /// Half a sketch word (eight counters) for each record held, rounded up to a power of two:
    /// 4 to 8 bytes a record. Twice that missed about 0.6 % fewer objects on the sized traces.
    private mutating func _ensureSketchCapacity() {
        let wanted = max(64, count / 2)
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
        // A verdict every half the shadow's records in sampled requests: at twice that, a workload
        // whose reuses all fit in the cache (where LRU misses only first requests) came to a
        // verdict too rarely to lift the floor in time.
        guard sampledRequests % max(256, shadow.count / 2) == 0 else { return }
        let difference = onlyOrderMissed - onlyShadowMissed
        let discordant = onlyOrderMissed + onlyShadowMissed
        let significant = discordant >= 32 && difference * difference > 9 * discordant
        if significant && difference > 0 && difference * 64 > shadowMisses {
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
    }
}
