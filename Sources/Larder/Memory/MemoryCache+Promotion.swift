// Copies of values another tier served (the hybrid's remote hits), put in memory in one critical
// section: a batch takes the lock once, reads the clock once and checks the invariants once,
// where as many `store(_:forKey:cost:expiry:)` calls took each of them per value; each copy is
// admitted, and evicts, exactly as a store of it would.

extension MemoryCache {
    /// One copy for ``storeCopies(count:now:_:)``: the value, its cost, and the clock time at
    /// which it expires (`.infinity` for none; capped by ``defaultExpiration`` from `now`).
    struct Copy {
        var key: Key
        var value: Value
        var cost: Int
        var deadline: Double
    }

    /// Stores the copies `copy(0)` to `copy(count - 1)` under one hold of the lock, each as
    /// ``store(_:forKey:cost:expiry:)`` would with the lifetime from `now` to its deadline (capped
    /// by ``defaultExpiration`` and ``Expiry/maximumSeconds``): the same admissions, evictions,
    /// counts and eviction-handler calls, in the same order.
    ///
    /// `copy` runs with the lock held, so a caller can decide there whether a copy may still be
    /// made (`nil`: not this one) in the same critical section as the insertion: a change that
    /// updates this cache after making that decision come out the other way then always comes
    /// after the copy. It must not call into this cache. A copy whose deadline is not after
    /// `now` is not stored, and its key's entry is removed, as ``remove(forKey:)`` does.
    /// - Parameters:
    ///   - count: How many copies `copy` describes.
    ///   - now: The clock's time, read once by the caller, from which the lifetimes count.
    ///   - copy: The copy at an index, or `nil` to skip it. The cost must not be negative.
    /// - Complexity: O(*count*), plus O(1) per entry evicted.
    func storeCopies(count: Int, now: Double, _ copy: (Int) -> Copy?) {
        let collecting = evictionHandler != nil
        // What a store with the default expiry, or with the longest expiry, would give.
        let defaultDeadline = defaultExpiration.map { now + $0 } ?? .infinity
        let latestDeadline = now + Expiry.maximumSeconds
        let evicted = state.withLock { state -> Evicted in
            var evicted: Evicted = []
            for index in 0 ..< count {
                guard let copy = copy(index) else { continue }
                precondition(copy.cost >= 0, "a copy's cost must not be negative")
                if copy.deadline <= now {
                    state._removeCopy(forKey: copy.key, now: now, collecting: collecting, into: &evicted)
                    continue
                }
                if state.totalCostLimit > 0 && copy.cost > state.totalCostLimit {
                    if let slot = state.storage.slot(forKey: copy.key) { state.storage.remove(slot) }
                    continue
                }
                var deadline = min(copy.deadline, defaultDeadline)
                if deadline != .infinity { deadline = min(deadline, latestDeadline) }
                state.storage.setValue(copy.value, forKey: copy.key, cost: copy.cost, deadline: deadline, countLimit: state.countLimit)
                state.counters.insertions += 1
                state._enforceLimits(collecting: collecting, into: &evicted)
            }
            state._checkInvariants()
            return evicted
        }
        notify(evicted)
    }
}

extension MemoryCache.State {
    /// ``MemoryCache/remove(forKey:)``'s change, under the lock already held: an expired entry
    /// is counted as an expiration and collected for the eviction handler.
    mutating func _removeCopy(forKey key: Key, now: Double, collecting: Bool, into evicted: inout MemoryCache.Evicted) {
        guard let slot = storage.slot(forKey: key) else { return }
        let deadline = storage.deadline(at: slot)
        let removed = storage.remove(slot)
        guard deadline != .infinity && now >= deadline else { return }
        counters.expirations += 1
        if collecting { evicted.append((removed.key, removed.value, .expired)) }
    }
}
