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
    /// Whether connections speak RESP3 (`HELLO 3`), which a tracking connection needs for its
    /// push frames; RESP2 otherwise, which every Redis speaks and which buys the same replies
    /// for the commands the store sends.
    var speaksRESP3 = false

    /// The commands a new connection sends before any other: `AUTH [username] password` when a
    /// password is set (`HELLO 3 [AUTH username password]` when it speaks RESP3, the `default`
    /// user standing for a missing name), `SELECT database` when the database is not 0. A
    /// subscription sends them too (pub/sub ignores the database, so `SELECT` is harmless there).
    var handshake: [RedisArguments] {
        var commands: [RedisArguments] = []
        if speaksRESP3 {
            commands.append(RedisArguments(["HELLO", "3"] + (password.map { ["AUTH", username ?? "default", $0] } ?? [])))
        } else if let password {
            commands.append(RedisArguments(["AUTH"] + (username.map { [$0] } ?? []) + [password]))
        }
        if database != 0 { commands.append(RedisArguments(["SELECT", String(database)])) }
        return commands
    }
}
