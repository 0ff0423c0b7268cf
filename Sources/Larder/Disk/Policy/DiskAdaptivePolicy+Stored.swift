/// A ``DiskAdaptivePolicy``'s whole state, its records named by numbers of the caller's choosing
/// (the index image's entry positions) with their keys' hashes: what the index image carries, so
/// that a reopened cache decides as the closed one would have (`IndexSnapshot+Policy.swift`
/// writes and reads it).
///
/// Nothing in it is trusted: ``DiskAdaptivePolicy/init(restoring:capacity:record:)`` checks
/// every field against the index it is restored into and gives up on the first that does not fit.
struct StoredPolicy: Equatable, Sendable {
    /// A record: its number and its key's hash, which must match the record restored under it.
    struct Record: Equatable, Sendable {
        var position: UInt32
        var hash: UInt32
    }

    /// A key of the sampled LRU and its size.
    struct ShadowKey: Equatable, Sendable {
        var hash: UInt32
        var size: Int
    }

    var capacity = 0
    var windowShare = 0.0
    var windowFloor = 0.0
    var randomState: UInt64 = 0
    var sketchUses = 0
    var sketch: [UInt64] = []
    var periodRequests = 0
    var periodHits = 0
    var periodBytes = 0
    var periodHitBytes = 0
    var previousScore = -1.0
    var climbStep = 0.0
    var climbDirection = 1.0
    var sampleMask: UInt32 = 0
    var sampledRequests = 0
    var onlyOrderMissed = 0
    var onlyShadowMissed = 0
    var shadowMisses = 0
    var shadowMissedBytes = 0
    var onlyOrderMissedBytes = 0
    var onlyShadowMissedBytes = 0
    /// The window's, probation's and protected's records, each oldest first.
    var queues: [[Record]] = [[], [], []]
    /// The bytes of the window's, probation's and protected's records: a restored policy must
    /// find its records at the sizes they had.
    var queueBytes = [0, 0, 0]
    /// Probation's records in the order victims are drawn from them: indices into `queues[1]`.
    var probationDraws: [UInt32] = []
    /// The sampled LRU's keys, least recently used first.
    var shadow: [ShadowKey] = []
    /// The index's records waiting for admission, in the order they came.
    var awaiting: [Record] = []
    /// The index's records the policy evicted or refused that are still to be removed, in order.
    var victims: [Record] = []

    /// The largest count or byte counter a restored policy takes: its sums and products (a
    /// byte difference times 50, a count difference squared) cannot overflow below it.
    static let maximumCounter = 1 << 56
}

extension DiskAdaptivePolicy {
    /// The policy's state, each record named by `position(id)` with its key's hash, `hash(id)`;
    /// the index's lists are left empty.
    /// - Complexity: O(*n* + sketch words).
    func stored(position: (Int32) -> UInt32, hash: (Int32) -> UInt32) -> StoredPolicy {
        var stored = StoredPolicy()
        stored.capacity = capacity
        stored.windowShare = windowShare
        stored.windowFloor = windowFloor
        stored.randomState = randomState
        stored.sketchUses = sketchUses
        stored.sketch = sketch.table
        (stored.periodRequests, stored.periodHits, stored.periodBytes, stored.periodHitBytes) =
            (periodRequests, periodHits, periodBytes, periodHitBytes)
        (stored.previousScore, stored.climbStep, stored.climbDirection) = (previousScore, climbStep, climbDirection)
        stored.sampleMask = sampleMask
        (stored.sampledRequests, stored.onlyOrderMissed, stored.onlyShadowMissed, stored.shadowMisses) =
            (sampledRequests, onlyOrderMissed, onlyShadowMissed, shadowMisses)
        (stored.shadowMissedBytes, stored.onlyOrderMissedBytes, stored.onlyShadowMissedBytes) =
            (shadowMissedBytes, onlyOrderMissedBytes, onlyShadowMissedBytes)
        for (i, queue) in [Self.window, Self.probation, Self.protected].enumerated() {
            stored.queues[i] = queues.ids(in: queue).map { StoredPolicy.Record(position: position($0), hash: hash($0)) }
            stored.queueBytes[i] = queues.bytes[Int(queue)]
        }
        // Per id in probation: its index in probation's list.
        var indexInProbation = [UInt32](repeating: 0, count: queues.queueOf.count)
        var id = queues.heads[Int(Self.probation)]
        var index: UInt32 = 0
        while id != -1 {
            indexInProbation[Int(id)] = index
            index += 1
            id = queues.after(id)
        }
        stored.probationDraws = probationSlots.map { indexInProbation[Int($0)] }
        stored.shadow = shadow.leastRecentFirst.map { StoredPolicy.ShadowKey(hash: $0.hash, size: $0.size) }
        return stored
    }

    /// The policy `stored` describes, holding `capacity` bytes, or `nil` when it does not fit:
    /// another capacity, a value out of its range, a record `record` does not resolve or whose
    /// hash differs, a record named twice, a queue whose records' sizes add up to other bytes, probation's draw order not a permutation of it, or
    /// more bytes than the capacity.
    /// - Parameter record: The slot, size and key hash of the record at a position, `nil` when
    ///   there is none the policy could hold.
    /// - Complexity: O(*n* + sketch words).
    init?(restoring stored: StoredPolicy, capacity: Int, record: (UInt32) -> (slot: Int32, size: Int, hash: UInt32)?) {
        self.init(capacity: capacity)
        let limit = StoredPolicy.maximumCounter
        let counters = [
            stored.sketchUses, stored.periodRequests, stored.periodHits, stored.periodBytes, stored.periodHitBytes,
            stored.sampledRequests, stored.onlyOrderMissed, stored.onlyShadowMissed, stored.shadowMisses,
            stored.shadowMissedBytes, stored.onlyOrderMissedBytes, stored.onlyShadowMissedBytes,
        ]
        let words = stored.sketch.count
        guard stored.capacity == self.capacity, counters.allSatisfy({ (0 ... limit).contains($0) }),
            (0.0 ... 1).contains(stored.windowShare), (0.0 ... 1).contains(stored.windowFloor),
            (0.0 ... 1).contains(stored.climbStep), stored.climbDirection == 1 || stored.climbDirection == -1,
            (-1.0 ... 2).contains(stored.previousScore),
            stored.sampleMask & (stored.sampleMask &+ 1) == 0, stored.sampleMask.nonzeroBitCount <= 16,
            words == 0 || (words >= 8 && words.nonzeroBitCount == 1)
        else { return nil }
        windowShare = stored.windowShare
        windowFloor = stored.windowFloor
        randomState = stored.randomState
        sketchUses = stored.sketchUses
        sketch.table = stored.sketch
        sketch.blockMask = max(words / 8 - 1, 0)
        (periodRequests, periodHits, periodBytes, periodHitBytes) =
            (stored.periodRequests, stored.periodHits, stored.periodBytes, stored.periodHitBytes)
        (previousScore, climbStep, climbDirection) = (stored.previousScore, stored.climbStep, stored.climbDirection)
        (sampledRequests, onlyOrderMissed, onlyShadowMissed, shadowMisses) =
            (stored.sampledRequests, stored.onlyOrderMissed, stored.onlyShadowMissed, stored.shadowMisses)
        (shadowMissedBytes, onlyOrderMissedBytes, onlyShadowMissedBytes) =
            (stored.shadowMissedBytes, stored.onlyOrderMissedBytes, stored.onlyShadowMissedBytes)

        var probation: [Int32] = []
        for (i, queue) in [Self.window, Self.probation, Self.protected].enumerated() {
            for stored in stored.queues[i] {
                guard let (id, size, hash) = record(stored.position), hash == stored.hash, !contains(id) else { return nil }
                queues.append(id, size: size, to: queue)
                if queue == Self.probation { probation.append(id) }
            }
        }
        guard byteCount <= self.capacity, stored.queueBytes == Array(queues.bytes[1 ... 3]),
            stored.probationDraws.count == probation.count
        else { return nil }
        var drawn = [Bool](repeating: false, count: probation.count)
        for index in stored.probationDraws {
            guard Int(index) < probation.count, !drawn[Int(index)] else { return nil }
            drawn[Int(index)] = true
            let id = probation[Int(index)]
            if Int(id) >= probationSlotOf.count {
                probationSlotOf.append(contentsOf: repeatElement(-1, count: Int(id) + 1 - probationSlotOf.count))
            }
            probationSlotOf[Int(id)] = Int32(probationSlots.count)
            probationSlots.append(id)
        }

        sampleMask = stored.sampleMask
        shadow = SampledLRU(capacity: self.capacity >> sampleMask.nonzeroBitCount)
        var shadowBytes = 0
        for key in stored.shadow {
            guard (0 ... shadow.capacity - shadowBytes).contains(key.size), !shadow.access(key.hash, size: key.size) else {
                return nil
            }
            shadowBytes += key.size
        }
    }
}
