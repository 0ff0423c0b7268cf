// TinyLFU's decisions: which window entry is the candidate, which main entry the victim, who
// wins, and how the window's share follows the workload. Called only under `.tinyLFU`, with
// `capacity` already set by `resize(for:)`.

extension EvictionOrder {
    @inlinable
    mutating func _tinyLFUInsert<E: EvictionEntry>(_ slot: Int32, capacity: Int, in entries: inout [E]) {
        resize(for: capacity, in: entries)
        let hash = entries[Int(slot)].hash
        insertions &+= 1
        clock &+= 1
        _advanceBucketIfDue(in: &entries)
        if sketch.increment(hash) { _countUse(in: &entries) }
        let marks = _tuneWindow(forNewKey: hash, in: &entries)
        if _isSampled(hash) {
            _sampleRequest(hash, hit: false)
            sampledEntries &+= 1
        }
        link(slot, to: Self.window, in: &entries)
        entries[Int(slot)].evictionLink.marks = marks
        entries[Int(slot)].evictionLink.stamp = UInt32(truncatingIfNeeded: clock)
    }

    @inlinable
    mutating func _tinyLFURemove<E: EvictionEntry>(_ slot: Int32, evicted: Bool, in entries: inout [E]) {
        let hash = entries[Int(slot)].hash
        // The entry's count goes back to the sketch, which remembers keys that are not cached.
        sketch.add(hash, UInt64(entries[Int(slot)].evictionLink.marks &>> 4))
        if _isSampled(hash) {
            sampledEntries &-= 1
            // An LRU cache would have lost a removed or expired key too.
            if !evicted { shadow.remove(hash) }
        }
        if evicted {
            if entries[Int(slot)].evictionLink.queue == Self.window {
                windowHistory.record(hash, at: insertions)
            } else {
                mainEvictions &+= 1
                mainHistory.record(hash, at: mainEvictions)
            }
        }
        unlink(slot, in: &entries)
        if evicted {
            // A trim or memory pressure leaves the cache below its capacity: an LRU cache would
            // have kept only its most recent keys too, as many sampled ones as this order keeps.
            shadow.removeLeastRecent(keeping: sampledEntries)
        }
    }

    @inlinable
    mutating func _tinyLFUNextVictim<E: EvictionEntry>(capacity: Int, in entries: inout [E]) -> Int32? {
        resize(for: capacity, in: entries)
        let hasMain = probation.count &+ protected.count > 0
        if window.count > windowLimit && hasMain {
            return _contest(in: &entries)
        }
        if hasMain { return _mainVictim(in: &entries) }
        return window.count > 0 ? _windowVictim(in: &entries) : nil
    }

    @inlinable
    mutating func _tinyLFUSettle<E: EvictionEntry>(capacity: Int, in entries: inout [E]) {
        resize(for: capacity, in: entries)
        while window.count > windowLimit { _admit(_windowVictim(in: &entries), in: &entries) }
    }

    /// Probation's oldest unreferenced entry; referenced ones are promoted to protected on the way.
    /// When probation is empty, protected's oldest unreferenced entry is demoted into it first.
    @inlinable
    mutating func _mainVictim<E: EvictionEntry>(in entries: inout [E]) -> Int32 {
        while true {
            if probation.count > 0 {
                let slot = probation.head
                guard takeReference(slot, in: &entries) else { return slot }
                move(slot, to: Self.protected, in: &entries)
                _demoteProtectedOverflow(in: &entries)
            } else {
                _ageProtected(in: &entries)
            }
        }
    }

    /// Looks at protected's oldest entry: a referenced one goes round again with the bit cleared,
    /// an unreferenced one is demoted to probation.
    @inlinable
    mutating func _ageProtected<E: EvictionEntry>(in entries: inout [E]) {
        let slot = protected.head
        move(slot, to: takeReference(slot, in: &entries) ? Self.protected : Self.probation, in: &entries)
    }

    /// Ages protected until it is within its limit.
    @inlinable
    mutating func _demoteProtectedOverflow<E: EvictionEntry>(in entries: inout [E]) {
        let limit = protectedLimit
        while protected.count > limit { _ageProtected(in: &entries) }
    }

    /// Moves a window entry into probation.
    @inlinable
    mutating func _admit<E: EvictionEntry>(_ slot: Int32, in entries: inout [E]) {
        entries[Int(slot)].evictionLink.marks &= ~Self.returning
        move(slot, to: Self.probation, in: &entries)
    }

    /// Compares the window's candidate with the main area's victim and returns the loser: the
    /// candidate wins, and moves into probation, when it is returning or counted more often.
    @inlinable
    mutating func _contest<E: EvictionEntry>(in entries: inout [E]) -> Int32 {
        let candidate = _windowVictim(in: &entries)
        let victim = _mainVictim(in: &entries)
        let returning = entries[Int(candidate)].evictionLink.marks & Self.returning != 0
        if returning || _frequency(candidate, in: entries) > _frequency(victim, in: entries) {
            _admit(candidate, in: &entries)
            return victim
        }
        return candidate
    }

    /// An entry's frequency: its own count plus the sketch's estimate for its key, at most 15.
    @inlinable
    func _frequency<E: EvictionEntry>(_ slot: Int32, in entries: [E]) -> Int {
        let link = entries[Int(slot)].evictionLink
        return min(15, sketch.frequency(entries[Int(slot)].hash) &+ Int(link.marks &>> 4))
    }

    /// Halves every entry's count and the sketch, so that old popularity fades.
    /// - Complexity: O(n + capacity), once every `20 × capacity` uses.
    @inlinable
    mutating func _age<E: EvictionEntry>(in entries: inout [E]) {
        sketch.halve()
        for i in entries.indices {
            let marks = entries[i].evictionLink.marks
            entries[i].evictionLink.marks = (marks & 0x0F) | ((marks &>> 1) & 0x70)
        }
        uses /= 2
    }

    /// Tunes the window for a new key hashing to `hash`, and returns the new entry's marks.
    ///
    /// A key that left the window within the last `capacity / 4` insertions would still be
    /// cached had the window been that much larger: the window grows, the key is marked
    /// returning (it wins its next contest), and protected ages by two entries, so that a main
    /// area holding yesterday's favourites frees up when the workload moves on. A key that left
    /// the main area within its last `capacity / 4` evictions argues for a larger main area: the
    /// window shrinks. A step is one entry, and one more for each signal in a row that went the
    /// same way, up to ``maximumTuningStep``: a steady signal (a working set sliding past a
    /// cache that should be all window, a workload that changed) moves the window quickly, while
    /// a mixed one still moves it one entry at a time.
    /// The most entries one tuning step moves the window by.
    @inlinable static var maximumTuningStep: Int { 8 }

    @inlinable
    mutating func _tuneWindow<E: EvictionEntry>(forNewKey hash: UInt32, in entries: inout [E]) -> UInt8 {
        let leftWindow = windowHistory.take(hash)
        let leftMain = mainHistory.take(hash)
        let horizon = UInt32(truncatingIfNeeded: max(1, capacity / 4))
        let unit = 1 / Double(capacity)
        if let stamp = leftMain, mainEvictions &- stamp < horizon {
            tuneMomentum = min(tuneMomentum, 0) &- 1
            let step = unit * Double(min(-tuneMomentum, Self.maximumTuningStep))
            windowFraction = max(windowFloor, windowFraction - step)
            let limit = windowLimit
            while window.count > limit { _admit(_windowVictim(in: &entries), in: &entries) }
            _demoteProtectedOverflow(in: &entries)
            return 0
        }
        if let stamp = leftWindow, insertions &- stamp < horizon {
            tuneMomentum = max(tuneMomentum, 0) &+ 1
            let step = unit * Double(min(tuneMomentum, Self.maximumTuningStep))
            windowFraction = min(1, windowFraction + step)
            for _ in 0 ..< 2 where protected.count > 0 { _ageProtected(in: &entries) }
            _demoteProtectedOverflow(in: &entries)
            return Self.returning
        }
        return 0
    }
}
