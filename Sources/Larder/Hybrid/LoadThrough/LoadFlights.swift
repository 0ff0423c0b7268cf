import Foundation

/// The loads in flight, at most one per key, and the callers waiting on each: the single-flight
/// core of `HybridCache.value(forKey:expiry:staleWindows:orLoad:)`.
///
/// A caller that misses memory *enters*: it either joins the key's flight or starts one, and gets
/// a ticket. It then *waits* on the ticket. The flight's task *offers* a stale copy when it finds
/// one (callers whose stale-while-revalidate window covers it are answered at once) and finally
/// *finishes*, answering every ticket still waiting (with the stale copy instead of an error for
/// those whose stale-if-error window covers it).
///
/// Cancellation: a waiter whose task is cancelled is answered with ``CacheError/Code/cancelled``
/// and leaves its flight; when the last waiter leaves that way, the flight is dropped from the map
/// and its task cancelled, unless a caller was served a stale value while revalidating, which
/// makes the refresh run to its end with nobody waiting.
///
/// Every state change happens under one lock (no I/O, no loader call, no continuation resumed
/// under it). A ticket may be answered or cancelled before its caller suspends: the ticket keeps
/// the outcome until the caller comes to take it, so no answer and no cancellation is lost.
final class LoadFlights: Sendable {
    /// What a waiting caller receives.
    typealias Outcome = Result<Data, CacheError>

    /// A value past its expiry, held by a flight for the callers that may take it.
    struct StaleCopy: Sendable {
        var data: Data
        /// When its record expired, in clock seconds.
        var expirationTime: Double
    }

    /// What ``enter(key:windows:now:)`` tells a caller.
    enum Entry {
        /// The key's flight holds a stale copy the caller's stale-while-revalidate window covers:
        /// the caller takes it, expired `expiredFor` seconds ago, and does not wait.
        case stale(Data, expiredFor: Double)
        /// The caller waits on `ticket`; when `startsFlight` is set, it must start that flight's
        /// task and hand it to ``attach(_:flight:key:)``.
        case waiting(ticket: UInt64, startsFlight: UInt64?)
    }

    /// A caller served while a flight ran, for the statistics and events.
    struct StaleServe {
        var expiredFor: Double
    }

    fileprivate enum Ticket {
        /// In a flight; its caller has not suspended yet.
        case pending(StaleWindows)
        /// Its caller is suspended on the continuation.
        case suspended(CheckedContinuation<Outcome, Never>, StaleWindows)
        /// Answered before its caller suspended.
        case answered(Outcome)
        /// Cancelled before its caller suspended.
        case cancelled
    }

    fileprivate struct Flight {
        let id: UInt64
        /// Tickets still waiting, in arrival order.
        var waiters: [UInt64]
        var stale: StaleCopy?
        /// Set once a caller was served stale while revalidating: the refresh then finishes even
        /// if every waiter leaves.
        var keepsRunning = false
        var task: Task<Void, Never>?
    }

    fileprivate struct State {
        var flights: [String: Flight] = [:]
        var tickets: [UInt64: Ticket] = [:]
        var nextID: UInt64 = 0

        mutating func makeID() -> UInt64 {
            defer { nextID &+= 1 }
            return nextID
        }
    }

    private let state = LarderMutex(State())

    /// The number of keys with a load in flight.
    var count: Int { state.withLock { $0.flights.count } }

    /// Joins the flight of `key`, or starts one; or, when that flight holds a stale copy within
    /// `windows.whileRevalidate` at `now`, hands the copy over at once.
    func enter(key: String, windows: StaleWindows, now: Double) -> Entry {
        state.withLock { s in
            let ticket = s.makeID()
            if let stale = s.flights[key]?.stale, now - stale.expirationTime < windows.whileRevalidate {
                s.flights[key]?.keepsRunning = true
                return .stale(stale.data, expiredFor: now - stale.expirationTime)
            }
            s.tickets[ticket] = .pending(windows)
            if s.flights[key] != nil {
                s.flights[key]?.waiters.append(ticket)
                return .waiting(ticket: ticket, startsFlight: nil)
            }
            let id = s.makeID()
            s.flights[key] = Flight(id: id, waiters: [ticket])
            return .waiting(ticket: ticket, startsFlight: id)
        }
    }

    /// Hands a flight its task, so that the last waiter to leave can cancel it; a flight already
    /// abandoned has its task cancelled at once.
    func attach(_ task: Task<Void, Never>, flight id: UInt64, key: String) {
        let isCurrent = state.withLock { s in
            guard s.flights[key]?.id == id else { return false }
            s.flights[key]?.task = task
            return true
        }
        if !isCurrent { task.cancel() }
    }

    /// Suspends until `ticket` is answered, or answers ``CacheError/Code/cancelled`` as soon as the
    /// calling task is cancelled (leaving the flight; see the type's notes).
    func wait(ticket: UInt64, key: String) async -> Outcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let ready: Outcome? = state.withLock { s in
                    switch s.tickets[ticket] {
                    case .pending(let windows):
                        s.tickets[ticket] = .suspended(continuation, windows)
                        return nil
                    case .answered(let outcome):
                        s.tickets[ticket] = nil
                        return outcome
                    case .cancelled:
                        s.tickets[ticket] = nil
                        return .failure(Self.cancelled(key))
                    case .suspended, nil:
                        preconditionFailure("a load-through ticket is waited on once")
                    }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            leave(ticket: ticket, key: key)
        }
    }

    /// Records a stale copy on flight `id` and answers, with it, the waiters whose
    /// stale-while-revalidate window covers it at `now`.
    /// - Returns: One entry per waiter answered.
    func offerStale(_ copy: StaleCopy, flight id: UInt64, key: String, now: Double) -> [StaleServe] {
        let expiredFor = now - copy.expirationTime
        var resumed: [CheckedContinuation<Outcome, Never>] = []
        let served: [StaleServe] = state.withLock { s in
            guard var flight = s.flights[key], flight.id == id else { return [] }
            s.flights[key] = nil  // edited out of the map, so the arrays are not copied
            flight.stale = copy
            var served: [StaleServe] = []
            flight.waiters.removeAll { ticket in
                guard let windows = s.windows(of: ticket), expiredFor < windows.whileRevalidate else { return false }
                if let continuation = s.answer(ticket, with: .success(copy.data)) { resumed.append(continuation) }
                served.append(StaleServe(expiredFor: expiredFor))
                return true
            }
            if !served.isEmpty { flight.keepsRunning = true }
            s.flights[key] = flight
            return served
        }
        for continuation in resumed { continuation.resume(returning: .success(copy.data)) }
        return served
    }

    /// Ends flight `id`: removes it from the map, then answers every waiter with `outcome`, or,
    /// when `outcome` is a failure, with the flight's stale copy for waiters whose stale-if-error
    /// window covers it at `now`. A flight no longer in the map (abandoned) is left alone.
    /// - Returns: One entry per waiter answered with the stale copy.
    @discardableResult
    func finish(flight id: UInt64, key: String, outcome: Outcome, now: Double) -> [StaleServe] {
        var resumed: [(CheckedContinuation<Outcome, Never>, Outcome)] = []
        let served: [StaleServe] = state.withLock { s in
            guard let flight = s.flights[key], flight.id == id else { return [] }
            s.flights[key] = nil
            var served: [StaleServe] = []
            for ticket in flight.waiters {
                guard let windows = s.windows(of: ticket) else { continue }
                var answer = outcome
                if case .failure = outcome, let stale = flight.stale, now - stale.expirationTime < windows.ifError {
                    answer = .success(stale.data)
                    served.append(StaleServe(expiredFor: now - stale.expirationTime))
                }
                if let continuation = s.answer(ticket, with: answer) { resumed.append((continuation, answer)) }
            }
            return served
        }
        for (continuation, answer) in resumed { continuation.resume(returning: answer) }
        return served
    }

    /// A cancelled caller leaves: its ticket is answered with ``CacheError/Code/cancelled`` and
    /// taken out of its flight; the flight goes, and its task is cancelled, when nobody is left
    /// and no stale serve made it a background refresh.
    private func leave(ticket: UInt64, key: String) {
        let (continuation, abandoned): (CheckedContinuation<Outcome, Never>?, Task<Void, Never>?) = state.withLock { s in
            var continuation: CheckedContinuation<Outcome, Never>?
            switch s.tickets[ticket] {
            case .pending:
                s.tickets[ticket] = .cancelled
            case .suspended(let waiting, _):
                s.tickets[ticket] = nil
                continuation = waiting
            case .answered, .cancelled, nil:
                return (nil, nil)
            }
            guard var flight = s.flights[key] else { return (continuation, nil) }
            s.flights[key] = nil
            flight.waiters.removeAll { $0 == ticket }
            if flight.waiters.isEmpty && !flight.keepsRunning { return (continuation, flight.task) }
            s.flights[key] = flight
            return (continuation, nil)
        }
        continuation?.resume(returning: .failure(Self.cancelled(key)))
        abandoned?.cancel()
    }

    /// The error a cancelled waiter gets.
    static func cancelled(_ key: String) -> CacheError {
        CacheError(.cancelled, "the task was cancelled while it waited for the load", key: key)
    }
}

extension LoadFlights.State {
    /// The stale windows of a ticket still waiting, or `nil` when it was answered or cancelled.
    fileprivate func windows(of ticket: UInt64) -> StaleWindows? {
        switch tickets[ticket] {
        case .pending(let windows), .suspended(_, let windows): windows
        default: nil
        }
    }

    /// Answers a waiting ticket: returns its continuation (for the caller to resume once the lock
    /// is released) or keeps the outcome for a caller that has not suspended yet.
    fileprivate mutating func answer(_ ticket: UInt64, with outcome: LoadFlights.Outcome) -> CheckedContinuation<
        LoadFlights.Outcome, Never
    >? {
        switch tickets[ticket] {
        case .suspended(let continuation, _):
            tickets[ticket] = nil
            return continuation
        case .pending:
            tickets[ticket] = .answered(outcome)
            return nil
        default:
            return nil
        }
    }
}
