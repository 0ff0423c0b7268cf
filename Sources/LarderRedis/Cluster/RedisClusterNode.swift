import Foundation
import Larder

/// One cluster node as a `RedisClusterStore` reaches it: its address and a connection pool of
/// its own, the single-node store's: connects run in the background, and a caller waits for one
/// only within its budget. A connection that failed is closed, never pooled again.
final class RedisClusterNode: Sendable {
    let server: RedisServer
    let pool: RedisConnectionPool

    init(server: RedisServer, poolSize: Int) {
        self.server = server
        pool = RedisConnectionPool(server: server, size: poolSize)
    }

    /// `host:port`.
    var address: String { "\(server.host):\(server.port)" }

    /// Sends `commands` in one write on one connection and reads their replies, in order, all
    /// within `budget`; with `asking`, each is preceded by `ASKING` (whose reply is dropped).
    /// - Throws: `CacheError.Code.remoteFailure` when the budget is spent before the replies
    ///   come, no connection is ready in time, or the connection fails.
    func pipeline(_ commands: [RedisArguments], asking: Bool = false, within budget: ClusterBudget) throws(CacheError) -> [RedisReply] {
        var reachedTheWire = false
        return try pipeline(commands, asking: asking, within: budget, reachedTheWire: &reachedTheWire)
    }

    /// ``pipeline(_:asking:within:)``, telling whether the commands reached the wire before a
    /// failure: `false` when it came before anything was written (no connection, the budget
    /// spent), so that the commands surely did not run.
    func pipeline(_ commands: [RedisArguments], asking: Bool = false, within budget: ClusterBudget, reachedTheWire: inout Bool)
        throws(CacheError) -> [RedisReply]
    {
        let written = asking ? commands.flatMap { [RedisArguments(["ASKING"]), $0] } : commands
        let deadline = try budget.socketDeadline(for: "sending \(commands.first?.name ?? "a command") to \(address)")
        let connection = try pool.take(deadline: deadline, connectTimeout: budget.timeouts.connect)
        defer { pool.giveBack(connection) }
        connection.setDeadline(deadline)
        budget.observer?(ClusterBudget.Sent(address: address, commands: written.map(\.name), deadline: budget.deadline))
        reachedTheWire = true
        let replies = try connection.pipeline(written)
        guard asking else { return replies }
        return stride(from: 1, to: replies.count, by: 2).map { replies[$0] }
    }
}
