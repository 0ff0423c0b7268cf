import Foundation
import Larder
import Synchronization

/// A RESP3 connection with `CLIENT TRACKING on BCAST PREFIX <prefix>`, on a thread of its own:
/// turns the server's `invalidate` pushes into ``RemoteSubscriptionEvent/changed(keys:)``,
/// reports a loss as soon as the connection ends (a server that vanished without closing it is
/// noticed by TCP keepalive), reconnects (waiting longer after each failure,
/// up to a second) and tracks again, and stops when cancelled.
///
/// Broadcast mode, because a cache's values all live under one prefix and are read on other
/// connections (the pool's): the server reports every change under the prefix, whoever wrote
/// it and whoever read it, and remembers nothing per key for this client.
final class RedisTrackingSubscription: RemoteSubscription {
    private struct State {
        var cancelled = false
        var connection: RedisConnection?
    }

    private let state = Mutex(State())
    private let server: RedisServer
    private let prefix: String
    private let timeouts: RemoteTimeouts
    private let handler: @Sendable (RemoteSubscriptionEvent) -> Void

    private init(
        server: RedisServer, prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) {
        var server = server
        server.speaksRESP3 = true
        self.server = server
        self.prefix = prefix
        self.timeouts = timeouts
        self.handler = handler
    }

    /// Creates a tracking subscription to `server` and starts its thread.
    static func start(
        server: RedisServer, prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> RedisTrackingSubscription {
        let subscription = RedisTrackingSubscription(server: server, prefix: prefix, timeouts: timeouts, handler: handler)
        let thread = Thread { subscription.run() }
        thread.name = "larder.redis.tracking"
        thread.start()
        return subscription
    }

    func cancel() {
        let connection = state.withLock { state -> RedisConnection? in
            state.cancelled = true
            return state.connection
        }
        connection?.shutdownSocket()
    }

    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// The keepalive settings of the connection it tracks on now, `nil` between connections or
    /// over TLS.
    var keepAliveSettings: (on: Bool, idle: Int32, interval: Int32, count: Int32)? {
        state.withLock { ($0.connection?.transport as? Socket)?.keepAliveSettings() }
    }

    private func deliver(_ event: RemoteSubscriptionEvent) {
        if !isCancelled { handler(event) }
    }

    private func run() {
        var lost = false
        var pause = 0.05
        while !isCancelled {
            do throws(CacheError) {
                try track(afterLoss: lost) { pause = 0.05 }
            } catch {
                if isCancelled { break }
                deliver(.lost(error.message))
                lost = true
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 1)
            }
        }
        state.withLock { $0.connection = nil }
    }

    /// Connects, turns tracking on, and delivers changes until the connection fails or is shut
    /// down.
    private func track(afterLoss: Bool, tracking: () -> Void) throws(CacheError) {
        // Keepalive, because this connection only reads: without it, a server gone without
        // closing the connection (a dropped route) would leave it waiting for pushes for ever,
        // and the loss would never be reported.
        let connection = try RedisConnection.open(server, timeout: timeouts.connect, keepsAlive: true)
        connection.pushHandler = { [self] push in
            if let event = Self.event(of: push) { deliver(event) }
        }
        let registered = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.connection = connection
            return true
        }
        guard registered else { return }
        defer { state.withLock { $0.connection = nil } }
        try connection.setCommandTimeout(timeouts.command)
        let reply = try connection.command(RedisArguments(["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", prefix]))
        guard reply == .status("OK") else {
            let detail = if case .error(let message) = reply { ": \(message)" } else { "" }
            throw CacheError(.remoteFailure, "Redis did not turn CLIENT TRACKING on\(detail)")
        }
        // Changes are tracked from here on; wait for their pushes for ever.
        try connection.setCommandTimeout(0)
        tracking()
        deliver(.subscribed(afterReconnect: afterLoss))
        while true {
            // Every push goes to the handler; a reply nothing asked for is not expected, and
            // ignored.
            _ = try connection.readReply()
        }
    }

    /// The event a push frame stands for: `invalidate` with the keys, or with a null for a
    /// flush; `nil` for another push.
    static func event(of push: RedisReply) -> RemoteSubscriptionEvent? {
        guard case .push(let parts) = push, parts.count == 2, parts[0] == .string(Data("invalidate".utf8)) else { return nil }
        switch parts[1] {
        case .null:
            return .changed(keys: nil)
        case .array(let keys):
            return .changed(
                keys: keys.compactMap { key in
                    if case .string(let bytes) = key { return String(decoding: bytes, as: UTF8.self) }
                    return nil
                })
        default:
            return nil
        }
    }
}
