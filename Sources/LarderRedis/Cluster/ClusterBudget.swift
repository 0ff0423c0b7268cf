#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

/// One call's budget on a Redis Cluster: every wait the call makes (for the slot map, for a
/// connection, for each node's replies, redirections and retries included) ends by one deadline,
/// the command timeout after the call began.
///
/// The deadline is kept on the store's clock (``RedisClusterStore`` reads the monotonic clock,
/// tests may give it another); each wait on a socket or a semaphore gets what is left of it.
struct ClusterBudget: Sendable {
    /// What a call sent, as ``RedisClusterStore``'s observer sees it (tests).
    struct Sent: Sendable, Equatable {
        /// The node, `host:port`.
        var address: String
        /// The commands' names, in the order written (`ASKING` included).
        var commands: [String]
        /// The deadline of the call that sent them, on the store's clock.
        var deadline: Double
    }

    let timeouts: RemoteTimeouts
    /// When every wait of the call must be over, on ``clock``.
    let deadline: Double
    let clock: @Sendable () -> Double
    /// Told of every batch of commands before it is written (tests), or `nil`.
    let observer: (@Sendable (Sent) -> Void)?

    /// A budget of `seconds` from now.
    init(
        _ timeouts: RemoteTimeouts, seconds: Double, clock: @escaping @Sendable () -> Double,
        observer: (@Sendable (Sent) -> Void)? = nil
    ) {
        self.timeouts = timeouts
        self.clock = clock
        self.observer = observer
        deadline = clock() + seconds
    }

    /// What is left of the budget, in seconds; 0 or less once it is spent.
    var remaining: Double { deadline - clock() }

    /// The deadline on ``Socket/monotonicSeconds()`` for the next wait on a connection.
    /// - Throws: `CacheError.Code.remoteFailure` (`ETIMEDOUT`) naming `what` when nothing is left.
    func socketDeadline(for what: @autoclosure () -> String) throws(CacheError) -> Double {
        let left = remaining
        guard left > 0 else { throw spent(what()) }
        return Socket.monotonicSeconds() + left
    }

    /// The error of a call whose budget ran out before `what`.
    func spent(_ what: String) -> CacheError {
        CacheError(
            .remoteFailure, "the Redis Cluster call spent its command timeout (\(timeouts.command) s) before \(what)", errno: ETIMEDOUT)
    }
}
