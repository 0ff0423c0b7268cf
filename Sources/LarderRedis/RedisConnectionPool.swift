import Dispatch
import Foundation
import Larder
import Synchronization

/// The store's connections: idle ones lent to callers, and new ones opened in the background, so
/// that a caller never waits for a connect longer than its own budget.
///
/// A caller takes an idle connection when there is one. Otherwise it waits, until its deadline
/// at most, for a connection handed back by another caller or opened by a background connect
/// (started for it unless enough are under way already: at most ``size`` at once). A connect
/// keeps going after the caller gave up, within the connect timeout, and its connection then
/// serves the next caller. A connect that fails fails the callers waiting then, at once, with
/// its error: a server that refuses connections costs a caller no wait.
final class RedisConnectionPool: Sendable {
    /// The most idle connections kept, and the most connects under way at once.
    let size: Int
    private let server: RedisServer
    private let state = Mutex(State())

    private struct State {
        var idle: [RedisConnection] = []
        /// Callers waiting for a connection, first come first served.
        var waiters: [Waiter] = []
        /// Connects under way.
        var connecting = 0
        /// Connects started so far (tests).
        var connectsStarted = 0
        /// Connections lent so far: each is one call's commands on the wire (tests).
        var lent = 0
    }

    /// A caller waiting for a connection.
    private final class Waiter: Sendable {
        enum Slot {
            case waiting
            case given(RedisConnection)
            case failed(CacheError)
            case abandoned
        }

        let ready = DispatchSemaphore(value: 0)
        let slot = Mutex<Slot>(.waiting)

        /// Gives the waiter `outcome` unless it gave up; `false` when it did.
        func offer(_ outcome: Slot) -> Bool {
            let taken = slot.withLock { slot -> Bool in
                guard case .waiting = slot else { return false }
                slot = outcome
                return true
            }
            if taken { ready.signal() }
            return taken
        }
    }

    init(server: RedisServer, size: Int) {
        self.server = server
        self.size = size
    }

    /// How many connects are under way (tests).
    var connectsInFlight: Int { state.withLock { $0.connecting } }
    /// How many connects were started (tests).
    var connectsStarted: Int { state.withLock { $0.connectsStarted } }
    /// How many connections were lent, one per call that reached the wire (tests).
    var lent: Int { state.withLock { $0.lent } }

    /// A connection for a call that must be over by `deadline` (``Socket/monotonicSeconds()``):
    /// an idle one, or one handed back or opened in the background before then.
    /// - Throws: `CacheError.Code.remoteFailure` when the deadline passes first, or the connect
    ///   that was to serve the caller failed.
    func take(deadline: Double, connectTimeout: Double) throws(CacheError) -> RedisConnection {
        enum Taken {
            case connection(RedisConnection)
            case wait(Waiter, connecting: Bool)
        }
        let taken = state.withLock { s -> Taken in
            if let connection = s.idle.popLast() {
                s.lent += 1
                return .connection(connection)
            }
            let waiter = Waiter()
            s.waiters.append(waiter)
            let connecting = s.connecting < min(size, s.waiters.count)
            if connecting {
                s.connecting += 1
                s.connectsStarted += 1
            }
            return .wait(waiter, connecting: connecting)
        }
        let waiter: Waiter
        switch taken {
        case .connection(let connection): return connection
        case .wait(let waiting, let connecting):
            waiter = waiting
            if connecting { connect(timeout: connectTimeout) }
        }
        let left = deadline - Socket.monotonicSeconds()
        if left > 0 { _ = waiter.ready.wait(timeout: .now() + .nanoseconds(Int(left * 1e9))) }
        let outcome = waiter.slot.withLock { slot -> Waiter.Slot in
            if case .waiting = slot { slot = .abandoned }
            return slot
        }
        switch outcome {
        case .given(let connection):
            state.withLock { $0.lent += 1 }
            return connection
        case .failed(let error):
            throw error
        case .waiting, .abandoned:
            state.withLock { s in s.waiters.removeAll { $0 === waiter } }
            throw CacheError(
                .remoteFailure,
                "no connection to Redis at \(server.host):\(server.port) within the command timeout; connecting in the background",
                errno: ETIMEDOUT)
        }
    }

    /// Takes `connection` back after a call: to a waiting caller, or to the idle ones (up to
    /// ``size``). A broken connection is closed, and so are the idle ones: after a failure on the
    /// wire (a restarted or hung server) they are most likely broken too, and a probe must not
    /// fail on one of them once the server is back.
    func giveBack(_ connection: RedisConnection) {
        guard !connection.isBroken else {
            let dropped = state.withLock { s -> [RedisConnection] in
                defer { s.idle.removeAll() }
                return s.idle
            }
            // Closed outside the lock.
            _ = dropped
            return
        }
        hand(.given(connection))
    }

    /// Hands `outcome` to the first caller still waiting; a connection nobody waits for goes idle.
    private func hand(_ outcome: Waiter.Slot) {
        let surplus = state.withLock { s -> RedisConnection? in
            while !s.waiters.isEmpty {
                if s.waiters.removeFirst().offer(outcome) { return nil }
            }
            guard case .given(let connection) = outcome else { return nil }
            if s.idle.count < size {
                s.idle.append(connection)
                return nil
            }
            return connection
        }
        // A connection beyond the pool's size is closed outside the lock.
        _ = surplus
    }

    /// Opens a connection in the background and hands it over; a failure fails every caller
    /// waiting now.
    private func connect(timeout: Double) {
        let server = server
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let outcome: Waiter.Slot
            do throws(CacheError) {
                outcome = .given(try RedisConnection.open(server, timeout: timeout))
            } catch {
                outcome = .failed(error)
            }
            state.withLock { $0.connecting -= 1 }
            if case .failed = outcome {
                let waiters = state.withLock { s -> [Waiter] in
                    defer { s.waiters.removeAll() }
                    return s.waiters
                }
                for waiter in waiters { _ = waiter.offer(outcome) }
            } else {
                hand(outcome)
            }
        }
    }
}
