import Foundation
import Larder
import Synchronization

/// A `SUBSCRIBE` connection on a thread of its own: delivers messages, reconnects after a loss
/// (waiting longer after each failure, up to a second), and stops when cancelled.
final class RedisSubscription: RemoteSubscription {
    private struct State {
        var cancelled = false
        var connection: RedisConnection?
    }

    private let state = Mutex(State())
    /// The server to connect to, asked before each connection (a cluster moves to another node).
    private let nextServer: @Sendable () throws(CacheError) -> RedisServer
    private let channel: String
    private let timeouts: RemoteTimeouts
    private let handler: @Sendable (RemoteSubscriptionEvent) -> Void

    private init(
        nextServer: @escaping @Sendable () throws(CacheError) -> RedisServer, channel: String, timeouts: RemoteTimeouts,
        handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) {
        self.nextServer = nextServer
        self.channel = channel
        self.timeouts = timeouts
        self.handler = handler
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
        let thread = Thread { subscription.run() }
        thread.name = "larder.redis.subscription"
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

    private func deliver(_ event: RemoteSubscriptionEvent) {
        if !isCancelled { handler(event) }
    }

    private func run() {
        var lost = false
        var pause = 0.05
        while !isCancelled {
            do throws(CacheError) {
                try listen(afterLoss: lost) { pause = 0.05 }
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

    /// Connects, subscribes, and delivers messages until the connection fails or is shut down.
    private func listen(afterLoss: Bool, subscribed: () -> Void) throws(CacheError) {
        let connection = try RedisConnection.open(try nextServer(), timeout: timeouts.connect)
        let registered = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.connection = connection
            return true
        }
        guard registered else { return }
        defer { state.withLock { $0.connection = nil } }
        // The reply to SUBSCRIBE within the command timeout; then wait for messages for ever.
        try connection.setCommandTimeout(timeouts.command)
        guard case .array(let confirmation) = try connection.command(RedisArguments(["SUBSCRIBE", channel])),
            confirmation.first == .string(Data("subscribe".utf8))
        else {
            throw CacheError(.remoteFailure, "Redis did not confirm SUBSCRIBE \(channel)")
        }
        try connection.setCommandTimeout(0)
        subscribed()
        deliver(.subscribed(afterReconnect: afterLoss))
        while true {
            let reply = try connection.readReply()
            if case .array(let parts) = reply, parts.count == 3, parts[0] == .string(Data("message".utf8)),
                case .string(let payload) = parts[2]
            {
                deliver(.message(payload))
            }
        }
    }
}
