@testable import Larder

/// A deliberately naive cache under the TinyLFU policy as `EvictionPolicy.tinyLFU` documents it:
/// arrays scanned linearly for the three queues, a dictionary of flags, and a sketch and
/// histories kept as plain arrays of small counters. It spells out the decisions `MemoryCache`
/// must match exactly: which key is the candidate, which the victim, who wins, how the window
/// moves, and what every other operation does under this policy.
struct ReferenceTinyLFU: CacheModel {
    struct Entry {
        var key: Int
        var value: Int
        var cost: Int
        var deadline: Double
        var referenced = false
        var returning = false
        /// Uses counted while cached, 0 through 15.
        var uses = 0
        var stamp: UInt64 = 0
    }

    // Each queue oldest first.
    /// The window's buckets, a ring; the one after `newestBucket` is the oldest.
    var buckets: [[Entry]] = Array(repeating: [], count: 32)
    var bucketStarts: [UInt64] = Array(repeating: 0, count: 32)
    var newestBucket = 0
    var clock: UInt64 = 0
    var candidateAge: UInt64 = 1024
    var momentum = 0
    var probation: [Entry] = []
    var protected: [Entry] = []
    var countLimit: Int
    var totalCostLimit: Int
    var defaultExpiration: Double?
    var statistics = CacheStatistics()
    var evicted: [EvictionRecorder<Int, Int>.Event] = []

    // TinyLFU's state.
    var capacity = 0
    var windowFraction = 0.01
    var insertions: UInt32 = 0
    var mainEvictions: UInt32 = 0
    /// Sketch: `counterWords * 16` counters of 0...15, word w's nibble n at index `w * 16 + n`.
    var counters: [Int] = []
    var counterWords = 0
    /// Uses counted since the last halving.
    var usesCounted = 0
    /// Histories: bucket -> (fingerprint, stamp).
    var windowLeft: [Int: (fingerprint: UInt64, stamp: UInt32)] = [:]
    var mainLeft: [Int: (fingerprint: UInt64, stamp: UInt32)] = [:]
    var historyBuckets = 0
    /// How often each decision happened, so a test can check it exercised them.
    var admittedByFrequency = 0
    var admittedAsReturning = 0
    var refused = 0
    var windowGrew = 0
    var windowShrank = 0
    var floorRaised = 0
    var floorLowered = 0

    // The check against LRU: a sample of the keys replayed through an LRU of their hashes.
    /// The sampled hashes, least recently used first.
    var shadow: [UInt32] = []
    var shadowCapacity = 1
    /// How many low bits of a hash's high half must be clear for its key to be sampled.
    var sampleShift = 0
    var windowFloor = 0.0
    var sampled = 0
    var onlyModelMissed = 0
    var onlyShadowMissed = 0
    var shadowMisses = 0

    init(countLimit: Int, totalCostLimit: Int, defaultExpiration: Double?) {
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
        self.defaultExpiration = defaultExpiration
    }

    var bucketOrder: [Int] { (1 ... 32).map { (newestBucket + $0) % 32 } }
    var window: [Entry] { bucketOrder.flatMap { buckets[$0] } }
    var all: [Entry] { window + probation + protected }
    var keys: [Int] { all.map(\.key) }
    var count: Int { all.count }
    var totalCost: Int { all.reduce(0) { $0 + $1.cost } }

    static func hash(_ key: Int) -> UInt32 { UInt32(truncatingIfNeeded: key.hashValue) }

    // MARK: Sketch and histories, written from their documentation

    static func mix(_ hash: UInt32) -> UInt64 {
        var z = UInt64(hash) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The four counter indices of a key: one block of eight words, counter i in word 2i or
    /// 2i + 1 of it (bit 0 of byte i of the mix's high half), at nibble (bits 1-4 of that byte).
    func counterIndices(_ key: Int) -> [Int] {
        let mixed = Self.mix(Self.hash(key))
        let blocks = counterWords / 8
        let block = Int(mixed % UInt64(blocks))
        return (0 ..< 4).map { i in
            let byte = Int((mixed >> 32) >> (8 * UInt64(i))) & 0xFF
            let word = block * 8 + 2 * i + (byte & 1)
            return word * 16 + (byte >> 1) % 16
        }
    }

    func estimate(_ key: Int) -> Int {
        counterWords == 0 ? 0 : counterIndices(key).map { counters[$0] }.min()!
    }

    /// A cached entry's frequency: its own count plus the sketch's estimate, at most 15.
    func frequency(_ key: Int) -> Int {
        min(15, estimate(key) + entry(key)!.uses)
    }

    /// Adds `count` to the key's four counters, up to 15; whether one grew.
    mutating func addToSketch(_ key: Int, _ count: Int) -> Bool {
        guard counterWords > 0 && count > 0 else { return false }
        var grew = false
        for i in counterIndices(key) where counters[i] < 15 {
            counters[i] = min(15, counters[i] + count)
            grew = true
        }
        return grew
    }

    /// One more use counted; every 20 × capacity, every count and counter is halved.
    mutating func countedUse() {
        usesCounted += 1
        guard usesCounted >= 20 * capacity else { return }
        counters = counters.map { $0 / 2 }
        for b in 0 ..< 32 { for i in buckets[b].indices { buckets[b][i].uses /= 2 } }
        for i in probation.indices { probation[i].uses /= 2 }
        for i in protected.indices { protected[i].uses /= 2 }
        usesCounted /= 2
    }

    func historyPlace(_ key: Int) -> (bucket: Int, fingerprint: UInt64) {
        let mixed = Self.mix(Self.hash(key))
        return (Int((mixed >> 7) % UInt64(historyBuckets)), (mixed >> 40) & 0xFF_FFFF)
    }

    static func take(
        _ place: (bucket: Int, fingerprint: UInt64), from history: inout [Int: (fingerprint: UInt64, stamp: UInt32)]
    ) -> UInt32? {
        guard let entry = history[place.bucket], entry.fingerprint == place.fingerprint else { return nil }
        history[place.bucket] = nil
        return entry.stamp
    }

    static func powerOfTwo(atLeast n: Int) -> Int {
        var p = 8
        while p < n { p *= 2 }
        return p
    }

    mutating func resize(_ newCapacity: Int) {
        let c = max(newCapacity, 1)
        guard c != capacity else { return }
        capacity = c
        var shift = sampleShift
        while c >> shift >= 8_192 && shift < 16 { shift += 1 }
        while shift > 0 && c >> shift < 2_048 { shift -= 1 }
        if shift != sampleShift {
            sampleShift = shift
            shadow = []
            startVerdict()
        }
        shadowCapacity = max(1, c >> shift)
        if c > counterWords {
            counterWords = Self.powerOfTwo(atLeast: c)
            counters = Array(repeating: 0, count: counterWords * 16)
        }
        if c > historyBuckets {
            historyBuckets = Self.powerOfTwo(atLeast: c)
            windowLeft = [:]
            mainLeft = [:]
        }
    }

    var windowLimit: Int { max(1, min(capacity, Int(windowFraction * Double(capacity)))) }
    var protectedLimit: Int { max(0, capacity - windowLimit) * 4 / 5 }
    func capacityNow() -> Int { countLimit > 0 ? countLimit : max(count, 1) }

    // MARK: Queue moves

    /// Starts a new bucket once the newest has spanned a sixteenth of the candidates' recent age;
    /// the oldest bucket's entries go in front of the next oldest's.
    mutating func advanceBucketIfDue() {
        guard clock - bucketStarts[newestBucket] >= max(1, 2 * candidateAge / 32) else { return }
        let oldest = (newestBucket + 1) % 32
        let next = (oldest + 1) % 32
        buckets[next] = buckets[oldest] + buckets[next]
        buckets[oldest] = []
        bucketStarts[oldest] = clock
        newestBucket = oldest
    }

    /// The newest bucket that began at or before `stamp`.
    func bucket(for stamp: UInt64) -> Int {
        let age = UInt64(UInt32(truncatingIfNeeded: clock) &- UInt32(truncatingIfNeeded: stamp))
        for back in 0 ..< 32 {
            let b = (newestBucket - back + 32) % 32
            if clock - bucketStarts[b] >= age { return b }
        }
        return (newestBucket + 1) % 32
    }

    /// The window's candidate: the head of the oldest bucket whose head belongs there by its stamp.
    mutating func windowCandidate() -> Int {
        advanceBucketIfDue()
        let order = bucketOrder
        var position = 0
        while true {
            let b = order[position]
            guard !buckets[b].isEmpty else {
                position += 1
                continue
            }
            let target = bucket(for: buckets[b][0].stamp)
            if order.firstIndex(of: target)! <= position {
                buckets[b][0].referenced = false
                let age = UInt64(UInt32(truncatingIfNeeded: clock) &- UInt32(truncatingIfNeeded: buckets[b][0].stamp))
                candidateAge = candidateAge - candidateAge / 16 + age / 16
                return buckets[b][0].key
            }
            buckets[target].append(buckets[b].removeFirst())
        }
    }

    mutating func takeFromWindow(_ key: Int) -> Entry? {
        for b in 0 ..< 32 {
            if let i = buckets[b].firstIndex(where: { $0.key == key }) { return buckets[b].remove(at: i) }
        }
        return nil
    }

    mutating func ageProtected() {
        var entry = protected.removeFirst()
        if entry.referenced {
            entry.referenced = false
            protected.append(entry)
        } else {
            probation.append(entry)
        }
    }

    mutating func demoteProtectedOverflow() {
        while protected.count > protectedLimit { ageProtected() }
    }

    mutating func mainVictim() -> Int {
        while true {
            if probation.isEmpty {
                ageProtected()
                continue
            }
            if !probation[0].referenced { return probation[0].key }
            var entry = probation.removeFirst()
            entry.referenced = false
            protected.append(entry)
            demoteProtectedOverflow()
        }
    }

    mutating func admit(_ key: Int) {
        var entry = takeFromWindow(key)!
        entry.returning = false
        probation.append(entry)
    }

    /// Picks the key to evict now (moving a winning candidate into probation).
    mutating func chooseVictim() -> Int {
        let hasMain = !probation.isEmpty || !protected.isEmpty
        if window.count > windowLimit && hasMain {
            let candidate = windowCandidate()
            let victim = mainVictim()
            let returning = entry(candidate)!.returning
            if returning || frequency(candidate) > frequency(victim) {
                if returning { admittedAsReturning += 1 } else { admittedByFrequency += 1 }
                admit(candidate)
                return victim
            }
            refused += 1
            return candidate
        }
        return hasMain ? mainVictim() : windowCandidate()
    }

    /// Takes `key` out of whichever queue holds it; its count goes back into the sketch.
    mutating func take(_ key: Int, evicted: Bool = false) -> (entry: Entry, fromWindow: Bool)? {
        var found: (entry: Entry, fromWindow: Bool)?
        if let entry = takeFromWindow(key) {
            found = (entry, true)
        } else if let i = probation.firstIndex(where: { $0.key == key }) {
            found = (probation.remove(at: i), false)
        } else if let i = protected.firstIndex(where: { $0.key == key }) {
            found = (protected.remove(at: i), false)
        }
        if let found { _ = addToSketch(key, found.entry.uses) }
        // An LRU cache would have lost a removed or expired key too.
        if found != nil && !evicted && isSampled(key) { shadow.removeAll { $0 == Self.hash(key) } }
        return found
    }

    mutating func evictOne(_ reason: EvictionReason, capacity: Int) {
        resize(capacity)
        let key = chooseVictim()
        let (entry, fromWindow) = take(key, evicted: true)!
        // Below its capacity after a trim or pressure, the shadow keeps its most recent share.
        while shadow.count > sampledEntries { shadow.removeFirst() }
        if fromWindow {
            let place = historyPlace(key)
            windowLeft[place.bucket] = (place.fingerprint, insertions)
        } else {
            mainEvictions &+= 1
            let place = historyPlace(key)
            mainLeft[place.bucket] = (place.fingerprint, mainEvictions)
        }
        statistics.evictions[reason, default: 0] += 1
        evicted.append(.init(key: key, value: entry.value, reason: reason))
    }

    /// Moves the window's overflow into probation, as a cache within its limits does.
    mutating func settle() {
        resize(capacityNow())
        while window.count > windowLimit { admit(windowCandidate()) }
    }

    mutating func enforceLimits() {
        let c = capacityNow()
        while countLimit > 0 && count > countLimit { evictOne(.countLimit, capacity: c) }
        while totalCostLimit > 0 && totalCost > totalCostLimit { evictOne(.costLimit, capacity: c) }
        settle()
    }

    mutating func trim(count target: Int?, cost: Int?, reason: EvictionReason) {
        let c = capacityNow()
        while count > (target ?? .max) || totalCost > (cost ?? .max) { evictOne(reason, capacity: c) }
        settle()
    }

    /// Tunes the window for a new key, as the policy's documentation says, and returns whether
    /// the key is returning.
    mutating func tuneWindow(for key: Int) -> Bool {
        let place = historyPlace(key)
        let leftWindow = Self.take(place, from: &windowLeft)
        let leftMain = Self.take(place, from: &mainLeft)
        let horizon = UInt32(max(1, capacity / 4))
        if let stamp = leftMain, mainEvictions &- stamp < horizon {
            momentum = min(momentum, 0) - 1
            windowFraction = max(windowFloor, windowFraction - 1 / Double(capacity) * Double(min(-momentum, 8)))
            windowShrank += 1
            while window.count > windowLimit { admit(windowCandidate()) }
            demoteProtectedOverflow()
            return false
        }
        if let stamp = leftWindow, insertions &- stamp < horizon {
            momentum = max(momentum, 0) + 1
            windowFraction = min(1, windowFraction + 1 / Double(capacity) * Double(min(momentum, 8)))
            windowGrew += 1
            for _ in 0 ..< 2 where !protected.isEmpty { ageProtected() }
            demoteProtectedOverflow()
            return true
        }
        return false
    }

    // MARK: The check against LRU, written from its documentation

    /// How many cached keys are sampled, counted afresh.
    var sampledEntries: Int { all.count { isSampled($0.key) } }

    func isSampled(_ key: Int) -> Bool {
        (Self.hash(key) >> 16) & UInt32((1 << sampleShift) - 1) == 0
    }

    mutating func startVerdict() {
        (sampled, onlyModelMissed, onlyShadowMissed, shadowMisses) = (0, 0, 0, 0)
    }

    /// Replays a request for a sampled key through the shadow LRU; every `2 ×` its capacity
    /// requests, raises the window's floor when the shadow missed significantly less, or lowers it.
    mutating func sample(_ key: Int, hit: Bool) {
        let hash = Self.hash(key)
        // Full, the shadow holds as many keys as the cache holds sampled ones.
        if count >= capacity { shadowCapacity = max(1, sampledEntries) }
        let shadowHit = shadow.contains(hash)
        if shadowHit {
            shadow.removeAll { $0 == hash }
        } else {
            while shadow.count >= shadowCapacity { shadow.removeFirst() }
        }
        shadow.append(hash)
        sampled += 1
        if !shadowHit { shadowMisses += 1 }
        if hit && !shadowHit { onlyShadowMissed += 1 }
        if !hit && shadowHit { onlyModelMissed += 1 }
        guard sampled % (2 * shadowCapacity) == 0 else { return }
        let difference = onlyModelMissed - onlyShadowMissed
        let discordant = onlyModelMissed + onlyShadowMissed
        let significant = discordant >= 32 && Double(difference * difference) > 9 * Double(discordant)
        if significant && difference > 0 && 64 * difference > shadowMisses {
            windowFloor = min(1, max(windowFloor, windowFraction) + 0.25)
            windowFraction = max(windowFraction, windowFloor)
            floorRaised += 1
            startVerdict()
        } else if significant && difference < 0 {
            lowerFloor(by: 0.125)
        } else if sampled >= 32 * shadowCapacity {
            if difference > 0 { startVerdict() } else { lowerFloor(by: 1.0 / 32) }
        }
    }

    mutating func lowerFloor(by step: Double) {
        if windowFloor > 0 {
            windowFloor = max(0, windowFloor - step)
            windowFraction = max(windowFloor, windowFraction - step)
            floorLowered += 1
        }
        startVerdict()
    }

    // MARK: The cache's operations

    mutating func markUsed(_ key: Int) {
        clock += 1
        let now = clock
        // Only the window's stamps are kept: the main queues never read theirs.
        func use(_ entry: inout Entry, inWindow: Bool) {
            entry.referenced = true
            entry.uses = min(15, entry.uses + 1)
            if inWindow { entry.stamp = now }
        }
        for b in 0 ..< 32 { for i in buckets[b].indices where buckets[b][i].key == key { use(&buckets[b][i], inWindow: true) } }
        for i in probation.indices where probation[i].key == key { use(&probation[i], inWindow: false) }
        for i in protected.indices where protected[i].key == key { use(&protected[i], inWindow: false) }
        countedUse()
        if isSampled(key) { sample(key, hit: true) }
    }

    func entry(_ key: Int) -> Entry? {
        all.first { $0.key == key }
    }

    mutating func value(forKey key: Int, now: Double) -> Int? {
        guard let found = entry(key) else {
            statistics.misses += 1
            return nil
        }
        if now >= found.deadline {
            _ = take(key)
            statistics.expirations += 1
            statistics.misses += 1
            evicted.append(.init(key: key, value: found.value, reason: .expired))
            return nil
        }
        markUsed(key)
        statistics.hits += 1
        return found.value
    }

    /// A store; `false` when its expiry is rejected (zero seconds), which changes nothing.
    mutating func store(_ value: Int, forKey key: Int, cost: Int, seconds: Double?, now: Double) -> Bool {
        if let seconds, !(seconds.isFinite && seconds > 0) { return false }
        let deadline = (seconds ?? defaultExpiration).map { now + $0 } ?? .infinity
        if totalCostLimit > 0 && cost > totalCostLimit {
            _ = take(key)
            return true
        }
        statistics.insertions += 1
        if entry(key) != nil {
            for b in 0 ..< 32 {
                for i in buckets[b].indices where buckets[b][i].key == key {
                    (buckets[b][i].value, buckets[b][i].cost, buckets[b][i].deadline) = (value, cost, deadline)
                }
            }
            for i in probation.indices where probation[i].key == key {
                (probation[i].value, probation[i].cost, probation[i].deadline) = (value, cost, deadline)
            }
            for i in protected.indices where protected[i].key == key {
                (protected[i].value, protected[i].cost, protected[i].deadline) = (value, cost, deadline)
            }
            markUsed(key)
        } else {
            resize(countLimit > 0 ? countLimit : count + 1)
            insertions &+= 1
            clock += 1
            advanceBucketIfDue()
            if addToSketch(key, 1) { countedUse() }
            let returning = tuneWindow(for: key)
            if isSampled(key) { sample(key, hit: false) }
            buckets[newestBucket].append(
                Entry(key: key, value: value, cost: cost, deadline: deadline, returning: returning, stamp: clock))
        }
        enforceLimits()
        return true
    }

    func contains(_ key: Int, now: Double) -> Bool {
        entry(key).map { now < $0.deadline } ?? false
    }

    mutating func remove(forKey key: Int, now: Double) -> Bool {
        guard let (entry, _) = take(key) else { return false }
        if now >= entry.deadline {
            statistics.expirations += 1
            evicted.append(.init(key: key, value: entry.value, reason: .expired))
            return false
        }
        return true
    }

    mutating func removeExpired(now: Double) {
        for entry in all where now >= entry.deadline {
            _ = take(entry.key)
            statistics.expirations += 1
            statistics.evictions[.expired, default: 0] += 1
            evicted.append(.init(key: entry.key, value: entry.value, reason: .expired))
        }
    }

    mutating func removeAll() {
        shadow = []
        buckets = Array(repeating: [], count: 32)
        probation = []
        protected = []
    }
}
