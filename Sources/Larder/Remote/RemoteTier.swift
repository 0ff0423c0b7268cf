import Dispatch
import Foundation
import Synchronization

/// A ``HybridCache``'s remote tier: the store behind a circuit breaker, the namespace's keys,
/// the counters, the background writes and the invalidation subscription.
///
/// Every call is fail-open: a failure is counted, reported and answered as a miss (or a write
/// not made); it is never thrown. Calls block on the store, so the hybrid makes them on its own
/// threads and outside its key locks.
final class RemoteTier: Sendable {
    let options: RemoteTierOptions
    /// This instance's id, carried by the invalidations it publishes.
    let id = UUID()
    let counters = Counters()
    /// Guards promotions of remote hits against local changes (see ``KeyGenerations``).
    let generations = KeyGenerations()
    private let breaker: LarderMutex<Breaker>
    /// Whether the breaker counts failures or is open: while it does not, a call and its success
    /// take no lock. Written under the breaker's lock; a call that reads a stale `false` is one
    /// that ran before the failure it did not see.
    private let tripped = Atomic<Bool>(false)
    /// Background writes run here, one at a time, in call order.
    private let writes = DispatchQueue(label: "larder.remote.writes", qos: .utility)
    /// The breaker's probes and the outbox's replays run here, off every caller's path.
    private let recovery = DispatchQueue(label: "larder.remote.recovery", qos: .utility)
    /// Disk copies of remote hits are written here, off the read's path.
    let promotions: PromotionQueue
    /// The stores and removals the store did not take, until they are replayed.
    let outbox: RemoteOutbox
    private let subscription = LarderMutex<(any RemoteSubscription)?>(nil)
    /// Whether every change of the store reaches this instance, so that a remote hit may be kept
    /// in the local tiers: always with pub/sub (whose misses the local lifetime cap bounds);
    /// with tracking, only while the tracking connection is up and tracking.
    private let tracksChanges: Atomic<Bool>
    private let background = LarderMutex(Background())

    final class Counters: Sendable {
        let hits = Atomic<Int>(0)
        let misses = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let skips = Atomic<Int>(0)
        let rejected = Atomic<Int>(0)
        let published = Atomic<Int>(0)
        let received = Atomic<Int>(0)
        /// Pings sent by the breaker's probes (tests).
        let probes = Atomic<Int>(0)
        /// Outbox replays that left the outbox empty (tests).
        let replays = Atomic<Int>(0)
    }

    /// The circuit breaker: closed while calls succeed; open after `failureThreshold` failures in
    /// a row, skipping every call, while a probe on the recovery queue pings the store every
    /// cool-down until it answers.
    private struct Breaker {
        var failures = 0
        var isOpen = false
    }

    /// The state of the recovery queue's work.
    private struct Background {
        /// Whether a replay of the outbox is queued and not yet started.
        var replayQueued = false
        /// Whether the tier was closed: no probe or replay starts after.
        var isClosed = false
    }

    private enum Admission { case call, skip }

    /// Creates the tier; its outbox is the file at `outboxPath` (`nil`: in memory only; written
    /// only when `writesOutbox`), and a replay of what it holds starts at once in the background.
    init(options: RemoteTierOptions, outboxPath: String? = nil, io: FileIO? = nil, writesOutbox: Bool = true) {
        self.options = options
        valuePrefix = options.namespace + ":v:"
        tracksChanges = Atomic(options.invalidation == .publishSubscribe)
        breaker = LarderMutex(Breaker())
        promotions = PromotionQueue(capacity: options.diskPromotionBacklog)
        outbox = RemoteOutbox(namespace: options.namespace, path: outboxPath, io: io, writesFile: writesOutbox)
        if let problem = outbox.loadProblem { report(.failed(operation: "outbox", error: problem)) }
        if !outbox.isEmpty { scheduleReplay(after: 0) }
    }

    // MARK: - Keys

    /// `namespace:v:`, the start of every value's store key.
    private let valuePrefix: String

    /// The store key of a cache key's value, built in one allocation of its final size (a batch
    /// read builds one per key).
    func valueKey(_ key: String) -> String {
        var name = String()
        name.reserveCapacity(valuePrefix.utf8.count + key.utf8.count)
        name.append(valuePrefix)
        name.append(key)
        return name
    }
    /// The store key of a cache key's load lock.
    func lockKey(_ key: String) -> String { options.namespace + ":l:" + key }
    /// The invalidation channel.
    var channel: String { options.namespace + ":invalidations" }

    // MARK: - Calls

    /// The end of a call's budget: the command timeout from now. Every command the call sends
    /// (a `SET` and its `PUBLISH`) shares it.
    func deadline() -> ContinuousClock.Instant {
        .now + .nanoseconds(Int64(options.commandTimeout * 1e9))
    }

    /// Runs `body` against the store, with what is left of the budget ending at `deadline`,
    /// unless the breaker is open or the budget is spent; `nil` when skipped or failed.
    func call<T>(
        _ operation: String, deadline: ContinuousClock.Instant, _ body: (any RemoteStore, RemoteTimeouts) throws(CacheError) -> T
    ) -> T? {
        if admit() == .skip {
            counters.skips.add(1, ordering: .relaxed)
            return nil
        }
        // An earlier command of the same call spent the budget (its failure was counted). A
        // store may end a wait up to a millisecond before its deadline (it sets its socket's
        // timeout only when that is off by more), so what is left then is no budget.
        return perform(operation, budget: Self.seconds(deadline - .now), body)
    }

    /// ``call(_:deadline:_:)`` with a budget of its own: the whole command timeout, from now.
    /// A call of one command (a read) needs no deadline to know what is left of it, so it reads
    /// no clock here (the store reads its own, once, to end its waits).
    func call<T>(_ operation: String, _ body: (any RemoteStore, RemoteTimeouts) throws(CacheError) -> T) -> T? {
        if admit() == .skip {
            counters.skips.add(1, ordering: .relaxed)
            return nil
        }
        return perform(operation, budget: options.commandTimeout, body)
    }

    /// Runs `body` with `budget` seconds, unless that is no budget; counts a failure, and a
    /// success after failures closes the breaker's count.
    private func perform<T>(
        _ operation: String, budget left: Double, _ body: (any RemoteStore, RemoteTimeouts) throws(CacheError) -> T
    ) -> T? {
        guard left > Self.leastBudget else { return nil }
        do throws(CacheError) {
            let result = try body(options.store, RemoteTimeouts(connect: options.connectTimeout, command: left))
            if tripped.load(ordering: .acquiring) {
                breaker.withLock { b in
                    b.failures = 0
                    tripped.store(b.isOpen, ordering: .releasing)
                }
            }
            return result
        } catch {
            fail(operation: operation, error: error, probing: false)
            return nil
        }
    }

    /// Less time than this left of a call's budget sends no further command.
    static let leastBudget = 0.002

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    private func admit() -> Admission {
        guard tripped.load(ordering: .acquiring) else { return .call }
        return breaker.withLock { $0.isOpen ? .skip : .call }
    }

    private func fail(operation: String, error: CacheError, probing: Bool) {
        counters.failures.add(1, ordering: .relaxed)
        report(.failed(operation: operation, error: error))
        let opened = breaker.withLock { b -> Bool in
            b.failures += 1
            tripped.store(true, ordering: .releasing)
            // A failed probe keeps the breaker open and its probes going; otherwise the breaker
            // opens once, and one chain of probes starts.
            if probing { return true }
            guard !b.isOpen, b.failures >= options.failureThreshold else { return false }
            b.isOpen = true
            return true
        }
        guard opened else { return }
        report(.breakerOpened(cooldown: options.breakerCooldown))
        recovery.asyncAfter(deadline: .now() + options.breakerCooldown) { [weak self] in self?.probe() }
    }

    /// Pings the store, on the recovery queue: an answer closes the breaker and replays the
    /// outbox; a failure waits another cool-down. The ping may wait for a new connection, up to
    /// the connect timeout, and for its answer: no caller waits for it.
    private func probe() {
        guard !background.withLock({ $0.isClosed }) else { return }
        counters.probes.add(1, ordering: .relaxed)
        let timeouts = RemoteTimeouts(connect: options.connectTimeout, command: options.connectTimeout + options.commandTimeout)
        do throws(CacheError) {
            try options.store.ping(timeouts: timeouts)
        } catch {
            fail(operation: "ping", error: error, probing: true)
            return
        }
        breaker.withLock {
            $0 = Breaker()
            tripped.store(false, ordering: .releasing)
        }
        report(.breakerClosed)
        replay()
    }

    /// Runs `work` now (write-through) or on the background queue, in call order.
    func write(_ work: @escaping @Sendable () -> Void) {
        switch options.writeMode {
        case .writeThrough: work()
        case .background: writes.async(execute: work)
        }
    }

    /// Waits for the background writes and promotions queued so far.
    func drainWrites() {
        writes.sync {}
        promotions.wait()
    }

    // MARK: - Reading

    /// The value under `key` and how long it may live locally (the store's time to live, the
    /// writer's expiry and the local cap, whichever ends first); `nil` on a miss, a rejected
    /// payload, a failure, an open breaker, or a key the outbox covers (the store may hold an
    /// older value than this instance wrote).
    func value(forKey key: String, now: Double) -> (data: Data, lifetime: Double)? {
        if outbox.covers(key) {
            counters.skips.add(1, ordering: .relaxed)
            return nil
        }
        let storeKey = valueKey(key)
        guard let found = call("get", { (store, timeouts) throws(CacheError) in try store.value(forKey: storeKey, timeouts: timeouts) })
        else { return nil }
        return decode(found, forKey: key, now: now)
    }

    /// The values under `keys`, in one call to the store (Redis: `MGET`), as `value(forKey:now:)`
    /// reads one; all `nil` when the call fails or the breaker is open. Keys the outbox covers
    /// are not asked.
    func values(forKeys keys: [String], now: Double) -> [(data: Data, lifetime: Double)?] {
        var asked = keys
        var positions: [Int]?
        if !outbox.isEmpty {
            let indices = keys.indices.filter { !outbox.covers(keys[$0]) }
            counters.skips.add(keys.count - indices.count, ordering: .relaxed)
            asked = indices.map { keys[$0] }
            positions = indices
        }
        var result = [(data: Data, lifetime: Double)?](repeating: nil, count: keys.count)
        guard !asked.isEmpty else { return result }
        let storeKeys = asked.map(valueKey)
        guard
            let found = call("get", { (store, timeouts) throws(CacheError) in try store.values(forKeys: storeKeys, timeouts: timeouts) }),
            found.count == asked.count
        else { return result }
        for (offset, stored) in found.enumerated() {
            let index = positions?[offset] ?? offset
            result[index] = decode(stored, forKey: keys[index], now: now)
        }
        return result
    }

    private func decode(_ stored: RemoteValue?, forKey key: String, now: Double) -> (data: Data, lifetime: Double)? {
        guard let stored else {
            counters.misses.add(1, ordering: .relaxed)
            return nil
        }
        guard let frame = RemotePayload.decode(stored.data) else {
            counters.rejected.add(1, ordering: .relaxed)
            counters.misses.add(1, ordering: .relaxed)
            report(.payloadRejected(key: key))
            return nil
        }
        // The header's expiry is the writer's (locked entries included: the lock is local); the
        // store's lifetime is never shorter (`touch` only lengthens it). A value whose header
        // expiry has passed but which `touch` kept alive is served and not copied.
        var lifetime = options.localLifetimeCap
        if let ttl = stored.millisecondsToLive { lifetime = min(lifetime, Double(ttl) / 1000) }
        if let expiry = frame.expiryMilliseconds { lifetime = min(lifetime, Double(expiry) / 1000 - now) }
        counters.hits.add(1, ordering: .relaxed)
        return (frame.data, lifetime)
    }

    // MARK: - Writing

    /// Stores `data` framed, expiring at `expiration` (seconds since 1970, `nil` for never), then
    /// publishes the key's invalidation, both within one budget. When either does not happen,
    /// the key goes to the outbox before the write ends. Ends the change the caller began
    /// (`generations.begin`); so do the removals below.
    func store(_ data: Data, forKey key: String, expiration: Double?, locked: Bool, now: Double) {
        let storeKey = valueKey(key)
        let milliseconds = expiration.map { max(1, Int64((($0 - now) * 1000).rounded(.down))) }
        let frame = RemotePayload.encode(data, expiryMilliseconds: expiration.map { Int64($0 * 1000) }, isLocked: locked)
        write {
            let deadline = self.deadline()
            let stored: Bool? = self.call("set", deadline: deadline) { (store, timeouts) throws(CacheError) in
                try store.store(frame, forKey: storeKey, expiresIn: milliseconds, onlyIfAbsent: false, timeouts: timeouts)
            }
            let published = self.publish(.key(key), deadline: deadline)
            self.settle(.key(key), taken: stored != nil && published)
            self.generations.end(key)
        }
    }

    /// Removes `key`'s value, then publishes its invalidation, within one budget (the outbox
    /// keeps the key when either does not happen).
    func remove(forKey key: String) {
        let storeKey = valueKey(key)
        write {
            let deadline = self.deadline()
            let removed: Void? = self.call("unlink", deadline: deadline) { (store, timeouts) throws(CacheError) in
                try store.remove(forKeys: [storeKey], timeouts: timeouts)
            }
            let published = self.publish(.key(key), deadline: deadline)
            self.settle(.key(key), taken: removed != nil && published)
            self.generations.end(key)
        }
    }

    /// Removes every value whose key starts with `prefix`, then publishes the prefix's
    /// invalidation (the outbox keeps the prefix when either does not happen).
    func remove(withPrefix prefix: String) {
        let storePrefix = valueKey(prefix)
        write {
            let deadline = self.deadline()
            let removed = self.call("scan-unlink", deadline: deadline) { (store, timeouts) throws(CacheError) in
                try store.remove(withPrefix: storePrefix, timeouts: timeouts)
            }
            let published = self.publish(.prefix(prefix), deadline: deadline)
            self.settle(.prefix(prefix), taken: removed != nil && published)
            self.generations.end(nil)
        }
    }

    /// Removes everything under the namespace (values and load locks), then publishes an
    /// invalidation of everything (the outbox then covers every key when either does not happen).
    func removeAll() {
        let namespace = options.namespace + ":"
        write {
            let deadline = self.deadline()
            let removed = self.call("scan-unlink", deadline: deadline) { (store, timeouts) throws(CacheError) in
                try store.remove(withPrefix: namespace, timeouts: timeouts)
            }
            let published = self.publish(.all, deadline: deadline)
            self.settle(nil, taken: removed != nil && published)
            self.generations.end(nil)
        }
    }

    /// Gives `key`'s value a new expiry, `expiration` (seconds since 1970, `nil` for never).
    func touch(forKey key: String, expiration: Double?, now: Double) {
        let storeKey = valueKey(key)
        let milliseconds = expiration.map { max(1, Int64((($0 - now) * 1000).rounded(.down))) }
        write {
            _ = self.call("pexpire") { (store, timeouts) throws(CacheError) in
                try store.touch(forKey: storeKey, expiresIn: milliseconds, timeouts: timeouts)
            }
        }
    }

    /// Publishes `scope`'s invalidation with what is left of the budget ending at `deadline`.
    /// - Returns: Whether the store took it.
    private func publish(_ scope: RemoteInvalidation.Scope, deadline: ContinuousClock.Instant) -> Bool {
        let message = RemoteInvalidation(sender: id, scope: scope).encoded
        let channel = self.channel
        let sent: Void? = call("publish", deadline: deadline) { (store, timeouts) throws(CacheError) in
            try store.publish(message, to: channel, timeouts: timeouts)
        }
        if sent != nil { counters.published.add(1, ordering: .relaxed) }
        return sent != nil
    }

    /// After a store or removal of `scope` (`nil`: everything): forgets a key's outbox entry when
    /// the store took the change and its invalidation, else adds the entry (written to the file
    /// before this returns) and queues a replay.
    private func settle(_ scope: RemoteOutbox.Scope?, taken: Bool) {
        if taken {
            if case .key(let key)? = scope { outbox.confirm(key) }
            return
        }
        outbox.add(scope)
        // An open breaker's probe replays once the store answers; otherwise a later try does.
        if !breaker.withLock({ $0.isOpen }) { scheduleReplay(after: options.breakerCooldown) }
    }

    // MARK: - Outbox replay

    /// Queues a replay of the outbox on the recovery queue, `delay` seconds from now, unless one
    /// is queued already.
    private func scheduleReplay(after delay: Double) {
        let queued = background.withLock { b -> Bool in
            guard !b.replayQueued, !b.isClosed else { return false }
            b.replayQueued = true
            return true
        }
        guard queued else { return }
        recovery.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            background.withLock { $0.replayQueued = false }
            replay()
        }
    }

    /// Replays the outbox: removes each entry's values from the store and publishes its
    /// invalidation, then forgets the entries that went through (unless added again meanwhile).
    /// Runs on the recovery queue. What is left is tried again after a cool-down, or after the
    /// probe that closes the breaker.
    private func replay() {
        guard !outbox.isEmpty, !background.withLock({ $0.isClosed }), !breaker.withLock({ $0.isOpen }) else { return }
        let entries = outbox.entries
        var done = RemoteOutbox.Entries()
        if let everything = entries.everything {
            let prefix = valueKey("")
            let deadline = self.deadline()
            let removed = call("scan-unlink", deadline: deadline) { (store, timeouts) throws(CacheError) in
                try store.remove(withPrefix: prefix, timeouts: timeouts)
            }
            if removed != nil, publish(.all, deadline: deadline) { done.everything = everything }
        }
        var keys: [(key: String, sequence: UInt64)] = []
        for (scope, sequence) in entries.scopes {
            switch scope {
            case .key(let key): keys.append((key, sequence))
            case .prefix(let prefix):
                let storePrefix = valueKey(prefix)
                let deadline = self.deadline()
                let removed = call("scan-unlink", deadline: deadline) { (store, timeouts) throws(CacheError) in
                    try store.remove(withPrefix: storePrefix, timeouts: timeouts)
                }
                if removed != nil, publish(.prefix(prefix), deadline: deadline) { done.scopes[scope] = sequence }
            }
        }
        var start = 0
        while start < keys.count {
            let batch = keys[start ..< min(start + 256, keys.count)]
            start = batch.endIndex
            let storeKeys = batch.map { valueKey($0.key) }
            let removed: Void? = call("unlink") { (store, timeouts) throws(CacheError) in
                try store.remove(forKeys: storeKeys, timeouts: timeouts)
            }
            guard removed != nil else { break }
            for (key, sequence) in batch where publish(.key(key), deadline: deadline()) { done.scopes[.key(key)] = sequence }
        }
        outbox.settle(done)
        if outbox.isEmpty {
            counters.replays.add(1, ordering: .relaxed)
        } else {
            scheduleReplay(after: options.breakerCooldown)
        }
    }

    // MARK: - Load locks

    /// Takes `key`'s load lock (`SET NX PX`). `true` also when the store cannot be asked: the
    /// caller then loads by itself, as without a remote tier.
    func acquireLoadLock(forKey key: String) -> Bool {
        let storeKey = lockKey(key)
        let milliseconds = Int64(options.loadLockLifetime * 1000)
        let token = Data(id.uuidString.utf8)
        return call("set-nx") { (store, timeouts) throws(CacheError) in
            try store.store(token, forKey: storeKey, expiresIn: milliseconds, onlyIfAbsent: true, timeouts: timeouts)
        } ?? true
    }

    /// Frees `key`'s load lock, after the value's store (in call order with background writes).
    func releaseLoadLock(forKey key: String) {
        let storeKey = lockKey(key)
        write {
            _ = self.call("unlink") { (store, timeouts) throws(CacheError) in try store.remove(forKeys: [storeKey], timeouts: timeouts) }
        }
    }

    // MARK: - Subscription

    /// Subscribes to the namespace's invalidations (or, with tracking, to the changes of its
    /// values); `handler` gets the messages, the changes and the connection changes.
    func subscribe(_ handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void) {
        let made: (any RemoteSubscription)?
        switch options.invalidation {
        case .publishSubscribe:
            made = options.store.subscribe(to: channel, timeouts: options.timeouts, handler: handler)
        case .tracking:
            made = options.store.trackChanges(ofKeysWithPrefix: valuePrefix, timeouts: options.timeouts, handler: handler)
        }
        subscription.withLock { $0 = made }
    }

    /// Whether a remote hit may be kept in the local tiers now (see `tracksChanges`).
    var keepsRemoteHits: Bool { tracksChanges.load(ordering: .acquiring) }

    /// Records whether changes are tracked; returns whether they were. A pub/sub tier always
    /// keeps remote hits, whatever this is told.
    @discardableResult
    func setTracking(_ tracking: Bool) -> Bool {
        guard options.invalidation == .tracking else { return true }
        return tracksChanges.exchange(tracking, ordering: .acquiringAndReleasing)
    }

    /// The cache's key for the store key `storeKey` of a value, or `nil` for another key.
    func cacheKey(ofStoreKey storeKey: String) -> String? {
        guard storeKey.hasPrefix(valuePrefix) else { return nil }
        return String(storeKey.dropFirst(valuePrefix.count))
    }

    /// Cancels the subscription, stops the probes and replays (the outbox file keeps what is
    /// left for the next open) and waits for the background writes.
    func close() {
        background.withLock { $0.isClosed = true }
        cancelSubscription()
        drainWrites()
        // A probe or replay running now ends within its timeouts; none starts after.
        recovery.sync {}
    }

    /// Cancels the subscription. Harmless when there is none.
    func cancelSubscription() {
        let current = subscription.withLock { s -> (any RemoteSubscription)? in
            defer { s = nil }
            return s
        }
        current?.cancel()
    }

    func report(_ event: RemoteEvent) {
        options.eventHandler?(event)
    }
}

/// What keeps a remote hit, fetched outside the key lock, from being promoted over a newer local
/// change: a change count and a count of remote writes in progress, per stripe of keys.
///
/// A store or removal calls `begin` before it changes the local tiers and `end` once the remote
/// write is done; a received invalidation calls `bump`. A reader takes a `snapshot` before it asks
/// the remote tier and promotes what it got only when `allows` says that nothing began, ended or
/// was bumped since, checked in the same critical section as the copy it allows: under the memory
/// tier's lock for a memory copy, under the key lock for a disk copy.
final class KeyGenerations: Sendable {
    private static let stripes = 256
    private struct Counts {
        var changes = [UInt64](repeating: 0, count: KeyGenerations.stripes)
        var writing = [Int](repeating: 0, count: KeyGenerations.stripes)
    }

    /// A key's change count when a read began, and the key's hash: what `allows` checks, and
    /// what the hybrid's key lock takes, without hashing the key again (a remote hit checks the
    /// count up to three times, and its disk copy takes that lock).
    struct Snapshot: Sendable {
        /// The key's ``StripedLock/hash(ofKey:)``.
        let keyHash: Int
        fileprivate let changes: UInt64

        fileprivate var stripe: Int { KeyGenerations.stripe(ofHash: keyHash) }
    }

    private let counts = LarderMutex(Counts())

    private static func stripe(ofHash hash: Int) -> Int {
        Int(UInt(bitPattern: hash) % UInt(stripes))
    }

    /// The key's change count, to hand to `allows` later.
    func snapshot(_ key: String) -> Snapshot {
        snapshot(keyHash: StripedLock.hash(ofKey: key))
    }

    /// The change count of the key whose ``StripedLock/hash(ofKey:)`` is `keyHash`.
    func snapshot(keyHash: Int) -> Snapshot {
        let index = Self.stripe(ofHash: keyHash)
        return Snapshot(keyHash: keyHash, changes: counts.withLock { $0.changes[index] })
    }

    /// Whether nothing changed the stripe of the snapshot's key since it was taken and no remote
    /// write is in progress there.
    func allows(_ snapshot: Snapshot) -> Bool {
        counts.withLock { $0.changes[snapshot.stripe] == snapshot.changes && $0.writing[snapshot.stripe] == 0 }
    }

    /// A local change of `key` (nil: of every key) that the remote tier does not follow.
    func bump(_ key: String?) {
        change(key) { $0.changes[$1] &+= 1 }
    }

    /// A store or removal of `key` (nil: of every key) begins; its remote write follows.
    func begin(_ key: String?) {
        change(key) {
            $0.changes[$1] &+= 1
            $0.writing[$1] += 1
        }
    }

    /// The remote write of a change begun with `begin(key)` is done (or failed).
    func end(_ key: String?) {
        change(key) {
            $0.changes[$1] &+= 1
            $0.writing[$1] -= 1
        }
    }

    private func change(_ key: String?, _ body: (inout Counts, Int) -> Void) {
        guard let key else {
            return counts.withLock { counts in
                for index in 0 ..< Self.stripes { body(&counts, index) }
            }
        }
        let index = Self.stripe(ofHash: StripedLock.hash(ofKey: key))
        counts.withLock { body(&$0, index) }
    }
}
