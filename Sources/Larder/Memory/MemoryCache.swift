import Foundation
import Synchronization

/// A thread-safe, in-memory cache that evicts the least recently used entries first, or by an
/// ``EvictionPolicy`` of your choice.
///
/// Reads and writes are O(1) and take one lock. Entries can carry a cost, a time to live, or both:
/// ```swift
/// let cache = try MemoryCache<String, Data>(countLimit: 1_000, totalCostLimit: 64 << 20, defaultExpiration: 300)
/// try cache.store(data, forKey: "avatar/42", cost: data.count)
/// let hit = cache.value(forKey: "avatar/42")
/// ```
///
/// By default (``EvictionPolicy/lru``) the recency order is exact: when a limit is exceeded, the
/// entries that were read or written longest ago go first. ``EvictionPolicy/tinyLFU`` (also
/// ``EvictionPolicy/recommended``) weighs how often keys are used as well, and misses less on
/// most workloads; see <doc:EvictionPolicies>. Every other behaviour is the same under every
/// policy. Expired entries are dropped lazily: a read, ``remove(forKey:)`` or
/// ``collectGarbage()`` finds and drops them, and until then they still count toward ``count``,
/// ``totalCost`` and ``keys()``, and can be evicted by a limit like any other entry.
///
/// Its operations share their names and meaning with ``DiskCache`` and ``HybridCache``:
/// `value(forKey:)`, `store(_:forKey:...)`, `remove(forKey:)`, `remove(forKeys:)`, `contains(_:)`,
/// `removeAll()`, `keys()` (and, with `String` keys, `keys(withPrefix:)`), `collectGarbage()`,
/// `statistics`.
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Called with each value the cache drops on its own (not those removed or replaced by the caller).
    public typealias EvictionHandler = @Sendable (_ key: Key, _ value: Value, _ reason: EvictionReason) -> Void

    /// Evicted entries collected under the lock, for the handler to see once it is released.
    @usableFromInline
    typealias Evicted = [(key: Key, value: Value, reason: EvictionReason)]

    /// Everything the lock guards.
    @usableFromInline
    struct State {
        @usableFromInline var storage: EntryStorage<Key, Value>
        @usableFromInline var countLimit: Int
        @usableFromInline var totalCostLimit: Int
        @usableFromInline var counters = StatisticsCounters()
        /// Hits counted for the cache that owns this tier (``HybridCache/statistics``'s memory
        /// hits), under the lock already held, instead of on an atomic of its own.
        @usableFromInline var ownerHits = 0
        /// Invariant checks so far (debug builds), to space out the full walks.
        @usableFromInline var _checksDone = 0

        @usableFromInline
        init(countLimit: Int, totalCostLimit: Int, policy: EvictionPolicy) {
            self.countLimit = countLimit
            self.totalCostLimit = totalCostLimit
            storage = EntryStorage(policy: policy)
        }

        /// The most entries the cache holds, as the eviction order sizes itself: the count limit,
        /// or, when only a cost (or nothing) limits the cache, its current count.
        @inlinable
        var capacity: Int {
            storage.capacity(countLimit: countLimit)
        }
    }

    // The hot paths are `@inlinable` so that callers in other modules get them specialized for
    // their key and value types: unspecialized, a String-keyed read took about 480 ns instead
    // of about 65 (see BENCHMARKS.md). Everything they touch is therefore `@usableFromInline`.
    @usableFromInline let state: LarderMutex<State>
    @usableFromInline let clock: any CacheClock
    /// Whether `clock` is the ``SystemClock``, whose expiry check can skip the precise time.
    @usableFromInline let usesSystemClock: Bool
    @usableFromInline let evictionHandler: EvictionHandler?
    /// The shared pressure monitor's registration of this cache, while it responds to pressure.
    private let pressureRegistration = LarderMutex<(center: MemoryPressureCenter, registration: MemoryPressureCenter.Registration)?>(nil)

    /// The lifetime, in seconds, of values stored with ``Expiry/default``; `nil` means they
    /// never expire.
    public let defaultExpiration: TimeInterval?

    /// How the cache chooses what to evict.
    public let policy: EvictionPolicy

    /// Creates an empty cache.
    ///
    /// Each setting is checked here: one out of range throws, naming it and its value, and no
    /// cache is made.
    /// - Parameters:
    ///   - countLimit: The most entries to hold; 0 (the default) means no limit. Not negative.
    ///   - totalCostLimit: The most total cost to hold; 0 (the default) means no limit. Not negative.
    ///   - defaultExpiration: Seconds a value stored with ``Expiry/default`` lives; `nil` (the
    ///     default) means forever. Finite and above 0 when given; larger than
    ///     ``Expiry/maximumSeconds`` is clamped to it.
    ///   - clock: The time source for expiry; the wall clock by default.
    ///   - respondsToMemoryPressure: The initial ``respondsToMemoryPressure`` (false by default).
    ///   - policy: How to choose what to evict: ``EvictionPolicy/lru`` (the default) or
    ///     ``EvictionPolicy/tinyLFU`` (``EvictionPolicy/recommended``).
    ///   - evictionHandler: Called, outside the cache's lock, with each value the cache drops on its
    ///     own: for a limit, an expiry, a trim or memory pressure. Not called for values the caller
    ///     removes or replaces.
    /// - Throws: ``CacheError/Code/invalidOptions`` for a negative limit, or a default expiration
    ///   that is not finite and above 0.
    public convenience init(
        countLimit: Int = 0, totalCostLimit: Int = 0, defaultExpiration: TimeInterval? = nil,
        clock: any CacheClock = SystemClock(), respondsToMemoryPressure: Bool = false,
        policy: EvictionPolicy = .lru, evictionHandler: EvictionHandler? = nil
    ) throws(CacheError) {
        try self.init(
            options: MemoryCacheOptions(
                countLimit: countLimit, totalCostLimit: totalCostLimit, defaultExpiration: defaultExpiration, policy: policy,
                respondsToMemoryPressure: respondsToMemoryPressure),
            clock: clock, evictionHandler: evictionHandler)
    }

    /// Creates an empty cache with `options`.
    /// - Parameters:
    ///   - options: The cache's limits, default expiration, policy and response to memory pressure.
    ///   - clock: The time source for expiry; the wall clock by default.
    ///   - evictionHandler: Called, outside the cache's lock, with each value the cache drops on its
    ///     own: for a limit, an expiry, a trim or memory pressure. Not called for values the caller
    ///     removes or replaces.
    /// - Throws: ``CacheError/Code/invalidOptions`` naming the first setting out of range
    ///   (``MemoryCacheOptions/validate()``).
    public init(options: MemoryCacheOptions, clock: any CacheClock = SystemClock(), evictionHandler: EvictionHandler? = nil)
        throws(CacheError)
    {
        try options.validate()
        state = LarderMutex(State(countLimit: options.countLimit, totalCostLimit: options.totalCostLimit, policy: options.policy))
        policy = options.policy
        defaultExpiration = options.defaultExpiration.map { min($0, Expiry.maximumSeconds) }
        self.clock = clock
        usesSystemClock = clock is SystemClock
        self.evictionHandler = evictionHandler
        if options.respondsToMemoryPressure { respondToMemoryPressure(true) }
    }

    deinit {
        respondToMemoryPressure(false)
    }

    /// Whether the system's memory pressure events trim the cache (see ``handleMemoryPressure(_:)``);
    /// `false` unless set, or given to the initializer.
    ///
    /// Every cache that responds shares the process's one ``MemoryPressureMonitor``, which starts
    /// with the first and stops with the last; a cache leaves it when this is set to `false` or
    /// when the cache is freed (the monitor holds it weakly).
    public var respondsToMemoryPressure: Bool {
        get { pressureRegistration.withLock { $0 != nil } }
        set { respondToMemoryPressure(newValue) }
    }

    /// Whether the cache responds to memory pressure and the platform delivers pressure events
    /// (on Linux, where the kernel accepts pressure-stall triggers).
    public var isMonitoringMemoryPressure: Bool {
        guard let center = pressureRegistration.withLock({ $0?.center }) else { return false }
        return center.monitor?.isActive ?? false
    }

    /// The pressure monitor the cache is registered with, while it responds to pressure.
    var memoryPressureCenter: MemoryPressureCenter? {
        pressureRegistration.withLock { $0?.center }
    }

    /// Registers with `center` or leaves it; ``respondsToMemoryPressure``'s setter, with the
    /// center tests replace.
    func respondToMemoryPressure(_ responds: Bool, center: MemoryPressureCenter = .shared) {
        // Under this cache's own lock, so that concurrent toggles leave one registration at most.
        // The center never calls back into it: events reach `handleMemoryPressure(_:)` only.
        pressureRegistration.withLock { current in
            if let (previous, registration) = current {
                guard !responds || previous !== center else { return }
                previous.unregister(registration)
                current = nil
            }
            if responds { current = (center, center.register(self)) }
        }
    }

    // MARK: Reading and writing

    /// Returns the value stored under `key`, and marks the entry as used: under
    /// ``EvictionPolicy/lru`` it becomes the most recently used; under ``EvictionPolicy/tinyLFU``
    /// its reference bit is set and its key counted.
    ///
    /// An expired value is never returned: it is dropped and counted as an expiration and a miss.
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil` when the key is absent or its value has expired.
    @inlinable
    public func value(forKey key: Key) -> Value? {
        value(forKey: key, countingMiss: true)
    }

    /// ``value(forKey:)``, optionally without counting an absent key as a miss (for a caller that
    /// looks again after a miss it has already counted: the hybrid cache, under its key lock),
    /// and counting a hit in ``ownerHits`` too.
    @inlinable
    func value(forKey key: Key, countingMiss: Bool, countingOwnerHit: Bool = false) -> Value? {
        let (value, expired) = state.withLock { state -> (Value?, Value?) in
            guard let slot = state.storage.slot(forKey: key) else {
                if countingMiss { state.counters.misses += 1 }
                return (nil, nil)
            }
            if hasPassed(state.storage.deadline(at: slot)) {
                let removed = state.storage.remove(slot)
                state.counters.expirations += 1
                state.counters.misses += 1
                state._checkInvariants()
                return (nil, removed.value)
            }
            state.storage.touch(slot)
            state.counters.hits += 1
            if countingOwnerHit { state.ownerHits += 1 }
            return (state.storage.value(at: slot), nil)
        }
        if let expired, let evictionHandler {
            evictionHandler(key, expired, .expired)
        }
        return value
    }

    /// The live value under `key` and its deadline (`.infinity` for none), without a use and
    /// without counting: for a typed view that copies the hybrid's entry with the same lifetime.
    func peek(_ key: Key) -> (value: Value, deadline: Double)? {
        state.withLock { state in
            guard let slot = state.storage.slot(forKey: key) else { return nil }
            let deadline = state.storage.deadline(at: slot)
            return hasPassed(deadline) ? nil : (state.storage.value(at: slot), deadline)
        }
    }

    /// Stores `value` under `key` as the newest entry (replacing a value counts as a use), then
    /// evicts entries, as the ``policy`` chooses, until the cache is within its limits.
    ///
    /// A value whose cost alone exceeds ``totalCostLimit`` is not admitted, and any older value
    /// under `key` is removed, so that a read never returns a value the caller has replaced.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under, replacing any value already there.
    ///   - cost: The value's cost toward ``totalCostLimit`` (for example, its size in bytes); not negative.
    ///   - expiry: When the value expires: ``Expiry/default`` (the default) uses
    ///     ``defaultExpiration``; ``Expiry/seconds(_:)`` counts from now. A value expires once the
    ///     clock reaches the time of storing plus its lifetime.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a negative cost or an expiry of zero,
    ///   negative or non-finite seconds; the cache is unchanged then.
    /// - Complexity: O(1), plus O(1) per entry evicted.
    @inlinable
    public func store(_ value: Value, forKey key: Key, cost: Int = 0, expiry: Expiry = .default) throws(CacheError) {
        guard cost >= 0 else {
            throw CacheError(.invalidArgument, "cost must not be negative, not \(cost)", key: "\(key)")
        }
        let lifetime = try expiry.validatedSeconds(key: "\(key)") ?? defaultExpiration
        let deadline = lifetime.map { clock.now + $0 } ?? .infinity
        changeEnforcingLimits { state in
            if state.totalCostLimit > 0 && cost > state.totalCostLimit {
                if let slot = state.storage.slot(forKey: key) { state.storage.remove(slot) }
                return false
            }
            state.storage.setValue(value, forKey: key, cost: cost, deadline: deadline, countLimit: state.countLimit)
            state.counters.insertions += 1
            return true
        }
    }

    /// Removes the value stored under `key`. The eviction handler is not called.
    ///
    /// An expired value is dropped as an expiration (and handed to the eviction handler), and
    /// does not count as removed.
    /// - Parameter key: The key to remove.
    /// - Returns: Whether a live value was removed.
    @discardableResult
    public func remove(forKey key: Key) -> Bool {
        let expired = state.withLock { state -> (removed: Bool, expired: Value?) in
            guard let slot = state.storage.slot(forKey: key) else { return (false, nil) }
            let deadline = state.storage.deadline(at: slot)
            let isExpired = deadline != .infinity && clock.now >= deadline
            let removed = state.storage.remove(slot)
            if isExpired { state.counters.expirations += 1 }
            state._checkInvariants()
            return isExpired ? (false, removed.value) : (true, nil)
        }
        if let value = expired.expired, let evictionHandler {
            evictionHandler(key, value, .expired)
        }
        return expired.removed
    }

    /// Removes the values stored under `keys`, as ``remove(forKey:)`` does for each.
    /// - Parameter keys: The keys to remove.
    /// - Returns: The keys whose live values were removed, in the order given.
    /// - Complexity: O(*k*) in the number of keys.
    @discardableResult
    public func remove(forKeys keys: [Key]) -> [Key] {
        keys.filter { remove(forKey: $0) }
    }

    /// Whether a live (unexpired) value is stored under `key`. Not a use: the entry keeps its
    /// place in the eviction order, and no statistic changes.
    /// - Parameter key: The key to look up.
    public func contains(_ key: Key) -> Bool {
        state.withLock { state in
            guard let slot = state.storage.slot(forKey: key) else { return false }
            return !hasPassed(state.storage.deadline(at: slot))
        }
    }

    /// Removes every value. The eviction handler is not called; statistics are kept.
    /// - Complexity: O(n).
    public func removeAll() {
        state.withLock { state in
            state.storage.removeAll()
            state._checkInvariants()
        }
    }

    /// Drops every expired value, counting each as an expiration and as an eviction for
    /// ``EvictionReason/expired``, and handing it to the eviction handler: the memory tier's
    /// collection. Its limits need none, since every store and limit
    /// change enforces them at once; on ``DiskCache`` a collection also enforces the limits.
    /// - Returns: How many values were dropped.
    /// - Complexity: O(n).
    @discardableResult
    public func collectGarbage() -> Int {
        let now = clock.now
        let collecting = evictionHandler != nil
        let (evicted, dropped) = state.withLock { state -> (Evicted, Int) in
            var evicted: Evicted = []
            // By key: a removal can move other entries to other slots.
            let expired = state.storage.slotsInOrder.filter { state.storage.deadline(at: $0) <= now }.map { state.storage.key(at: $0) }
            for key in expired {
                guard let slot = state.storage.slot(forKey: key) else { continue }
                let removed = state.storage.remove(slot)
                state.counters.expirations += 1
                state.counters.countEviction(.expired)
                if collecting { evicted.append((removed.key, removed.value, .expired)) }
            }
            state._checkInvariants()
            return (evicted, expired.count)
        }
        notify(evicted)
        return dropped
    }

    // MARK: Limits and trimming

    /// Evicts entries, as the ``policy`` chooses (under LRU, the least recently used first), until
    /// at most `count` remain.
    /// - Parameter count: The most entries to keep; not negative.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a negative count, with nothing evicted.
    /// - Complexity: O(1) per entry evicted.
    public func trim(toCount count: Int) throws(CacheError) {
        guard count >= 0 else { throw CacheError(.invalidArgument, "trim(toCount:) needs 0 or more entries, not \(count)") }
        trim(reason: .trimmed) { $0.count > count }
    }

    /// Evicts entries, as the ``policy`` chooses (under LRU, the least recently used first), until
    /// their total cost is at most `cost`.
    /// - Parameter cost: The most total cost to keep; not negative.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a negative cost, with nothing evicted.
    /// - Complexity: O(1) per entry evicted.
    public func trim(toCost cost: Int) throws(CacheError) {
        guard cost >= 0 else { throw CacheError(.invalidArgument, "trim(toCost:) needs a cost of 0 or more, not \(cost)") }
        trim(reason: .trimmed) { $0.totalCost > cost }
    }

    /// The number of entries, including expired ones not yet dropped.
    public var count: Int {
        state.withLock { $0.storage.count }
    }

    /// The sum of the entries' costs, including expired ones not yet dropped.
    public var totalCost: Int {
        state.withLock { $0.storage.totalCost }
    }

    /// The keys in the order the ``policy`` would evict them, including expired ones not yet dropped.
    ///
    /// Under ``EvictionPolicy/lru``, exactly least recently used first. Under
    /// ``EvictionPolicy/tinyLFU``: the admission window, then probation, then the protected
    /// area, each oldest first; only roughly the eviction order, since a read sets a bit instead
    /// of moving the entry, and a newcomer can be evicted before older entries when it loses its
    /// admission contest.
    /// - Complexity: O(n).
    public func keys() -> [Key] {
        state.withLock { $0.storage.keysInOrder }
    }

    /// The keys in ``keys()``'s order that start with `prefix` (every key for ""),
    /// as ``DiskCache`` and ``HybridCache`` spell it.
    /// - Parameter prefix: The start every key returned shares.
    /// - Complexity: O(n).
    public func keys(withPrefix prefix: String) -> [String] where Key == String {
        let all = keys()
        return prefix.isEmpty ? all : all.filter { $0.hasPrefix(prefix) }
    }

    /// The most entries the cache holds; 0 means no limit. Change it with ``setCountLimit(_:)``.
    public var countLimit: Int {
        state.withLock { $0.countLimit }
    }

    /// The most total cost the cache holds; 0 means no limit. Change it with ``setTotalCostLimit(_:)``.
    public var totalCostLimit: Int {
        state.withLock { $0.totalCostLimit }
    }

    /// Changes ``countLimit``; lowering it evicts at once, as the ``policy`` chooses.
    ///
    /// A method rather than a setter so that a negative limit is an error the caller handles, not
    /// a crash: a property setter cannot throw.
    /// - Parameter limit: The most entries to hold; 0 means no limit. Not negative.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a negative limit, with the limit unchanged.
    /// - Complexity: O(1) per entry evicted.
    public func setCountLimit(_ limit: Int) throws(CacheError) {
        guard limit >= 0 else { throw CacheError(.invalidArgument, "countLimit must be 0 (no limit) or positive, not \(limit)") }
        updateLimits { $0.countLimit = limit }
    }

    /// Changes ``totalCostLimit``; lowering it evicts at once, as the ``policy`` chooses.
    /// - Parameter limit: The most total cost to hold; 0 means no limit. Not negative.
    /// - Throws: ``CacheError/Code/invalidArgument`` for a negative limit, with the limit unchanged.
    /// - Complexity: O(1) per entry evicted.
    public func setTotalCostLimit(_ limit: Int) throws(CacheError) {
        guard limit >= 0 else { throw CacheError(.invalidArgument, "totalCostLimit must be 0 (no limit) or positive, not \(limit)") }
        updateLimits { $0.totalCostLimit = limit }
    }

    /// The cache's counters since it was created.
    public var statistics: CacheStatistics {
        state.withLock { $0.counters.statistics }
    }

    /// The hits counted with `countingOwnerHit` (the hybrid's memory hits).
    var ownerHits: Int {
        state.withLock { $0.ownerHits }
    }

    /// Frees memory in response to memory pressure.
    ///
    /// `.warning` evicts entries, as the ``policy`` chooses, until both the count and the total
    /// cost are at most half (rounded down) of what they were; `.critical` evicts everything. Evicted
    /// values go to the eviction handler with ``EvictionReason/memoryPressure``. A cache that
    /// ``respondsToMemoryPressure`` calls this by itself; tests can call it directly.
    /// - Parameter level: How severe the pressure is.
    /// - Complexity: O(1) per entry evicted.
    public func handleMemoryPressure(_ level: MemoryPressureLevel) {
        switch level {
        case .warning:
            var targets: (count: Int, cost: Int)?
            trim(reason: .memoryPressure) { storage in
                let target = targets ?? (storage.count / 2, storage.totalCost / 2)
                targets = target
                return storage.count > target.count || storage.totalCost > target.cost
            }
        case .critical:
            trim(reason: .memoryPressure) { $0.count > 0 }
        }
    }

    // MARK: Helpers

    /// Whether the clock has reached `deadline`; only entries with a deadline read the clock.
    ///
    /// Always inlined, so that a read of an entry without a deadline costs one comparison, not a
    /// call (about 20 instructions of every hit, by cachegrind).
    @inlinable @inline(__always)
    func hasPassed(_ deadline: Double) -> Bool {
        deadline != .infinity && _hasReached(deadline)
    }

    /// Whether the clock has reached the finite `deadline`.
    @inlinable
    func _hasReached(_ deadline: Double) -> Bool {
        usesSystemClock ? SystemClock.hasReached(deadline) : clock.now >= deadline
    }

    /// Evicts entries while `isOver` says the storage is over its target.
    private func trim(reason: EvictionReason, while isOver: (EntryStorage<Key, Value>) -> Bool) {
        let collecting = evictionHandler != nil
        let evicted = state.withLock { state -> Evicted in
            var evicted: Evicted = []
            let capacity = state.capacity
            while isOver(state.storage) {
                state._evictOne(reason: reason, capacity: capacity, collecting: collecting, into: &evicted)
            }
            state.storage.settle(capacity: state.capacity)
            state._checkInvariants()
            return evicted
        }
        notify(evicted)
    }

    private func updateLimits(_ change: (inout State) -> Void) {
        changeEnforcingLimits { state in
            change(&state)
            return true
        }
    }

    /// Runs `change` under the lock, then, when it returns `true`, evicts until the cache is
    /// within its limits; the evicted values reach the handler once the lock is released.
    @inlinable
    func changeEnforcingLimits(_ change: (inout State) -> Bool) {
        let collecting = evictionHandler != nil
        let evicted = state.withLock { state -> Evicted in
            var evicted: Evicted = []
            if change(&state) { state._enforceLimits(collecting: collecting, into: &evicted) }
            state._checkInvariants()
            return evicted
        }
        notify(evicted)
    }

    /// Hands evicted entries to the handler; called with the lock released.
    @inlinable
    func notify(_ evicted: Evicted) {
        guard let evictionHandler, !evicted.isEmpty else { return }
        for entry in evicted {
            evictionHandler(entry.key, entry.value, entry.reason)
        }
    }
}

extension MemoryCache.State {
    /// Evicts entries until the count limit, then the cost limit, are met, then lets the eviction
    /// order settle.
    @inlinable
    mutating func _enforceLimits(collecting: Bool, into evicted: inout MemoryCache.Evicted) {
        // Sized before evicting: with only a cost limit, the capacity is the count that overflowed.
        let capacity = capacity
        if countLimit > 0 {
            while storage.count > countLimit {
                _evictOne(reason: .countLimit, capacity: capacity, collecting: collecting, into: &evicted)
            }
        }
        if totalCostLimit > 0 {
            while storage.totalCost > totalCostLimit {
                _evictOne(reason: .costLimit, capacity: capacity, collecting: collecting, into: &evicted)
            }
        }
        storage.settle(capacity: self.capacity)
    }

    /// Evicts the entry the eviction order chooses; the cache must not be empty.
    @inlinable
    mutating func _evictOne(
        reason: EvictionReason, capacity: Int, collecting: Bool, into evicted: inout MemoryCache.Evicted
    ) {
        guard let slot = storage.nextVictim(capacity: capacity) else { preconditionFailure("evicting from an empty cache") }
        counters.countEviction(reason)
        if collecting {
            let removed = storage.remove(slot, evicted: true)
            evicted.append((removed.key, removed.value, reason))
        } else {
            storage.discard(slot, evicted: true)
        }
    }
}

extension MemoryCache: MemoryPressureResponder {}
