import Foundation
import Larder
import Synchronization

/// A RESP3 connection with `CLIENT TRACKING on BCAST PREFIX <prefix>`, on a thread of its own
/// (``RedisListener``): turns the server's `invalidate` pushes into
/// ``RemoteSubscriptionEvent/changed(keys:)``, reports a loss as soon as the connection ends (a
/// server that vanished without closing it is noticed by TCP keepalive), reconnects (waiting longer after each failure,
/// up to a second) and tracks again, and stops when cancelled.
///
/// Broadcast mode, because a cache's values all live under one prefix and are read on other
/// connections (the pool's): the server reports every change under the prefix, whoever wrote
/// it and whoever read it, and remembers nothing per key for this client.
final class RedisTrackingSubscription: RemoteSubscription {
    private let listener: RedisListener
    private let server: RedisServer
    private let prefix: String
    private let timeouts: RemoteTimeouts

    private init(
        server: RedisServer, prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) {
        var server = server
        server.speaksRESP3 = true
        listener = RedisListener(handler: handler)
        self.server = server
        self.prefix = prefix
        self.timeouts = timeouts
    }

    /// Creates a tracking subscription to `server` and starts its thread.
    static func start(
        server: RedisServer, prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> RedisTrackingSubscription {
        let subscription = RedisTrackingSubscription(server: server, prefix: prefix, timeouts: timeouts, handler: handler)
        subscription.listener.start(name: "larder.redis.tracking") { afterLoss, listening throws(CacheError) in
            try subscription.track(afterLoss: afterLoss, tracking: listening)
        }
        return subscription
    }

    func cancel() {
        listener.cancel()
    }

    /// The keepalive settings of the connection it tracks on now, `nil` between connections or
    /// over TLS.
    var keepAliveSettings: (on: Bool, idle: Int32, interval: Int32, count: Int32)? { listener.keepAliveSettings }

    /// Connects, turns tracking on, and delivers changes until the connection fails or is shut
    /// down.
    private func track(afterLoss: Bool, tracking: () -> Void) throws(CacheError) {
        guard let connection = try listener.connect(to: server, timeout: timeouts.connect) else { return }
        defer { listener.disconnected() }
        connection.pushHandler = { [listener] push in
            if let event = Self.event(of: push) { listener.deliver(event) }
        }
        try connection.setCommandTimeout(timeouts.command)
        let reply = try connection.command(RedisArguments(["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", prefix]))
        guard reply == .status("OK") else {
            let detail = if case .error(let message) = reply { ": \(message)" } else { "" }
            throw CacheError(.remoteFailure, "Redis did not turn CLIENT TRACKING on\(detail)")
        }
        // Changes are tracked from here on; wait for their pushes for ever.
        try connection.setCommandTimeout(0)
        tracking()
        listener.deliver(.subscribed(afterReconnect: afterLoss))
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
