import Foundation
import Larder
import Synchronization

/// One cluster node as a `RedisClusterStore` reaches it: its address and a small pool of idle
/// connections. A connection that failed is closed, never pooled again.
final class RedisClusterNode: Sendable {
    let server: RedisServer
    private let poolSize: Int
    private let idle = Mutex<[RedisConnection]>([])

    init(server: RedisServer, poolSize: Int) {
        self.server = server
        self.poolSize = poolSize
    }

    /// `host:port`.
    var address: String { "\(server.host):\(server.port)" }

    /// Runs `body` on a pooled connection, opening one when none is idle; gives it back unless broken.
    func withConnection<T>(_ timeouts: RemoteTimeouts, _ body: (RedisConnection) throws(CacheError) -> T) throws(CacheError) -> T {
        let connection: RedisConnection
        if let pooled = idle.withLock({ $0.popLast() }) {
            connection = pooled
        } else {
            connection = try RedisConnection.open(server, timeout: timeouts.connect)
        }
        defer {
            if !connection.isBroken {
                idle.withLock { if $0.count < poolSize { $0.append(connection) } }
            }
        }
        try connection.setCommandTimeout(timeouts.command)
        return try body(connection)
    }

    /// Sends `commands` in one write on one connection and reads their replies, in order;
    /// with `asking`, each is preceded by `ASKING` (whose reply is dropped).
    func pipeline(_ commands: [RedisArguments], asking: Bool = false, timeouts: RemoteTimeouts) throws(CacheError) -> [RedisReply] {
        try withConnection(timeouts) { (connection) throws(CacheError) in
            guard asking else { return try connection.pipeline(commands) }
            let replies = try connection.pipeline(commands.flatMap { [RedisArguments(["ASKING"]), $0] })
            return stride(from: 1, to: replies.count, by: 2).map { replies[$0] }
        }
    }
}
