import Foundation
import Larder
import Synchronization

/// A `RemoteStore` on Redis: the shared remote tier of `HybridCache` instances on several
/// machines. It speaks RESP2 over a TCP socket itself, so it needs no client library; TLS
/// (``RedisTLSOptions``) uses the system's OpenSSL on Linux.
///
/// ```swift
/// var options = HybridCacheOptions(directory: cachesURL)
/// options.remote = RemoteTierOptions(store: try RedisRemoteStore(host: "10.0.0.5", port: 6379), namespace: "feeds")
/// let cache = try HybridCache(options: options)
/// ```
///
/// Every call blocks its thread (the cache calls it on its own threads) for at most its command
/// timeout, all its waits together: for a connection, and for each command it sends (a removal
/// by prefix sends several). It takes an idle connection from a small pool; when none is idle,
/// a connection is opened in the background (within the connect timeout) and the call waits for
/// it, or for one another call hands back, only as long as its own budget lasts. A connection
/// that failed or timed out is closed, never reused (the reply stream is at an unknown place),
/// and the idle ones with it. Reads are one `GET`, or one `MGET` for several keys;
/// removal by prefix uses `SCAN` and `UNLINK`, never `FLUSHDB`. Invalidations use `PUBLISH` and a
/// `SUBSCRIBE` connection on a thread of its own, which reconnects after a loss.
public final class RedisRemoteStore: RemoteStore {
    /// The server's host name or address.
    public var host: String { server.host }
    /// The server's port.
    public var port: Int { server.port }
    /// The database the values live in (`SELECT`; 0 unless the initializer said otherwise).
    /// Invalidations are not per database: Redis delivers a channel's messages to every
    /// subscriber of the server, so caches that must not share invalidations use other namespaces.
    public var database: Int { server.database }
    /// The most idle connections kept for reuse.
    public let poolSize: Int
    /// The TLS settings, or `nil` when the connection is plain TCP.
    public let tls: RedisTLSOptions?
    let server: RedisServer
    let pool: RedisConnectionPool
    /// The connection the async calls share (``fetchValues(forKeys:timeouts:)``).
    let shared: RedisSharedChannel

    /// Creates a store for the server at `host`:`port`. Connects lazily, on the first call.
    ///
    /// Each new connection authenticates (`AUTH`) when `password` is given and selects `database`
    /// when it is not 0, in one round trip before its first command; a refusal (wrong password,
    /// no such database) fails that call with `CacheError.Code.remoteFailure`, as a
    /// server that does not answer would. With `tls`, each connection runs a TLS handshake
    /// (within the connect timeout) before anything else, and a server whose certificate is
    /// refused fails the call the same way; without it the connection is plain TCP.
    ///
    /// TLS needs OpenSSL, which LarderRedis links on Linux; on Apple platforms a store with `tls`
    /// is refused with `CacheError.Code.invalidOptions` ("TLS is not available on this platform").
    /// - Parameters:
    ///   - host: The server's host name or address ("127.0.0.1"), not empty.
    ///   - port: The server's port (6379), from 1 to 65535.
    ///   - username: The ACL user (Redis 6 and later), or `nil` for the `default` user. Used only
    ///     with a `password`.
    ///   - password: The password (`requirepass` or the user's), or `nil` to send no `AUTH`.
    ///   - database: The database index (0), at least 0.
    ///   - poolSize: The most idle connections kept for reuse (4), at least 1, and the most
    ///     connects under way at once; more connections are opened (in the background) when
    ///     more threads call at once, and closed after use.
    ///   - tls: How to speak TLS to the server, or `nil` (the default) for plain TCP.
    /// - Throws: `CacheError.Code.invalidOptions` naming the first setting out of range, or the
    ///   TLS file that is missing or unusable; the store is not created.
    public init(
        host: String = "127.0.0.1", port: Int = 6379, username: String? = nil, password: String? = nil, database: Int = 0,
        poolSize: Int = 4, tls: RedisTLSOptions? = nil
    ) throws(CacheError) {
        if let problem = Self.problem(host: host, port: port, database: database, poolSize: poolSize) {
            throw CacheError(.invalidOptions, problem)
        }
        let context: TLSContext? = try tls.map { options throws(CacheError) in try TLSContext(options) }
        server = RedisServer(host: host, port: port, username: username, password: password, database: database, tls: context)
        self.poolSize = poolSize
        self.tls = tls
        pool = RedisConnectionPool(server: server, size: poolSize)
        shared = RedisSharedChannel(server: server)
    }

    /// Creates a store for the server at `address`, written `host:port`.
    /// - Parameters:
    ///   - address: The server's address, as in "127.0.0.1:6379" (an IPv6 host in brackets is
    ///     not supported: give it to ``init(host:port:username:password:database:poolSize:tls:)``).
    ///   - username: The ACL user, or `nil` (see ``init(host:port:username:password:database:poolSize:tls:)``).
    ///   - password: The password, or `nil` to send no `AUTH`.
    ///   - database: The database index (0), at least 0.
    ///   - poolSize: The most idle connections kept for reuse (4), at least 1.
    ///   - tls: How to speak TLS to the server, or `nil` (the default) for plain TCP.
    /// - Throws: `CacheError.Code.invalidOptions` when `address` is not `host:port`, or naming
    ///   the first other setting out of range or the TLS file that is missing or unusable.
    public convenience init(
        address: String, username: String? = nil, password: String? = nil, database: Int = 0, poolSize: Int = 4,
        tls: RedisTLSOptions? = nil
    ) throws(CacheError) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            throw CacheError(.invalidOptions, "a Redis address is host:port, as in 127.0.0.1:6379, not \"\(address)\"")
        }
        try self.init(
            host: String(address[..<colon]), port: port, username: username, password: password, database: database, poolSize: poolSize,
            tls: tls)
    }

    /// What is wrong with these settings, or `nil`.
    static func problem(host: String, port: Int, database: Int, poolSize: Int) -> String? {
        if host.isEmpty { return "the Redis host is empty" }
        if !(1 ... 65535).contains(port) { return "a Redis port is from 1 to 65535, not \(port)" }
        if database < 0 { return "a Redis database index is at least 0, not \(database)" }
        if poolSize < 1 { return "a Redis connection pool size is at least 1, not \(poolSize)" }
        return nil
    }

    /// The end of a call's budget: `timeouts.command` from now (``Socket/monotonicSeconds()``).
    static func deadline(_ timeouts: RemoteTimeouts) -> Double {
        Socket.monotonicSeconds() + timeouts.command
    }

    /// Runs `body` on a connection from the pool, every wait of it ending by `deadline`; gives
    /// the connection back unless it broke.
    func withConnection<T>(
        _ timeouts: RemoteTimeouts, deadline: Double, _ body: (RedisConnection) throws(CacheError) -> T
    ) throws(CacheError) -> T {
        let connection = try pool.take(deadline: deadline, connectTimeout: timeouts.connect)
        defer { pool.giveBack(connection) }
        connection.setDeadline(deadline)
        return try body(connection)
    }

    /// ``withConnection(_:deadline:_:)`` with a budget of its own.
    func withConnection<T>(_ timeouts: RemoteTimeouts, _ body: (RedisConnection) throws(CacheError) -> T) throws(CacheError) -> T {
        try withConnection(timeouts, deadline: Self.deadline(timeouts), body)
    }

    /// Sends one command on a pooled connection, by `deadline` (default: the command timeout from
    /// now); an error reply throws.
    @discardableResult
    func command(_ arguments: [String], data: Data? = nil, timeouts: RemoteTimeouts, deadline: Double? = nil) throws(CacheError)
        -> RedisReply
    {
        var parts = RedisArguments(arguments)
        if let data { parts.insert(data, at: 2) }
        let reply = try withConnection(timeouts, deadline: deadline ?? Self.deadline(timeouts)) { (connection) throws(CacheError) in
            try connection.command(parts)
        }
        if case .error(let message) = reply { throw CacheError(.remoteFailure, "Redis answered \(arguments[0]): \(message)") }
        return reply
    }

    // MARK: - RemoteStore

    /// The values under `keys`: one `GET`, or one `MGET` for several keys. The time to live is
    /// not asked (`millisecondsToLive` is `nil`): the frame header carries the writer's expiry,
    /// which the remote copy never outlives (`touch` only lengthens it), so a second command per
    /// key would buy nothing.
    public func values(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) -> [RemoteValue?] {
        guard keys.count > 1 else { return keys.isEmpty ? [] : [try value(forKey: keys[0], timeouts: timeouts)] }
        let reply = try withConnection(timeouts) { (connection) throws(CacheError) in try connection.command("MGET", keys: keys) }
        return try Self.values(in: reply, count: keys.count)
    }

    /// The value under `key`: one `GET`, written straight into the connection's output buffer
    /// (the remote tier's read of one key). The time to live is not asked, as in
    /// ``values(forKeys:timeouts:)``.
    public func value(forKey key: String, timeouts: RemoteTimeouts) throws(CacheError) -> RemoteValue? {
        let reply = try withConnection(timeouts) { (connection) throws(CacheError) in try connection.command("GET", key: key) }
        switch reply {
        case .string(let data): return RemoteValue(data: data, millisecondsToLive: nil)
        case .null: return nil
        case .error(let message): throw CacheError(.remoteFailure, "Redis answered GET: \(message)")
        default: throw CacheError(.remoteFailure, "Redis answered GET with something else than a value")
        }
    }

    /// `SET key value [PX ms] [NX]`.
    public func store(_ data: Data, forKey key: String, expiresIn milliseconds: Int64?, onlyIfAbsent: Bool, timeouts: RemoteTimeouts)
        throws(CacheError) -> Bool
    {
        var arguments = ["SET", key]
        if let milliseconds { arguments += ["PX", String(max(1, milliseconds))] }
        if onlyIfAbsent { arguments.append("NX") }
        let reply = try command(arguments, data: data, timeouts: timeouts)
        return reply != .null
    }

    /// `PEXPIRE key ms GT` (Redis 7: never shortens the time to live, and leaves a value without
    /// expiry as it is), or `PERSIST key` for no expiry.
    public func touch(forKey key: String, expiresIn milliseconds: Int64?, timeouts: RemoteTimeouts) throws(CacheError) -> Bool {
        let arguments = milliseconds.map { ["PEXPIRE", key, String(max(1, $0)), "GT"] } ?? ["PERSIST", key]
        return try command(arguments, timeouts: timeouts) == .integer(1)
    }

    /// `UNLINK key...`.
    public func remove(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) {
        guard !keys.isEmpty else { return }
        try command(["UNLINK"] + keys, timeouts: timeouts)
    }

    /// `SCAN cursor MATCH prefix* COUNT 1000`, then `UNLINK` of each batch, until the cursor is 0.
    @discardableResult
    public func remove(withPrefix prefix: String, timeouts: RemoteTimeouts) throws(CacheError) -> Int {
        let pattern = Self.escapedForMatch(prefix) + "*"
        // One budget for every SCAN and UNLINK.
        let deadline = Self.deadline(timeouts)
        var cursor = "0"
        var removed = 0
        repeat {
            let reply = try command(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"], timeouts: timeouts, deadline: deadline)
            guard case .array(let parts) = reply, parts.count == 2, case .string(let next) = parts[0], case .array(let found) = parts[1]
            else {
                throw CacheError(.remoteFailure, "Redis answered SCAN with something else than a cursor and keys")
            }
            let keys = found.compactMap { reply -> String? in
                if case .string(let key) = reply { return String(decoding: key, as: UTF8.self) }
                return nil
            }
            if !keys.isEmpty {
                if case .integer(let count) = try command(["UNLINK"] + keys, timeouts: timeouts, deadline: deadline) {
                    removed += Int(count)
                }
            }
            cursor = String(decoding: next, as: UTF8.self)
        } while cursor != "0"
        return removed
    }

    /// `PUBLISH channel message`.
    public func publish(_ message: Data, to channel: String, timeouts: RemoteTimeouts) throws(CacheError) {
        try command(["PUBLISH", channel], data: message, timeouts: timeouts)
    }

    /// `SUBSCRIBE channel` on a connection and a thread of the subscription's own.
    public func subscribe(
        to channel: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> any RemoteSubscription {
        RedisSubscription.start(server: server, channel: channel, timeouts: timeouts, handler: handler)
    }

    /// `true`: Redis 6 and later track changes for a client (`CLIENT TRACKING`).
    public var canTrackChanges: Bool { true }

    /// `HELLO 3` (with `AUTH` when the store has a password), `CLIENT TRACKING on BCAST PREFIX
    /// prefix`, then the server's `invalidate` pushes, on a connection and a thread of the
    /// subscription's own, which reconnects and tracks again after a loss. The loss is reported
    /// as soon as the connection ends (the server closed it, killed it, or went away).
    public func trackChanges(
        ofKeysWithPrefix prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> (any RemoteSubscription)? {
        RedisTrackingSubscription.start(server: server, prefix: prefix, timeouts: timeouts, handler: handler)
    }

    /// `PING`, within the command timeout (the cache's breaker probes with it, off every
    /// caller's path, giving it the connect timeout as well). A ping that fails on the wire is
    /// sent once more, on a new connection, if the budget allows: the idle connection it took may
    /// be one a restart of the server broke.
    public func ping(timeouts: RemoteTimeouts) throws(CacheError) {
        let deadline = Self.deadline(timeouts)
        let reply: RedisReply
        do throws(CacheError) {
            reply = try command(["PING"], timeouts: timeouts, deadline: deadline)
        } catch {
            guard Socket.monotonicSeconds() < deadline else { throw error }
            reply = try command(["PING"], timeouts: timeouts, deadline: deadline)
        }
        guard case .status("PONG") = reply else {
            throw CacheError(.remoteFailure, "Redis did not answer PING with PONG")
        }
    }

    /// `prefix` with the glob characters of `SCAN MATCH` escaped, so that it matches itself only.
    static func escapedForMatch(_ prefix: String) -> String {
        var escaped = ""
        for character in prefix {
            if "*?[]\\^-".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}
