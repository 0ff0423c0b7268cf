import Foundation

/// Where a connection goes and what it says first: the address, TLS or not, the credentials
/// (`AUTH`) and the database (`SELECT`).
struct RedisServer: Sendable {
    var host: String
    var port: Int
    var username: String?
    var password: String?
    var database: Int
    /// The TLS settings, loaded, when the server is reached over TLS; `nil` for plain TCP.
    var tls: TLSContext? = nil

    /// The commands a new connection sends before any other: `AUTH [username] password` when a
    /// password is set, `SELECT database` when the database is not 0. A subscription sends them
    /// too (pub/sub ignores the database, so `SELECT` is harmless there).
    var handshake: [RedisArguments] {
        var commands: [RedisArguments] = []
        if let password { commands.append(RedisArguments(["AUTH"] + (username.map { [$0] } ?? []) + [password])) }
        if database != 0 { commands.append(RedisArguments(["SELECT", String(database)])) }
        return commands
    }
}
