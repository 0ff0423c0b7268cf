import Dispatch
import Foundation
import Larder
import Synchronization

/// The changes under one prefix on a whole Redis Cluster: a tracking connection
/// (``RedisTrackingSubscription``, `CLIENT TRACKING on BCAST PREFIX`) per master, reported to one
/// handler as if they were one connection.
///
/// Each master reports the changes of the keys it serves, so every master is tracked. Broadcast
/// mode, as on a single server: the values are read on the store's pooled connections, not on
/// the tracking ones, and in the default mode a server reports only the keys read on the
/// connection that tracks (or one that redirects to it, `REDIRECT`, which each pooled
/// connection would have to set up, per master, again after every reconnect). Broadcast reports
/// every change under the prefix, whoever read or wrote it.
///
/// The handler sees ``RemoteSubscriptionEvent/subscribed(afterReconnect:)`` when every master it
/// knows tracks, and ``RemoteSubscriptionEvent/lost(_:)`` as soon as one of them does not: its
/// connection ended, or a master joined that is not tracked yet (a replica promoted, a node that
/// took slots). A loss anywhere stands for all: the handler cannot tell which of its copies came
/// from which master, so it drops them all, which covers the slots the lost master served.
///
/// The masters come from the store's slot map: each reload of the map reconciles them before
/// any call is routed by it, and a redirection to a node not tracked yet has the loss handled
/// before the redirected command is sent, so a value read from a master that is not tracked is
/// never kept as if it were. That handling (the cache empties its local tiers) runs on a
/// background thread, not the caller's: the redirected call waits for it only within its own
/// budget, and sends nothing when the budget ends first. A lost master makes the store reload its map (after each failed
/// reconnect, so at least once a second while it stays lost); a master that left the map and is
/// not tracked is dropped.
final class RedisClusterTracking: RemoteSubscription {
    private struct Master {
        /// Tells this connection's events from those of an earlier one to the same address.
        let id: Int
        let subscription: RedisTrackingSubscription
        var tracks = false
        /// The number of the loss reported when this master joined untracked, or `nil` when
        /// none was: a command redirected here waits until that event is handled.
        var loss: Int?
    }

    private struct State {
        var masters: [String: Master] = [:]
        var nextID = 0
        var cancelled = false
        /// Whether every master tracked at once, at least once.
        var listened = false
        /// Whether a master was lost or joined untracked since every master last tracked: the
        /// next time they all track, changes may have been missed in between.
        var missed = false
        /// Whether a reload of the map is scheduled because none answered yet.
        var retryScheduled = false
        var retryPause = 0.05
        /// The number of the last loss queued.
        var lastLoss: Int?
        /// Events decided under the lock, in order, waiting for ``deliverPending()``.
        var pending: [RemoteSubscriptionEvent] = []
        /// How many events were ever queued, and how many of them the handler returned from
        /// (or were dropped by a cancel): event number `n` is handled once `handled >= n`.
        var queued = 0
        var handled = 0
        /// Calls waiting for an event to be handled: each is signalled once `handled` reaches its number.
        var waiters: [(event: Int, semaphore: DispatchSemaphore)] = []

        /// Queues `event` for the handler; returns its number.
        @discardableResult
        mutating func enqueue(_ event: RemoteSubscriptionEvent) -> Int {
            pending.append(event)
            queued += 1
            return queued
        }

        /// Records that `count` more events were handled (or dropped) and wakes the calls
        /// waiting for them.
        mutating func markHandled(_ count: Int) {
            handled += count
            waiters.removeAll { waiter in
                guard waiter.event <= handled else { return false }
                waiter.semaphore.signal()
                return true
            }
        }
    }

    private let state = Mutex(State())
    /// Held while events are handed to the handler: one at a time, in the order they were
    /// decided, and never under ``state``'s lock, so that ``cancel()`` never waits for a handler.
    private let delivery = Mutex(())
    private let store: RedisClusterStore
    private let prefix: String
    private let timeouts: RemoteTimeouts
    private let handler: @Sendable (RemoteSubscriptionEvent) -> Void

    init(
        store: RedisClusterStore, prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) {
        self.store = store
        self.prefix = prefix
        self.timeouts = timeouts
        self.handler = handler
    }

    func cancel() {
        let subscriptions = state.withLock { state -> [RedisTrackingSubscription] in
            state.cancelled = true
            state.markHandled(state.queued - state.handled)
            defer { state.masters.removeAll() }
            return state.masters.values.map(\.subscription)
        }
        for subscription in subscriptions { subscription.cancel() }
        store.stopTracking(self)
    }

    /// Tracks every master of `masters` not tracked yet, and stops tracking those that left the
    /// map and do not track (a killed master; one that still tracks is harmless and kept, and
    /// goes once its connection ends). A master that joins after every master tracked is a
    /// loss until it tracks: reported before this returns.
    func reconcile(masters: [String]) {
        let stopped = state.withLock { state -> [RedisTrackingSubscription] in
            guard !state.cancelled else { return [] }
            state.retryPause = 0.05
            for address in masters { track(address, &state) }
            let gone = state.masters.filter { !masters.contains($0.key) && !$0.value.tracks }
            for address in gone.keys { state.masters[address] = nil }
            deliverIfEveryMasterTracks(&state)
            return gone.values.map(\.subscription)
        }
        for subscription in stopped { subscription.cancel() }
        deliverPending()
    }

    /// Tracks the node at `address`, to which a command is about to be redirected, unless it is
    /// tracked already, and waits within `budget` until the loss reported when it joined
    /// untracked (now or by an earlier call) is handled, so that nothing read from it is kept
    /// as if its changes were tracked. The loss is handed to the handler on a background
    /// thread: emptying the cache's local tiers can take longer than a call's budget.
    /// - Throws: `CacheError.Code.remoteFailure` (`ETIMEDOUT`) when the budget ends before the
    ///   loss is handled; the redirected command must not be sent then.
    func ensureTracked(_ address: String, within budget: ClusterBudget) throws(CacheError) {
        let handled = DispatchSemaphore(value: 0)
        let waits = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            track(address, &state)
            guard let loss = state.masters[address]?.loss, loss > state.handled else { return false }
            state.waiters.append((loss, handled))
            return true
        }
        guard waits else { return }
        DispatchQueue.global(qos: .userInitiated).async { [self] in deliverPending() }
        let left = budget.remaining
        if left <= 0 || handled.wait(timeout: .now() + .nanoseconds(Int(min(left, 86_400) * 1e9))) == .timedOut {
            state.withLock { $0.waiters.removeAll { $0.semaphore === handled } }
            throw budget.spent("this instance dropped the local copies it can no longer prove fresh (\(address) is not tracked yet)")
        }
    }

    /// The map could not be loaded: with no master known yet, that is a loss, and the map is
    /// asked for again after a pause (longer after each failure, up to a second).
    func mapFailed(_ error: CacheError) {
        let pause = state.withLock { state -> Double? in
            guard !state.cancelled, state.masters.isEmpty, !state.retryScheduled else { return nil }
            state.retryScheduled = true
            state.missed = true
            state.enqueue(.lost("no Redis Cluster master to track: \(error.message)"))
            defer { state.retryPause = min(state.retryPause * 2, 1) }
            return state.retryPause
        }
        guard let pause else { return }
        deliverPending()
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + pause) { [self] in
            let goesOn = state.withLock { state -> Bool in
                state.retryScheduled = false
                return !state.cancelled
            }
            if goesOn { store.startRefresh(timeouts) }
        }
    }

    /// Starts tracking on `address` unless it is tracked already; after every master tracked
    /// once, reports the loss (its changes are not tracked until its connection is).
    private func track(_ address: String, _ state: inout State) {
        guard state.masters[address] == nil else { return }
        let server: RedisServer
        do throws(CacheError) {
            server = try store.node(address).server
        } catch {
            // Not host:port: the map itself is wrong, and its next reload is the remedy.
            return
        }
        let id = state.nextID
        state.nextID += 1
        let subscription = RedisTrackingSubscription.start(server: server, prefix: prefix, timeouts: timeouts) { [self] event in
            handle(event, of: address, id: id)
        }
        state.masters[address] = Master(id: id, subscription: subscription)
        if state.listened {
            // After a loss not yet followed by a restoration, copies are no longer kept: the
            // loss already queued is the one to wait for.
            if !state.missed {
                state.missed = true
                state.lastLoss = state.enqueue(.lost("Redis Cluster master \(address) is not tracked yet"))
            }
            state.masters[address]?.loss = state.lastLoss
        }
    }

    /// What the tracking connection to `address` (the one numbered `id`) reports.
    private func handle(_ event: RemoteSubscriptionEvent, of address: String, id: Int) {
        switch event {
        case .subscribed:
            state.withLock { state in
                guard !state.cancelled, state.masters[address]?.id == id else { return }
                state.masters[address]?.tracks = true
                deliverIfEveryMasterTracks(&state)
            }
            deliverPending()
        case .lost(let reason):
            let current = state.withLock { state -> Bool in
                guard !state.cancelled, state.masters[address]?.id == id else { return false }
                state.masters[address]?.tracks = false
                state.missed = true
                state.lastLoss = state.enqueue(.lost("Redis Cluster master \(address): \(reason)"))
                return true
            }
            deliverPending()
            // A failover or a resharding may be under way: the map says which masters to track.
            if current { store.startRefresh(timeouts) }
        case .changed:
            state.withLock { state in
                guard !state.cancelled, state.masters[address]?.id == id else { return }
                state.enqueue(event)
            }
            deliverPending()
        case .message:
            break
        }
    }

    /// Reports that changes are tracked when every master tracks and that was not reported
    /// since the last loss.
    private func deliverIfEveryMasterTracks(_ state: inout State) {
        guard !state.masters.isEmpty, state.masters.values.allSatisfy(\.tracks) else { return }
        guard !state.listened || state.missed else { return }
        let afterReconnect = state.missed
        state.listened = true
        state.missed = false
        state.enqueue(.subscribed(afterReconnect: afterReconnect))
    }

    /// Hands the pending events to the handler, in order, unless cancelled. When it returns,
    /// every event pending at the call was handled (here, or by the call that held the
    /// delivery).
    private func deliverPending() {
        delivery.withLock { _ in
            while let event = state.withLock({ state -> RemoteSubscriptionEvent? in
                guard !state.cancelled else {
                    state.pending.removeAll()
                    return nil
                }
                return state.pending.isEmpty ? nil : state.pending.removeFirst()
            }) {
                handler(event)
                state.withLock { $0.markHandled(1) }
            }
        }
    }
}
