import Dispatch
import Foundation
@testable import Larder

/// An in-memory ``RemoteStore`` for the remote tier's tests: time to live on a ``ManualClock``,
/// and faults on demand (every call failing, latency, lost messages, a dropped subscription).
final class FakeRemoteStore: RemoteStore {
    private struct Entry {
        var data: Data
        var expiresAt: Double?
    }

    private struct Subscriber {
        var id: Int
        var channel: String
        var handler: @Sendable (RemoteSubscriptionEvent) -> Void
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var subscribers: [Subscriber] = []
        var nextSubscriber = 0
        var failing = false
        var latency: Double = 0
        var dropsMessages = false
        var calls = 0
        var pings = 0
        var reportsTimeToLive = false
        var readAdvancesClock: Double = 0
        var pingGate: DispatchSemaphore?
        var pingsWaiting = 0
        var timeoutsGiven: [RemoteTimeouts] = []
    }

    private let state = LarderMutex(State())
    let clock: ManualClock
    /// Run by each `values(forKeys:timeouts:)` once it has found its values, before it returns
    /// them (with no lock of the store held): a change made while a batch read is under way.
    let afterBatchRead = LarderMutex<(@Sendable () -> Void)?>(nil)

    init(clock: ManualClock) {
        self.clock = clock
    }

    // MARK: - Faults and inspection

    /// Every call throws ``CacheError/Code/remoteFailure`` while set.
    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    /// Each call sleeps this long (at most the command timeout, then throws a timeout).
    var latency: Double {
        get { state.withLock { $0.latency } }
        set { state.withLock { $0.latency = newValue } }
    }

    /// Published messages are lost while set.
    var dropsMessages: Bool {
        get { state.withLock { $0.dropsMessages } }
        set { state.withLock { $0.dropsMessages = newValue } }
    }

    /// How far each read moves the shared clock on, after it has found its values: a read that
    /// takes this long in the caches' time.
    var readAdvancesClock: Double {
        get { state.withLock { $0.readAdvancesClock } }
        set { state.withLock { $0.readAdvancesClock = newValue } }
    }

    /// Whether reads say how long each value has left (Redis's store does not: `GET` alone).
    var reportsTimeToLive: Bool {
        get { state.withLock { $0.reportsTimeToLive } }
        set { state.withLock { $0.reportsTimeToLive = newValue } }
    }

    /// How long the value under `key` has left, in seconds; `nil` when it never expires or is missing.
    func timeToLive(_ key: String) -> Double? { state.withLock { $0.entries[key]?.expiresAt.map { $0 - clock.now } } }

    /// Holds every ping from now on (before it looks at ``failing``) until ``releasePings()``.
    func holdPings() { state.withLock { $0.pingGate = DispatchSemaphore(value: 0) } }

    /// Lets the held pings, and every later one, through.
    func releasePings() {
        let gate = state.withLock { s -> DispatchSemaphore? in
            defer { s.pingGate = nil }
            return s.pingGate
        }
        gate?.signal()
    }

    /// Pings held now, waiting for ``releasePings()``.
    var pingsWaiting: Int { state.withLock { $0.pingsWaiting } }

    /// The timeouts each call was given, in call order (pings included).
    var timeoutsGiven: [RemoteTimeouts] { state.withLock { $0.timeoutsGiven } }

    /// Calls made (pings included).
    var calls: Int { state.withLock { $0.calls } }
    /// Pings made.
    var pings: Int { state.withLock { $0.pings } }

    /// The raw bytes under `key`, or `nil`.
    func raw(_ key: String) -> Data? { state.withLock { $0.entries[key]?.data } }

    /// Puts raw bytes under `key`, as a foreign writer would.
    func put(_ data: Data, forKey key: String, milliseconds: Int64? = nil) {
        let expiresAt = milliseconds.map { clock.now + Double($0) / 1000 }
        state.withLock { $0.entries[key] = Entry(data: data, expiresAt: expiresAt) }
    }

    /// The live keys.
    var keys: [String] {
        let now = clock.now
        return state.withLock { $0.entries.filter { $0.value.expiresAt.map { $0 > now } ?? true }.map(\.key) }
    }

    /// Tells every subscriber the connection was lost, then that it is back.
    func dropSubscriptions() {
        let handlers = state.withLock { $0.subscribers.map(\.handler) }
        for handler in handlers { handler(.lost("dropped by the test")) }
        for handler in handlers { handler(.subscribed(afterReconnect: true)) }
    }

    // MARK: - RemoteStore

    private func enter(_ timeouts: RemoteTimeouts, ping: Bool = false) throws(CacheError) {
        if ping,
            let gate = state.withLock({ s -> DispatchSemaphore? in
                if s.pingGate != nil { s.pingsWaiting += 1 }
                return s.pingGate
            })
        {
            gate.wait()
            // Passed on, so that every held ping goes through.
            gate.signal()
            state.withLock { $0.pingsWaiting -= 1 }
        }
        let (failing, latency) = state.withLock { s in
            s.calls += 1
            if ping { s.pings += 1 }
            s.timeoutsGiven.append(timeouts)
            return (s.failing, s.latency)
        }
        if latency > 0 {
            Thread.sleep(forTimeInterval: min(latency, timeouts.command))
            if latency > timeouts.command { throw CacheError(.remoteFailure, "fake: timed out") }
        }
        if failing { throw CacheError(.remoteFailure, "fake: failing") }
    }

    func values(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) -> [RemoteValue?] {
        try enter(timeouts)
        let now = clock.now
        let advance = readAdvancesClock
        defer { if advance > 0 { clock.advance(by: advance) } }
        let found = state.withLock { s in
            keys.map { key -> RemoteValue? in
                guard let entry = s.entries[key] else { return nil }
                if let expiresAt = entry.expiresAt {
                    guard expiresAt > now else { return nil }
                    guard s.reportsTimeToLive else { return RemoteValue(data: entry.data, millisecondsToLive: nil) }
                    return RemoteValue(data: entry.data, millisecondsToLive: Int64(((expiresAt - now) * 1000).rounded(.down)))
                }
                return RemoteValue(data: entry.data, millisecondsToLive: nil)
            }
        }
        afterBatchRead.withLock { $0 }?()
        return found
    }

    func store(_ data: Data, forKey key: String, expiresIn milliseconds: Int64?, onlyIfAbsent: Bool, timeouts: RemoteTimeouts)
        throws(CacheError) -> Bool
    {
        try enter(timeouts)
        let now = clock.now
        return state.withLock { s in
            if onlyIfAbsent, let entry = s.entries[key], entry.expiresAt.map({ $0 > now }) ?? true { return false }
            s.entries[key] = Entry(data: data, expiresAt: milliseconds.map { now + Double($0) / 1000 })
            return true
        }
    }

    func touch(forKey key: String, expiresIn milliseconds: Int64?, timeouts: RemoteTimeouts) throws(CacheError) -> Bool {
        try enter(timeouts)
        let now = clock.now
        return state.withLock { s in
            guard let entry = s.entries[key], entry.expiresAt.map({ $0 > now }) ?? true else { return false }
            guard let milliseconds else {
                s.entries[key]?.expiresAt = nil
                return true
            }
            // PEXPIRE GT: never shortens; a value without expiry keeps none.
            let expiresAt = now + Double(milliseconds) / 1000
            guard let current = entry.expiresAt, expiresAt > current else { return false }
            s.entries[key]?.expiresAt = expiresAt
            return true
        }
    }

    func remove(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) {
        try enter(timeouts)
        state.withLock { s in for key in keys { s.entries[key] = nil } }
    }

    func remove(withPrefix prefix: String, timeouts: RemoteTimeouts) throws(CacheError) -> Int {
        try enter(timeouts)
        return state.withLock { s in
            let doomed = s.entries.keys.filter { $0.hasPrefix(prefix) }
            for key in doomed { s.entries[key] = nil }
            return doomed.count
        }
    }

    func publish(_ message: Data, to channel: String, timeouts: RemoteTimeouts) throws(CacheError) {
        try enter(timeouts)
        let handlers = state.withLock { s in s.dropsMessages ? [] : s.subscribers.filter { $0.channel == channel }.map(\.handler) }
        for handler in handlers { handler(.message(message)) }
    }

    func subscribe(
        to channel: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> any RemoteSubscription {
        let id = state.withLock { s in
            s.nextSubscriber += 1
            s.subscribers.append(Subscriber(id: s.nextSubscriber, channel: channel, handler: handler))
            return s.nextSubscriber
        }
        handler(.subscribed(afterReconnect: false))
        return FakeSubscription { [weak self] in self?.state.withLock { $0.subscribers.removeAll { $0.id == id } } }
    }

    func ping(timeouts: RemoteTimeouts) throws(CacheError) {
        try enter(timeouts, ping: true)
    }
}

/// The fake's subscription: cancelling removes the subscriber.
final class FakeSubscription: RemoteSubscription {
    private let onCancel: @Sendable () -> Void
    init(_ onCancel: @escaping @Sendable () -> Void) { self.onCancel = onCancel }
    func cancel() { onCancel() }
}

/// Events collected from a remote tier.
final class RemoteEventLog: Sendable {
    private let events = LarderMutex<[RemoteEvent]>([])
    var handler: @Sendable (RemoteEvent) -> Void { { [self] event in events.withLock { $0.append(event) } } }
    var all: [RemoteEvent] { events.withLock { $0 } }
    func count(_ matches: (RemoteEvent) -> Bool) -> Int { all.filter(matches).count }
}
