// The index image's policy section: the adaptive eviction policy's state (``StoredPolicy``), its
// records named by their positions in the snapshot's entry order, so that a reopened cache
// evicts as the closed one would have. Empty under LRU.
//
// Layout (little-endian; docs/FORMAT.md): magic "LRDP", version u32 (1); capacity u64, window
// share and floor (f64 bits), random state u64, sketch uses u64; the bytes of the window's,
// probation's and protected's records u64 each; the hill climber's period
// requests, hits, bytes and hit bytes u64, previous score, step and direction (f64 bits); the
// sample mask u32, then the LRU check's sampled requests, only-order misses, only-shadow misses,
// shadow misses, shadow missed bytes, only-order missed bytes and only-shadow missed bytes u64;
// the counts u32 of the window's, probation's and protected's records, of those waiting for
// admission, of the victims, of the shadow's keys and of the sketch's words; each record list
// (window, probation, protected, waiting, victims, in that order, each in its order) as
// position u32 and key hash u32; probation's draw order as indices u32 into its list; the
// shadow's keys, least recently used first, as hash u32 and size u64; the sketch's words u64;
// last, a CRC-32 of the section's bytes before it.
//
// A section that is damaged, of another version, or does not fit the index it is restored into
// is ignored: the policy then starts afresh from the recency order, as with no section.

extension IndexSnapshot {
    static let policyMagic: UInt32 = 0x5044_524C  // "LRDP"
    static let policyVersion: UInt32 = 1
    /// The section's bytes before its lists: magic and version, then the scalars and counts.
    static let policyFixedSize = 8 + 5 * 8 + 3 * 8 + 7 * 8 + 4 + 7 * 8 + 7 * 4

    /// The policy section of `index` whose entries are written in `order`: empty when it holds
    /// no policy.
    /// - Complexity: O(*n* + sketch words).
    static func policySection(_ index: DiskIndex, order: [Int32]) -> [UInt8] {
        guard index.policy != nil else { return [] }
        var positions = [UInt32](repeating: 0, count: index.slots.count)
        for (position, slot) in order.enumerated() { positions[Int(slot)] = UInt32(position) }
        guard let stored = index.storedPolicy(position: { positions[Int($0)] }) else { return [] }
        return encodePolicy(stored)
    }

    /// The bytes of a policy section holding `stored`.
    static func encodePolicy(_ stored: StoredPolicy) -> [UInt8] {
        let lists = [stored.queues[0], stored.queues[1], stored.queues[2], stored.awaiting, stored.victims]
        let records = lists.reduce(0) { $0 + $1.count }
        let total =
            policyFixedSize + 8 * records + 4 * stored.probationDraws.count + 12 * stored.shadow.count
            + 8 * stored.sketch.count + 4
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            var writer = LittleEndianWriter(UnsafeMutableRawBufferPointer(buffer))
            func put(_ value: Int) { writer.put(UInt64(bitPattern: Int64(value))) }
            func put(_ value: Double) { writer.put(value.bitPattern) }
            writer.put(policyMagic)
            writer.put(policyVersion)
            put(stored.capacity)
            put(stored.windowShare)
            put(stored.windowFloor)
            writer.put(stored.randomState)
            put(stored.sketchUses)
            for bytes in stored.queueBytes { put(bytes) }
            for value in [stored.periodRequests, stored.periodHits, stored.periodBytes, stored.periodHitBytes] { put(value) }
            for value in [stored.previousScore, stored.climbStep, stored.climbDirection] { put(value) }
            writer.put(stored.sampleMask)
            for value in [
                stored.sampledRequests, stored.onlyOrderMissed, stored.onlyShadowMissed, stored.shadowMisses,
                stored.shadowMissedBytes, stored.onlyOrderMissedBytes, stored.onlyShadowMissedBytes,
            ] { put(value) }
            for list in lists { writer.put(UInt32(list.count)) }
            writer.put(UInt32(stored.shadow.count))
            writer.put(UInt32(stored.sketch.count))
            precondition(writer.offset == policyFixedSize, "the policy section's fixed part")
            for list in lists {
                for record in list {
                    writer.put(record.position)
                    writer.put(record.hash)
                }
            }
            for index in stored.probationDraws { writer.put(index) }
            for key in stored.shadow {
                writer.put(key.hash)
                put(key.size)
            }
            for word in stored.sketch { writer.put(word) }
            writer.put(CRC32.checksum(writer.written))
            precondition(writer.offset == total, "the policy section's size")
            count = writer.offset
        }
    }

    /// The policy a section holds, or `nil` when it is empty, damaged or of another version. Only
    /// its structure is checked here: ``DiskIndex/restorePolicy(_:capacity:)`` checks the rest.
    /// - Complexity: O(section length).
    static func decodePolicy(_ section: UnsafeRawBufferPointer) -> StoredPolicy? {
        guard section.count >= policyFixedSize + 4 else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: section[0 ..< section.count - 4])
        var offset = 0
        func load<T: FixedWidthInteger>(_: T.Type) -> T {
            defer { offset += MemoryLayout<T>.size }
            return T(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        func int() -> Int { Int(Int64(bitPattern: load(UInt64.self))) }
        func double() -> Double { Double(bitPattern: load(UInt64.self)) }
        let crc = UInt32(littleEndian: section.loadUnaligned(fromByteOffset: body.count, as: UInt32.self))
        guard CRC32.checksum(body) == crc, load(UInt32.self) == policyMagic, load(UInt32.self) == policyVersion else {
            return nil
        }
        var stored = StoredPolicy()
        stored.capacity = int()
        stored.windowShare = double()
        stored.windowFloor = double()
        stored.randomState = load(UInt64.self)
        stored.sketchUses = int()
        stored.queueBytes = [int(), int(), int()]
        (stored.periodRequests, stored.periodHits, stored.periodBytes, stored.periodHitBytes) = (int(), int(), int(), int())
        (stored.previousScore, stored.climbStep, stored.climbDirection) = (double(), double(), double())
        stored.sampleMask = load(UInt32.self)
        (stored.sampledRequests, stored.onlyOrderMissed, stored.onlyShadowMissed, stored.shadowMisses) =
            (int(), int(), int(), int())
        (stored.shadowMissedBytes, stored.onlyOrderMissedBytes, stored.onlyShadowMissedBytes) = (int(), int(), int())
        let listCounts = (0 ..< 5).map { _ in Int(load(UInt32.self)) }
        let shadowCount = Int(load(UInt32.self))
        let words = Int(load(UInt32.self))
        // The counts must account for every byte there is, before anything is reserved.
        let needed = 8 * listCounts.reduce(0, +) + 4 * listCounts[1] + 12 * shadowCount + 8 * words
        guard needed == body.count - offset else { return nil }
        var lists: [[StoredPolicy.Record]] = []
        for count in listCounts {
            lists.append(
                (0 ..< count).map { _ in
                    let position = load(UInt32.self)
                    return StoredPolicy.Record(position: position, hash: load(UInt32.self))
                })
        }
        stored.queues = Array(lists[0 ..< 3])
        (stored.awaiting, stored.victims) = (lists[3], lists[4])
        stored.probationDraws = (0 ..< listCounts[1]).map { _ in load(UInt32.self) }
        stored.shadow = (0 ..< shadowCount).map { _ in
            let hash = load(UInt32.self)
            return StoredPolicy.ShadowKey(hash: hash, size: int())
        }
        stored.sketch = (0 ..< words).map { _ in load(UInt64.self) }
        return stored
    }
}

extension DiskIndex {
    /// The policy's state with the index's lists, each record named by `position(slot)`; `nil`
    /// under LRU.
    /// - Complexity: O(*n* + sketch words).
    func storedPolicy(position: (Int32) -> UInt32) -> StoredPolicy? {
        guard let policy else { return nil }
        var stored = policy.stored(position: position) { policyHash(ofSlot: $0) }
        stored.awaiting = awaitingAdmission.filter { awaitingSlots.contains($0) }.map {
            StoredPolicy.Record(position: position($0), hash: policyHash(ofSlot: $0))
        }
        stored.victims = policyVictims.filter { victimSlots.contains($0) }.map {
            StoredPolicy.Record(position: position($0), hash: policyHash(ofSlot: $0))
        }
        return stored
    }

    /// Restores the policy `stored` describes over a byte budget of `capacity`, its positions
    /// read as the slots of an index loaded from the snapshot that held it (``load(slots:arena:)``
    /// gives the entry at position *i* slot *i*), if it fits the index as it is: every record it
    /// names is there, unlocked, and has the key hash it names, and it places every unlocked
    /// record exactly once (in the policy, waiting for admission or among the victims).
    /// - Returns: Whether it was restored; when not, the index is as it was.
    /// - Complexity: O(*n* + sketch words).
    mutating func restorePolicy(_ stored: StoredPolicy, capacity: Int) -> Bool {
        func record(_ position: UInt32) -> (slot: Int32, size: Int, hash: UInt32)? {
            guard Int(position) < slots.count else { return nil }
            let s = slots[Int(position)]
            guard s.flags.contains(.occupied), s.lockCount == 0 else { return nil }
            let slot = Int32(position)
            return (slot, s.diskSize, policyHash(ofSlot: slot))
        }
        guard let restored = DiskAdaptivePolicy(restoring: stored, capacity: capacity, record: record) else { return false }
        var placed = Set<Int32>()
        func resolve(_ list: [StoredPolicy.Record]) -> [Int32]? {
            var resolved: [Int32] = []
            for stored in list {
                guard let (slot, _, hash) = record(stored.position), hash == stored.hash, !restored.contains(slot),
                    placed.insert(slot).inserted
                else { return nil }
                resolved.append(slot)
            }
            return resolved
        }
        guard let awaiting = resolve(stored.awaiting), let victims = resolve(stored.victims) else { return false }
        var unlocked = 0
        for s in slots where s.flags.contains(.occupied) && s.lockCount == 0 { unlocked += 1 }
        // Each record named resolved to a distinct unlocked one: as many as there are, they are all.
        guard restored.count + awaiting.count + victims.count == unlocked else { return false }
        policy = restored
        (awaitingAdmission, awaitingSlots) = (awaiting, Set(awaiting))
        (policyVictims, victimSlots) = (victims, Set(victims))
        return true
    }
}
