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
    /// Disk copies of remote hits are written here, off the read's path.
    let promotions: PromotionQueue
    private let subscription = LarderMutex<(any RemoteSubscription)?>(nil)

    final class Counters: Sendable {
        let hits = Atomic<Int>(0)
        let misses = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let skips = Atomic<Int>(0)
        let rejected = Atomic<Int>(0)
        let published = Atomic<Int>(0)
        let received = Atomic<Int>(0)
    }

    /// The circuit breaker: closed while calls succeed; open for a cool-down after
    /// `failureThreshold` failures in a row; then one caller probes with a ping.
    private struct Breaker {
        var failures = 0
        var openUntil: ContinuousClock.Instant?
        var probing = false
    }

    private enum Admission { case call, probe, skip }

    init(options: RemoteTierOptions) {
        self.options = options
        valuePrefix = options.namespace + ":v:"
        breaker = LarderMutex(Breaker())
        promotions = PromotionQueue(capacity: options.diskPromotionBacklog)
    }

    // MARK: - Keys

    /// `namespace:v:`, the start of every value's store key.
    private let valuePrefix: String

    /// The store key of a cache key's value.
    func valueKey(_ key: String) -> String { valuePrefix + key }
    /// The store key of a cache key's load lock.
    func lockKey(_ key: String) -> String { options.namespace + ":l:" + key }
    /// The invalidation channel.
    var channel: String { options.namespace + ":invalidations" }

    // MARK: - Calls

    /// Runs `body` against the store unless the breaker is open; `nil` when skipped or failed.
    func call<T>(_ operation: String, _ body: (any RemoteStore, RemoteTimeouts) throws(CacheError) -> T) -> T? {
        switch admit() {
        case .skip:
            counters.skips.add(1, ordering: .relaxed)
            return nil
        case .probe:
            do throws(CacheError) {
                try options.store.ping(timeouts: options.timeouts)
            } catch {
                fail(operation: "ping", error: error, probing: true)
                return nil
            }
            breaker.withLock {
                $0 = Breaker()
                tripped.store(false, ordering: .releasing)
            }
            report(.breakerClosed)
        case .call:
            break
        }
        do throws(CacheError) {
            let result = try body(options.store, options.timeouts)
            if tripped.load(ordering: .acquiring) {
                breaker.withLock { b in
                    b.failures = 0
                    tripped.store(b.openUntil != nil, ordering: .releasing)
                }
            }
            return result
        } catch {
            fail(operation: operation, error: error, probing: false)
            return nil
        }
    }

    private func admit() -> Admission {
        guard tripped.load(ordering: .acquiring) else { return .call }
        return breaker.withLock { b in
            guard let until = b.openUntil else { return .call }
            if b.probing || ContinuousClock.now < until { return .skip }
            b.probing = true
            return .probe
        }
    }

    private func fail(operation: String, error: CacheError, probing: Bool) {
        counters.failures.add(1, ordering: .relaxed)
        report(.failed(operation: operation, error: error))
        let cooldown = options.breakerCooldown
        let opened = breaker.withLock { b -> Bool in
            b.failures += 1
            b.probing = false
            tripped.store(true, ordering: .releasing)
            guard probing || (b.openUntil == nil && b.failures >= options.failureThreshold) else { return false }
            b.openUntil = ContinuousClock.now + .milliseconds(Int64(cooldown * 1000))
            return true
        }
        if opened { report(.breakerOpened(cooldown: cooldown)) }
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
    /// payload, a failure or an open breaker.
    func value(forKey key: String, now: Double) -> (data: Data, lifetime: Double)? {
        let storeKey = valueKey(key)
        guard let found = call("get", { (store, timeouts) throws(CacheError) in try store.value(forKey: storeKey, timeouts: timeouts) })
        else { return nil }
        return decode(found, forKey: key, now: now)
    }

    /// The values under `keys`, in one call to the store (Redis: `MGET`), as `value(forKey:now:)`
    /// reads one; all `nil` when the call fails or the breaker is open.
    func values(forKeys keys: [String], now: Double) -> [(data: Data, lifetime: Double)?] {
        let storeKeys = keys.map(valueKey)
        guard
            let found = call("get", { (store, timeouts) throws(CacheError) in try store.values(forKeys: storeKeys, timeouts: timeouts) }),
            found.count == keys.count
        else { return Array(repeating: nil, count: keys.count) }
        return zip(keys, found).map { key, stored in decode(stored, forKey: key, now: now) }
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
    /// publishes the key's invalidation. Ends the change the caller began (`generations.begin`);
    /// so do the removals below.
    func store(_ data: Data, forKey key: String, expiration: Double?, locked: Bool, now: Double) {
        let storeKey = valueKey(key)
        let milliseconds = expiration.map { max(1, Int64((($0 - now) * 1000).rounded(.down))) }
        let frame = RemotePayload.encode(data, expiryMilliseconds: expiration.map { Int64($0 * 1000) }, isLocked: locked)
        write {
            _ = self.call("set") { (store, timeouts) throws(CacheError) in
                try store.store(frame, forKey: storeKey, expiresIn: milliseconds, onlyIfAbsent: false, timeouts: timeouts)
            }
            self.generations.end(key)
            self.publish(.key(key))
        }
    }

    /// Removes `key`'s value, then publishes its invalidation.
    func remove(forKey key: String) {
        let storeKey = valueKey(key)
        write {
            _ = self.call("unlink") { (store, timeouts) throws(CacheError) in try store.remove(forKeys: [storeKey], timeouts: timeouts) }
            self.generations.end(key)
            self.publish(.key(key))
        }
    }

    /// Removes every value whose key starts with `prefix`, then publishes the prefix's invalidation.
    func remove(withPrefix prefix: String) {
        let storePrefix = valueKey(prefix)
        write {
            _ = self.call("scan-unlink") { (store, timeouts) throws(CacheError) in
                try store.remove(withPrefix: storePrefix, timeouts: timeouts)
            }
            self.generations.end(nil)
            self.publish(.prefix(prefix))
        }
    }

    /// Removes everything under the namespace (values and load locks), then publishes an
    /// invalidation of everything.
    func removeAll() {
        let namespace = options.namespace + ":"
        write {
            _ = self.call("scan-unlink") { (store, timeouts) throws(CacheError) in
                try store.remove(withPrefix: namespace, timeouts: timeouts)
            }
            self.generations.end(nil)
            self.publish(.all)
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

    private func publish(_ scope: RemoteInvalidation.Scope) {
        let message = RemoteInvalidation(sender: id, scope: scope).encoded
        let channel = self.channel
        let sent: Void? = call("publish") { (store, timeouts) throws(CacheError) in
            try store.publish(message, to: channel, timeouts: timeouts)
        }
        if sent != nil { counters.published.add(1, ordering: .relaxed) }
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

    /// Subscribes to the namespace's invalidations; `handler` gets the decoded ones from other
    /// instances and the connection changes.
    func subscribe(_ handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void) {
        let made = options.store.subscribe(to: channel, timeouts: options.timeouts, handler: handler)
        subscription.withLock { $0 = made }
    }

    /// Cancels the subscription and waits for the background writes.
    func close() {
        cancelSubscription()
        drainWrites()
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
/// was bumped since (checked under the key lock, in the same critical section as the promotion).
final class KeyGenerations: Sendable {
    private static let stripes = 256
    private struct Counts {
        var changes = [UInt64](repeating: 0, count: KeyGenerations.stripes)
        var writing = [Int](repeating: 0, count: KeyGenerations.stripes)
    }

    /// A key's change count when a read began, and the key's hash: what `allows` checks, and
    /// what the hybrid's key lock takes, without hashing the key again (a remote hit takes
    /// that lock and checks the count up to three times).
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
