// The index's adaptive eviction policy (``DiskEvictionPolicy/adaptive``): a ``DiskAdaptivePolicy``
// over the slots of the unlocked records. The index keeps the policy's rules outside it:
//
// - A locked record leaves the policy while it is locked and comes back, as a newcomer, once it
//   is unlocked, so the policy never names a locked record.
// - A record stored or unlocked waits in `awaitingAdmission` until the next trim admits it
//   (`DiskCache.prune`), which first removes what has expired: the policy weighs only records
//   that are still live.
// - The policy's victims (and a newcomer it refuses) wait in `policyVictims` for that trim to
//   remove them; when the size limit is lowered (the free-space floor) or the count limit is
//   exceeded, the trim goes on in the policy's order (``forEachSlotInEvictionOrder(_:)``).
//
// Under LRU the index holds no policy and these are no-ops: its recency list is the order.
extension DiskIndex {
    /// Starts the policy with a byte budget of `capacity`, holding every unlocked record (least
    /// recently used first, as a stream of first requests): what the index knows of their order.
    /// When they exceed the budget they wait for admission instead, for the next trim.
    /// - Complexity: O(*n*).
    mutating func startPolicy(capacity: Int) {
        // Built aside and stored once full: a closure that changed the index's own policy while
        // the index walks its slots would change a copy's worth of shared arrays, copying each
        // (and the reservation with it) at its first change.
        var started = DiskAdaptivePolicy(capacity: capacity)
        // Slot numbers are the policy's ids: room for every slot the index has now.
        started.reserveCapacity(slots.count)
        (awaitingAdmission, awaitingSlots, policyVictims, victimSlots) = ([], [], [], [])
        var unlockedBytes = 0
        forEachSlotLeastRecentFirst { slot in
            if slots[Int(slot)].lockCount == 0 { unlockedBytes += slots[Int(slot)].diskSize }
            return true
        }
        // Over the budget, they wait for the trim that follows the build, which removes the
        // expired records before it admits the rest; else they go in at once, without the lists.
        if unlockedBytes <= capacity {
            forEachSlotLeastRecentFirst { slot in
                let s = slots[Int(slot)]
                guard s.lockCount == 0 else { return true }
                started.insert(
                    slot, size: s.diskSize, hash: policyHash(ofSlot: slot), hashOf: { policyHash(ofSlot: $0) },
                    evicting: { _ in preconditionFailure("records within the budget evict nothing") })
                return true
            }
            policy = started
        } else {
            policy = started
            forEachSlotLeastRecentFirst { slot in
                if slots[Int(slot)].lockCount == 0 { awaitForAdmission(slot) }
                return true
            }
        }
    }

    /// Whether a trim has policy work to do: records to admit or victims to remove.
    var hasPolicyWork: Bool { !awaitingSlots.isEmpty || !victimSlots.isEmpty }

    /// Whether admitting the records that wait would take the policy over its budget, so that a
    /// trim removes the expired records first.
    var admissionNeedsRoom: Bool {
        guard let policy, !awaitingSlots.isEmpty else { return false }
        var bytes = policy.byteCount
        for slot in awaitingSlots { bytes += slots[Int(slot)].diskSize }
        return bytes > policy.capacity
    }

    /// Inserts the records waiting for admission into the policy, in the order they came;
    /// what it evicts, or refuses, joins ``policyVictims``.
    /// - Complexity: O(*m* + *v*) for *m* records admitted and *v* victims (amortized).
    mutating func admitToPolicy() {
        guard policy != nil, !awaitingSlots.isEmpty else { return }
        let waiting = awaitingAdmission
        awaitingAdmission = []
        var victims: [Int32] = []
        // The slots and names as they are, for the policy's hashes of its records while it
        // changes (a closure reading `self` would overlap that change).
        let (slots, arena) = (self.slots, self.arena)
        for slot in waiting where awaitingSlots.remove(slot) != nil {
            let s = slots[Int(slot)]
            let kept = policy!.insert(
                slot, size: s.diskSize, hash: Self.policyHash(s, in: arena), hashOf: { Self.policyHash(slots[Int($0)], in: arena) },
                evicting: { victims.append($0) })
            if !kept { victims.append(slot) }
        }
        awaitingSlots = []
        for victim in victims where victimSlots.insert(victim).inserted { policyVictims.append(victim) }
    }

    /// Takes the victims the policy named, to be removed.
    mutating func takePolicyVictims() -> [Int32] {
        let victims = policyVictims.filter { victimSlots.contains($0) }
        (policyVictims, victimSlots) = ([], [])
        return victims
    }

    private mutating func awaitForAdmission(_ slot: Int32) {
        if awaitingSlots.insert(slot).inserted { awaitingAdmission.append(slot) }
    }

    /// Calls `body` with each occupied slot in the order a trim evicts them, until it returns
    /// `false`: under LRU the recency list; under the adaptive policy its order (the window's,
    /// probation's, then protected's oldest first), then the records it does not hold (locked,
    /// or waiting for admission), least recently used first.
    /// - Complexity: O(*k*) for the *k* slots visited, plus, once past the policy's records,
    ///   those it holds.
    func forEachSlotInEvictionOrder(_ body: (Int32) -> Bool) {
        guard let policy else { return forEachSlotLeastRecentFirst(body) }
        var goesOn = true
        policy.forEachInEvictionOrder { slot in
            goesOn = body(slot)
            return goesOn
        }
        guard goesOn else { return }
        forEachSlotLeastRecentFirst { slot in
            policy.contains(slot) ? true : body(slot)
        }
    }

    /// Keeps the policy in step with a slot whose fields changed: a locked record leaves it, an
    /// unlocked one it does not hold waits for admission, and one whose size changed leaves it
    /// and waits to come back at its new size.
    @inline(__always)
    mutating func notePolicyChange(of slot: Int32) {
        guard policy != nil else { return }
        _notePolicyChange(of: slot)
    }

    private mutating func _notePolicyChange(of slot: Int32) {
        let s = slots[Int(slot)]
        if policy!.contains(slot) {
            guard s.lockCount > 0 || policy!.queues.size(of: slot) != s.diskSize else { return }
            let hash = policyHash(ofSlot: slot)
            policy!.remove(slot, hash: hash)
        } else if s.lockCount > 0 {
            awaitingSlots.remove(slot)
            victimSlots.remove(slot)
        }
        if s.lockCount == 0, !victimSlots.contains(slot) { awaitForAdmission(slot) }
    }

    /// Tells the policy of a use of the record in `slot` (a read, a touch, a store over it), if
    /// it holds it.
    @inline(__always)
    mutating func notePolicyUse(of slot: Int32) {
        guard policy!.contains(slot) else { return }
        let hash = policyHash(ofSlot: slot)
        policy!.access(slot, hash: hash)
    }

    /// Takes a slot about to be freed out of the policy and its lists.
    mutating func notePolicyRemoval(of slot: Int32) {
        guard policy != nil else { return }
        if policy!.contains(slot) {
            let hash = policyHash(ofSlot: slot)
            policy!.remove(slot, hash: hash)
        }
        if !awaitingSlots.isEmpty { awaitingSlots.remove(slot) }
        if !victimSlots.isEmpty { victimSlots.remove(slot) }
    }

    /// A 32-bit hash of a slot's name for the policy's frequency sketch: FNV-1a over the name as
    /// the arena stores it, so that it is the same in every process (a record's slot changes on
    /// a reopen, and `Hasher` is seeded per process).
    func policyHash(ofSlot slot: Int32) -> UInt32 {
        Self.policyHash(slots[Int(slot)], in: arena)
    }

    /// ``policyHash(ofSlot:)`` of the slot `s`, its name in `arena`.
    static func policyHash(_ s: Slot, in arena: [UInt8]) -> UInt32 {
        PackedName.stored(s, in: arena) { packed in
            var hash: UInt32 = 2_166_136_261
            for byte in packed.bytes {
                hash ^= UInt32(byte)
                hash = hash &* 16_777_619
            }
            return hash
        }
    }

    /// Checks that every unlocked record is in exactly one of the policy, the records waiting
    /// for admission and its victims, and no locked one is; traps otherwise.
    /// - Complexity: O(*n*). Called by ``_checkInvariants()``.
    func _checkPolicy() {
        guard let policy else {
            precondition(awaitingSlots.isEmpty && victimSlots.isEmpty, "policy lists without a policy")
            return
        }
        var held = 0
        var heldBytes = 0
        for i in slots.indices where slots[i].flags.contains(.occupied) {
            let slot = Int32(i)
            let places = (policy.contains(slot) ? 1 : 0) + (awaitingSlots.contains(slot) ? 1 : 0) + (victimSlots.contains(slot) ? 1 : 0)
            if slots[i].lockCount > 0 {
                precondition(places == 0, "locked slot \(i) is in the policy or its lists")
            } else {
                precondition(places == 1, "unlocked slot \(i) is in \(places) of the policy and its lists")
            }
            if policy.contains(slot) {
                held += 1
                heldBytes += slots[i].diskSize
            }
        }
        precondition(held == policy.count && heldBytes == policy.byteCount, "the policy holds other records than the index says")
    }
}

extension DiskIndex {
    /// Queues a present record for admission again: a victim the trim could not remove.
    mutating func queueForAdmission(_ name: String) {
        guard let slot = slot(of: name) else { return }
        notePolicyChange(of: slot)
    }
}
