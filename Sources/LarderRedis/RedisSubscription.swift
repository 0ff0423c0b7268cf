import Foundation
import Larder
import Synchronization

/// A `SUBSCRIBE` connection on a thread of its own (``RedisListener``): delivers messages,
/// reconnects after a loss, and stops when cancelled.
final class RedisSubscription: RemoteSubscription {
    private let listener: RedisListener
    /// The server to connect to, asked before each connection (a cluster moves to another node).
    private let nextServer: @Sendable () throws(CacheError) -> RedisServer
    private let channel: String
    private let timeouts: RemoteTimeouts

    private init(
        nextServer: @escaping @Sendable () throws(CacheError) -> RedisServer, channel: String, timeouts: RemoteTimeouts,
        handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) {
        listener = RedisListener(handler: handler)
        self.nextServer = nextServer
        self.channel = channel
        self.timeouts = timeouts
    }

    /// Creates a subscription and starts its thread.
    static func start(
        server: RedisServer, channel: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> RedisSubscription {
        start(nextServer: { server }, channel: channel, timeouts: timeouts, handler: handler)
    }

    /// Creates a subscription that asks `nextServer` where to connect before each connection, and starts its thread.
    static func start(
        nextServer: @escaping @Sendable () throws(CacheError) -> RedisServer, channel: String, timeouts: RemoteTimeouts,
        handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> RedisSubscription {
        let subscription = RedisSubscription(nextServer: nextServer, channel: channel, timeouts: timeouts, handler: handler)
        subscription.listener.start(name: "larder.redis.subscription") { afterLoss, listening throws(CacheError) in
            try subscription.listen(afterLoss: afterLoss, subscribed: listening)
        }
        return subscription
    }

    func cancel() {
        listener.cancel()
    }

    /// Connects, subscribes, and delivers messages until the connection fails or is shut down.
    private func listen(afterLoss: Bool, subscribed: () -> Void) throws(CacheError) {
        guard let connection = try listener.connect(to: try nextServer(), timeout: timeouts.connect) else { return }
        defer { listener.disconnected() }
        // The reply to SUBSCRIBE within the command timeout; then wait for messages for ever.
        try connection.setCommandTimeout(timeouts.command)
        guard case .array(let confirmation) = try connection.command(RedisArguments(["SUBSCRIBE", channel])),
            confirmation.first == .string(Data("subscribe".utf8))
        else {
            throw CacheError(.remoteFailure, "Redis did not confirm SUBSCRIBE \(channel)")
        }
        try connection.setCommandTimeout(0)
        subscribed()
        listener.deliver(.subscribed(afterReconnect: afterLoss))
        while true {
            let reply = try connection.readReply()
            if case .array(let parts) = reply, parts.count == 3, parts[0] == .string(Data("message".utf8)),
                case .string(let payload) = parts[2]
            {
                listener.deliver(.message(payload))
            }
        }
    }
}
