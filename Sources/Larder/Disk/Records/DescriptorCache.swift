import Dispatch

/// Descriptors of often read record files, kept open so that a hit on a hot record costs one
/// `pread` (and, once per ``recheckInterval``, an `fstat`) instead of an open, a read and a close
/// (``DiskCacheOptions/maximumOpenFiles``).
///
/// Keyed by record file name (through its ``tag(_:)``, checked against the name kept in its slot)
/// and owned by one writable ``DiskCache``, which owns its folder. What keeps a kept descriptor right:
/// - The cache retires a name's descriptor under that name's key lock whenever it replaces or
///   removes the file (a store, an import, a removal, a collection, a corrupt or expired record),
///   so that no read, which holds the same lock, sees the file a change replaced. Header rewrites
///   in place (lock counts, access times) change the same inode, which a kept descriptor reads.
/// - A read proves the kept file's length unchanged (it asks one byte more than that length of
///   its `pread`), and, at most once per ``recheckInterval`` per descriptor, its link count
///   first (`fstat`): a file removed or renamed over behind the cache's back (the system purging
///   a caches folder) is read through its old descriptor for at most that long, then let go.
///   Only a change behind the cache's back, which breaks the contract of its directory lock,
///   sees that delay: the cache's own changes retire the descriptor first.
/// - A descriptor in use is lent, not handed over: retiring or evicting it while a read uses it
///   closes it when that read gives it back, never under it. Reads use `pread`, so readers of one
///   descriptor share no file offset.
///
/// Beside up to ``KeptPayloads/capacity`` bytes of its most read small records, the cache keeps
/// the record itself (``KeptRecord``, ``DiskCacheOptions/maximumPayloadMemory``), so that a hit
/// on one makes no system call. A kept record lives and dies with its descriptor (every
/// retirement above drops it too); it is served with no system call at all, since only this
/// instance writes the folder (its directory lock) and its own changes retire the record first.
///
/// The bound is soft under descriptor exhaustion: ``relieve()`` closes every idle descriptor and
/// halves the bound when an open fails with `EMFILE` or `ENFILE` (``FileIO`` calls it, then
/// retries the open once), and the bound grows back by one every ``regrowthInterval`` kept
/// descriptors.
package final class DescriptorCache: Sendable {
    /// A kept descriptor.
    private struct Entry {
        var fd: Int32
        /// Its place in ``State/slots``.
        var place: Int
        /// The place in ``State/payloads`` of its kept record, if any.
        var payloadPlace: Int?
    }

    /// A kept descriptor lent by ``borrow(_:hash:serving:)``.
    package struct Loan {
        /// The descriptor, to give back with ``giveBack(_:)``.
        package var fd: Int32
        /// Whether the read should check the file's link count (`fstat`) before reading it: its
        /// last check is ``DescriptorCache/recheckInterval`` old or more.
        package var needsCheck: Bool
    }

    /// What ``borrow(_:hash:serving:)`` found kept for a name.
    package enum Kept {
        /// The record kept beside the name's descriptor, which the borrower accepted. The
        /// descriptor stays with the cache: there is nothing to give back.
        case record(RecordContents)
        /// The descriptor, lent until ``giveBack(_:)``.
        case descriptor(Loan)
    }

    /// A kept descriptor's name and last use, in an array that eviction samples without hashing.
    private struct Slot {
        var name: String
        /// The value of ``State/tick`` at its last use: the smaller, the less recently used.
        var lastUse: UInt64
        var tag: UInt64
        /// When its file was last known to have a name: opened, or its link count checked
        /// (``DescriptorCache/now()``, nanoseconds).
        var checkedAt: UInt64
    }

    private struct State {
        /// The kept descriptors, by their names' ``DescriptorCache/tag(_:)``: a hash of 8 bytes
        /// instead of a name's 64, and no string to retain while probing. Each entry's slot holds
        /// its name, which a lookup compares; of two names with one tag (a 64-bit hash: in
        /// practice never), only the first is kept.
        var entries: [UInt64: Entry] = [:]
        /// The kept names with their last uses, in no order, for sampling victims in O(1).
        var slots: [Slot] = []
        /// Reads using each lent descriptor, kept or draining, by descriptor: a number stays
        /// unique while its descriptor is open, so giving one back hashes 4 bytes, not a name.
        var users: [Int32: Int] = [:]
        /// Descriptors retired or evicted while in use: closed by their last user.
        var draining: Set<Int32> = []
        var tick: UInt64 = 0
        /// The bound now: ``limit``, or less after descriptor exhaustion.
        var bound: Int
        /// Kept descriptors since the bound last grew or shrank.
        var keptSinceChange = 0
        /// Set by ``retireAll(closing:)`` when the cache closes: nothing is kept from then on.
        var isClosed = false
        /// xorshift64 state for picking eviction candidates.
        var random: UInt64 = 0x9E37_79B9_7F4A_7C15
        /// How often each name was read lately (through a kept descriptor or not): a count-min
        /// sketch, the one the memory tier's TinyLFU uses, halved every ``agingPeriod`` counted
        /// reads so that old popularity fades.
        var sketch: FrequencySketch
        /// Reads counted since the sketch was last halved.
        var counted = 0
        /// The records kept beside their descriptors.
        var payloads: KeptPayloads
    }

    /// The most descriptors kept (``DiskCacheOptions/maximumOpenFiles``).
    package let limit: Int
    private let closeCall: @Sendable (Int32) -> Int32
    private let state: LarderMutex<State>

    /// Candidates sampled per eviction; the least recently used of them goes (Redis's
    /// approximated LRU: O(1) per eviction, close to exact LRU at 8 samples).
    static let evictionSamples = 8
    /// Kept descriptors between two steps of regrowth after exhaustion shrank the bound.
    static let regrowthInterval = 16
    /// How many more reads than its victim a name needs to displace it. The sketch counts
    /// names that share counters together, so a cold name's count runs a read or two high: with
    /// a margin of 0 a loop over 20,000 records at a bound of 2,500 replaced a kept descriptor
    /// on 18 % of its reads (each an insertion, an eviction and a close), with 2 on 0.3 %, while
    /// Zipf(0.9) reads hit as often or more (simulated).
    static let admissionMargin = 2
    /// Counted reads between two halvings of the sketch: 10 × the bound, at least 640
    /// (Caffeine's sample size).
    let agingPeriod: Int

    /// The most bytes of records kept beside their descriptors (0: none).
    package let payloadCapacity: Int

    /// How long a kept descriptor is read without checking that its file still has a name
    /// (``DiskCacheOptions/keptFileRecheckInterval``), in nanoseconds; 0 checks on every read.
    ///
    /// The check (`fstat`) is the one system call a hit through a kept descriptor makes besides
    /// its `pread`, which on a 4 KiB record costs about as much; the cache's own changes never
    /// need it (they retire the descriptor first), so it only bounds how long a file removed or
    /// renamed over behind the cache's back is still read, or its space held.
    package let recheckInterval: UInt64

    /// A cache keeping up to `limit` descriptors, closed with `calls.close`, and beside them
    /// records of up to `payloadCapacity` bytes in all.
    package init(limit: Int, payloadCapacity: Int = 0, recheckInterval: Double = 0, calls: SystemCalls) {
        self.limit = max(0, limit)
        self.recheckInterval = recheckInterval.isFinite && recheckInterval > 0 ? UInt64(min(recheckInterval, 1e9) * 1e9) : 0
        closeCall = calls.close
        // 16 counters per kept descriptor (one word; 32 KiB at a bound of 4,096): with fewer,
        // names sharing counters let cold records displace kept ones.
        var sketch = FrequencySketch()
        sketch.ensureCapacity(max(1, limit))
        agingPeriod = max(640, 10 * limit)
        self.payloadCapacity = max(0, limit) == 0 ? 0 : max(0, payloadCapacity)
        state = LarderMutex(
            State(
                bound: max(0, limit), sketch: sketch,
                payloads: KeptPayloads(capacity: self.payloadCapacity)))
    }

    deinit {
        // No read is under way (each holds the cache): every descriptor left goes.
        let fds = state.withLock { s in Array(s.entries.values.map(\.fd)) + Array(s.draining) }
        for fd in fds { _ = closeCall(fd) }
    }

    /// The descriptor kept for `name`, lent to the caller until ``giveBack(_:)``; `nil` when none is kept.
    package func lend(_ name: String) -> Int32? {
        guard case .descriptor(let loan) = borrow(RecordName(name), hash: NameHash.of(name), serving: nil) else { return nil }
        return loan.fd
    }

    /// What is kept for `name`, whose ``NameHash`` is `hash`: the record kept beside its
    /// descriptor when it answers `serving` (``KeptRecord/answers(_:)``), else the descriptor,
    /// lent to the caller until ``giveBack(_:)``; `nil` when nothing is kept. One lookup of the
    /// name, under one lock: a hit on a kept record lends nothing, so it needs no second lock to
    /// give the descriptor back.
    /// - Parameter serving: The read the caller makes. A kept record that does not answer it is
    ///   dropped, since the read that follows reads the file again and may keep what it finds.
    ///   `nil`: the caller wants the descriptor alone, and any kept record stays.
    /// A read of a kept record needs no clock; one through a bare descriptor reads ``now()`` (a
    /// vDSO clock read, no system call) to see whether its check is due.
    package func borrow(_ name: RecordName, hash: UInt64, serving: KeptRecord.Read?) -> Kept? {
        let tag = Self.tag(hash: hash)
        return state.withLock { s in
            guard let entry = Self.entry(tag, name, in: s) else { return nil }
            count(tag, in: &s)
            s.tick &+= 1
            s.slots[entry.place].lastUse = s.tick
            if let place = entry.payloadPlace, let serving {
                if s.payloads.slots[place].record.answers(serving) {
                    s.payloads.use(at: place, tick: s.tick)
                    return .record(s.payloads.slots[place].record.contents)
                }
                Self.dropPayload(at: place, in: &s)
            }
            s.users[entry.fd, default: 0] += 1
            var needsCheck = true
            if recheckInterval > 0 {
                let now = Self.now()
                needsCheck = now &- s.slots[entry.place].checkedAt >= recheckInterval
                // The read checks now; should the check fail, the descriptor goes.
                if needsCheck { s.slots[entry.place].checkedAt = now }
            }
            return .descriptor(Loan(fd: entry.fd, needsCheck: needsCheck))
        }
    }

    /// A monotonic clock in nanoseconds, for ``recheckInterval``.
    static func now() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds
    }

    /// Keeps `record`, just read through `fd`, the descriptor kept for `name`, beside it, when
    /// it fits: at most ``KeptPayloads/largest`` bytes, and within the budget, if need be in
    /// place of kept records read less often (by ``admissionMargin``: TinyLFU's rule, over the
    /// same sketch as the descriptors'). Replaces a record kept for `name` before. Expects the
    /// key lock of `name` held, so that no change to the file ran since `record` was read.
    package func keepRecord(_ record: KeptRecord, readThrough fd: Int32, as name: String) {
        keepRecord(record, readThrough: fd, as: RecordName(name), hash: NameHash.of(name))
    }

    /// ``keepRecord(_:readThrough:as:)`` of a name whose ``NameHash`` is `hash`.
    package func keepRecord(_ record: KeptRecord, readThrough fd: Int32, as name: RecordName, hash: UInt64) {
        guard payloadCapacity > 0 else { return }
        let cost = KeptPayloads.cost(of: record)
        let tag = Self.tag(hash: hash)
        state.withLock { s in
            guard !s.isClosed, let entry = Self.entry(tag, name, in: s), entry.fd == fd else { return }
            if let place = entry.payloadPlace { Self.dropPayload(at: place, in: &s) }
            guard cost <= s.payloads.largest else { return }
            let frequency = Self.frequency(tag, in: s.sketch)
            while s.payloads.bytes + cost > s.payloads.capacity {
                guard !s.payloads.slots.isEmpty else { return }
                let victim = Self.payloadVictim(&s)
                guard frequency > Self.frequency(s.payloads.slots[victim].tag, in: s.sketch) + Self.admissionMargin else { return }
                Self.dropPayload(at: victim, in: &s)
            }
            s.tick &+= 1
            let place = s.payloads.append(.init(tag: tag, record: record, cost: cost, lastUse: s.tick))
            s.entries[tag]?.payloadPlace = place
        }
    }

    /// Gives back a descriptor ``lend(_:)`` lent; closes it when it was retired or evicted meanwhile
    /// and this was its last user.
    package func giveBack(_ fd: Int32) {
        let closes = state.withLock { s -> Bool in
            guard let users = s.users[fd] else { return false }
            if users > 1 {
                s.users[fd] = users - 1
                return false
            }
            s.users[fd] = nil
            // Retired or evicted while lent: this was its last user.
            return s.draining.remove(fd) != nil
        }
        if closes { _ = closeCall(fd) }
    }

    /// Keeps `fd`, just opened and read as record file `name`, for later reads, when `name` is
    /// read more often than what it would displace. Expects the key lock of `name` held, so that
    /// no change to the file ran since `fd` was opened.
    ///
    /// Admission is TinyLFU's, over a sketch of recent read counts (``State/sketch``): a name
    /// is kept from its second read within the sketch's memory, and once the bound is reached
    /// only when it was read more often (by ``admissionMargin``) than the least often read of a
    /// few sampled kept descriptors (the less recently used on a tie), which it then replaces. So records read
    /// once cost a sketch update instead of an insertion, an eviction and a close; loops over
    /// more records than the bound, which no bound of recency would serve, keep the first
    /// records they reached instead of churning; and under a skew the most read records hold
    /// the descriptors (over Zipf(0.9) reads of 20,000 records, 78 % of reads hit at a bound of
    /// 2,500 and 43 % at 256, against 61 % and 32 % for an exact LRU).
    /// - Returns: Whether the cache took `fd` (and will close it); when `false` the caller closes
    ///   it: `name` was read too rarely, the bound is 0, the cache is closed, or `name` already
    ///   has one.
    package func keep(_ fd: Int32, as name: String) -> Bool {
        keep(fd, as: RecordName(name), hash: NameHash.of(name))
    }

    /// ``keep(_:as:)`` of a name whose ``NameHash`` is `hash` (spelled out as a string only when
    /// its descriptor is kept).
    package func keep(_ fd: Int32, as name: RecordName, hash: UInt64) -> Bool {
        let tag = Self.tag(hash: hash)
        var evicted: [Int32] = []
        let kept = state.withLock { s -> Bool in
            count(tag, in: &s)
            let frequency = Self.frequency(tag, in: s.sketch)
            guard frequency >= 2 else { return false }
            // At a bound that no longer grows, the refusal below without the lookup of the tag:
            // most reads of a uniform load end here, and that lookup hashes the tag again.
            if s.bound == limit, s.entries.count == s.bound, frequency <= Self.admissionMargin { return false }
            // A name with a descriptor kept already, or (never, in practice) another name with its tag.
            guard !s.isClosed, s.entries[tag] == nil else { return false }
            if s.bound < limit {
                s.keptSinceChange += 1
                if s.keptSinceChange >= Self.regrowthInterval {
                    s.keptSinceChange = 0
                    s.bound += 1
                }
            }
            guard s.bound > 0 else { return false }
            // At the bound, a name no more often read than the margin displaces no one (a
            // victim's count is at least 0): no victim to sample. Most reads of a uniform load
            // over more records than the bound end here.
            if s.entries.count == s.bound, frequency <= Self.admissionMargin { return false }
            while s.entries.count >= s.bound {
                // After exhaustion halved the bound, more than one may have to go.
                let victim = Self.victim(&s)
                let victimFrequency = Self.frequency(s.slots[victim].tag, in: s.sketch)
                guard s.entries.count > s.bound || frequency > victimFrequency + Self.admissionMargin else {
                    return false
                }
                if let fd = Self.remove(tag: s.slots[victim].tag, from: &s) { evicted.append(fd) }
            }
            s.tick &+= 1
            s.entries[tag] = Entry(fd: fd, place: s.slots.count)
            s.slots.append(Slot(name: name.string, lastUse: s.tick, tag: tag, checkedAt: recheckInterval > 0 ? Self.now() : 0))
            return true
        }
        for fd in evicted { _ = closeCall(fd) }
        return kept
    }

    /// Stops keeping the descriptor of `name`, closing it now or, when a read uses it, when that
    /// read gives it back. Does nothing when none is kept.
    package func retire(_ name: String) {
        let tag = Self.tag(name)
        let closing = state.withLock { s -> Int32? in
            guard Self.entry(tag, name, in: s) != nil else { return nil }
            return Self.remove(tag: tag, from: &s)
        }
        if let closing { _ = closeCall(closing) }
    }

    /// Retires every descriptor (the folder was replaced); with `closing`, keeps none from then on.
    package func retireAll(closing: Bool = false) {
        let fds = state.withLock { s -> [Int32] in
            if closing { s.isClosed = true }
            var idle: [Int32] = []
            for slot in s.slots { if let fd = Self.remove(tag: slot.tag, from: &s) { idle.append(fd) } }
            return idle
        }
        for fd in fds { _ = closeCall(fd) }
    }

    /// Closes every idle descriptor and halves the bound, after an open failed with `EMFILE` or
    /// `ENFILE`. Descriptors in use stay until given back.
    /// - Returns: Whether a descriptor was closed or will be (so that retrying the open may succeed).
    package func relieve() -> Bool {
        let fds = state.withLock { s -> [Int32] in
            s.bound = s.entries.count / 2
            s.keptSinceChange = 0
            var idle: [Int32] = []
            for slot in s.slots {
                guard let fd = s.entries[slot.tag]?.fd, s.users[fd] == nil else { continue }
                if let fd = Self.remove(tag: slot.tag, from: &s) { idle.append(fd) }
            }
            return idle
        }
        for fd in fds { _ = closeCall(fd) }
        return !fds.isEmpty
    }

    /// Whether a descriptor is kept for `name` (tests).
    package func isKeeping(_ name: String) -> Bool {
        let tag = Self.tag(name)
        return state.withLock { Self.entry(tag, name, in: $0) != nil }
    }

    /// Whether a record is kept beside `name`'s descriptor (tests).
    package func isKeepingRecord(_ name: String) -> Bool {
        let tag = Self.tag(name)
        return state.withLock { Self.entry(tag, name, in: $0)?.payloadPlace != nil }
    }

    /// How many records are kept beside their descriptors, and their bytes (tests).
    package var recordCounts: (records: Int, bytes: Int) {
        state.withLock { s in (s.payloads.slots.count, s.payloads.bytes) }
    }

    /// How many descriptors are kept, and how many retired ones wait for their last user (tests).
    package var counts: (kept: Int, draining: Int, bound: Int) {
        state.withLock { s in (s.entries.count, s.draining.count, s.bound) }
    }

    /// The entry kept for `name`, whose tag is `tag`: the entry under that tag, when its slot
    /// holds that name.
    private static func entry(_ tag: UInt64, _ name: RecordName, in s: State) -> Entry? {
        guard let entry = s.entries[tag], name.spells(s.slots[entry.place].name) else { return nil }
        return entry
    }

    /// ``entry(_:_:in:)`` of a name given as text.
    private static func entry(_ tag: UInt64, _ name: String, in s: State) -> Entry? {
        entry(tag, RecordName(name), in: s)
    }

    /// Removes the entry tagged `tag`; returns its descriptor when nobody uses it (to close), else
    /// moves it to `draining`.
    private static func remove(tag: UInt64, from s: inout State) -> Int32? {
        guard let entry = s.entries.removeValue(forKey: tag) else { return nil }
        if let place = entry.payloadPlace, let moved = s.payloads.remove(at: place) {
            s.entries[moved]?.payloadPlace = place
        }
        let last = s.slots.removeLast()
        if entry.place < s.slots.count {
            s.slots[entry.place] = last
            s.entries[last.tag]!.place = entry.place
        }
        guard s.users[entry.fd] != nil else { return entry.fd }
        s.draining.insert(entry.fd)
        return nil
    }

    /// Drops the kept record at `place` in ``State/payloads``, keeping its descriptor.
    private static func dropPayload(at place: Int, in s: inout State) {
        s.entries[s.payloads.slots[place].tag]?.payloadPlace = nil
        if let moved = s.payloads.remove(at: place) { s.entries[moved]?.payloadPlace = place }
    }

    /// The place in ``State/payloads`` of the kept record to drop first: of a few sampled, the
    /// least often read, the less recently used on a tie.
    private static func payloadVictim(_ s: inout State) -> Int {
        var victim = 0
        var least = (count: Int.max, lastUse: UInt64.max)
        for _ in 0 ..< evictionSamples {
            let place = Int(nextRandom(&s) % UInt64(s.payloads.slots.count))
            let slot = s.payloads.slots[place]
            let candidate = (count: frequency(slot.tag, in: s.sketch), lastUse: slot.lastUse)
            if candidate < least {
                least = candidate
                victim = place
            }
        }
        return victim
    }

    /// The next xorshift64 draw.
    private static func nextRandom(_ s: inout State) -> UInt64 {
        s.random ^= s.random << 13
        s.random ^= s.random >> 7
        s.random ^= s.random << 17
        return s.random
    }

    /// A name's tag, the key of its entry and of its sketch counters: its ``NameHash`` (deterministic,
    /// unlike `hashValue`, so that which names share counters does not change from run to run),
    /// never 0.
    static func tag(_ name: String) -> UInt64 {
        tag(hash: NameHash.of(name))
    }

    /// ``tag(_:)`` of a name whose ``NameHash`` is `hash`.
    static func tag(hash: UInt64) -> UInt64 {
        hash == 0 ? 1 : hash
    }

    /// Counts a read of the name tagged `tag` in the sketch, halving every counter once
    /// ``agingPeriod`` reads were counted.
    private func count(_ tag: UInt64, in s: inout State) {
        s.sketch.increment(Self.sketchHash(tag))
        s.counted += 1
        if s.counted >= agingPeriod {
            s.counted = 0
            s.sketch.halve()
        }
    }

    /// How often the name tagged `tag` was read lately, as far as the sketch knows (never less).
    private static func frequency(_ tag: UInt64, in sketch: FrequencySketch) -> Int {
        sketch.frequency(sketchHash(tag))
    }

    /// The 32 bits of a tag the sketch hashes: both halves, folded.
    private static func sketchHash(_ tag: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: tag ^ (tag &>> 32))
    }

    /// The place in ``State/slots`` of the eviction candidate: of a few sampled kept
    /// descriptors, the least often read, the less recently used on a tie.
    private static func victim(_ s: inout State) -> Int {
        var victim = 0
        var least = (count: Int.max, lastUse: UInt64.max)
        for _ in 0 ..< evictionSamples {
            let place = Int(nextRandom(&s) % UInt64(s.slots.count))
            let candidate = (count: frequency(s.slots[place].tag, in: s.sketch), lastUse: s.slots[place].lastUse)
            if candidate < least {
                least = candidate
                victim = place
            }
        }
        return victim
    }
}
