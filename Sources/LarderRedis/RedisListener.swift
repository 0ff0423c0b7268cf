import Foundation
import Larder
import Synchronization

/// The thread of a connection that only listens (a `SUBSCRIBE` connection, a `CLIENT TRACKING`
/// one): it runs a session, reports the session's loss, reconnects (waiting longer after each
/// failure, up to a second), and stops when cancelled.
///
/// A session connects through ``connect(to:timeout:)``, which turns TCP keepalive on: the
/// connection only reads, so without it a server gone without closing the connection (a dropped
/// route, a machine gone) would leave it waiting for ever and the loss would never be reported.
final class RedisListener: Sendable {
    /// One run of a listening connection: connects, reports ``RemoteSubscriptionEvent/subscribed(afterReconnect:)``
    /// (`afterLoss` says which), calls `listening` once it listens, and delivers what arrives
    /// until its connection fails (it throws) or is shut down by ``cancel()``.
    typealias Session = @Sendable (_ afterLoss: Bool, _ listening: () -> Void) throws(CacheError) -> Void

    private struct State {
        var cancelled = false
        var connection: RedisConnection?
    }

    private let state = Mutex(State())
    private let handler: @Sendable (RemoteSubscriptionEvent) -> Void

    init(handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void) {
        self.handler = handler
    }

    /// Starts a thread named `name` that runs `session` again after each loss until cancelled.
    func start(name: String, session: @escaping Session) {
        let thread = Thread { self.run(session) }
        thread.name = name
        thread.start()
    }

    /// Stops the thread: shuts its connection down, so that a blocked read wakes. The handler is
    /// not called once this returns, except for a call already running.
    func cancel() {
        let connection = state.withLock { state -> RedisConnection? in
            state.cancelled = true
            return state.connection
        }
        connection?.shutdownSocket()
    }

    /// Whether ``cancel()`` was called.
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Hands `event` to the handler, unless cancelled.
    func deliver(_ event: RemoteSubscriptionEvent) {
        if !isCancelled { handler(event) }
    }

    /// Connects to `server` with TCP keepalive (``RedisConnection/keepAlive``), as the
    /// connection ``cancel()`` shuts down; `nil` when cancelled meanwhile. The session calls
    /// ``disconnected()`` when it ends.
    func connect(to server: RedisServer, timeout: TimeInterval) throws(CacheError) -> RedisConnection? {
        let connection = try RedisConnection.open(server, timeout: timeout, keepsAlive: true)
        let registered = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.connection = connection
            return true
        }
        return registered ? connection : nil
    }

    /// Forgets the connection of the session that ends.
    func disconnected() {
        state.withLock { $0.connection = nil }
    }

    /// The keepalive settings of the connection it listens on now, `nil` between connections or
    /// over TLS.
    var keepAliveSettings: (on: Bool, idle: Int32, interval: Int32, count: Int32)? {
        state.withLock { ($0.connection?.transport as? Socket)?.keepAliveSettings() }
    }

    private func run(_ session: Session) {
        var lost = false
        var pause = 0.05
        while !isCancelled {
            do throws(CacheError) {
                try session(lost) { pause = 0.05 }
            } catch {
                if isCancelled { break }
                deliver(.lost(error.message))
                lost = true
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 1)
            }
        }
        disconnected()
    }
}
