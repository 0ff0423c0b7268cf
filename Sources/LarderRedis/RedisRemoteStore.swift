import Foundation
import Larder
import Synchronization

/// A ``Larder/RemoteStore`` on Redis, through hiredis: the shared remote tier of
/// ``Larder/HybridCache`` instances on several machines.
///
/// ```swift
/// var options = HybridCacheOptions(directory: cachesURL)
/// options.remote = RemoteTierOptions(store: RedisRemoteStore(host: "10.0.0.5", port: 6379), namespace: "feeds")
/// let cache = try HybridCache(options: options)
/// ```
///
/// Every call blocks its thread (the cache calls it on its own threads): it takes a connection
/// from a small pool, or opens one within the connect timeout, and waits for the reply at most
/// the command timeout. A connection that failed or timed out is closed, never reused (hiredis
/// leaves it unusable). Multi-key reads are pipelined (`GET` and `PTTL` per key, one round trip);
/// removal by prefix uses `SCAN` and `UNLINK`, never `FLUSHDB`. Invalidations use `PUBLISH` and a
/// `SUBSCRIBE` connection on a thread of its own, which reconnects after a loss.
public final class RedisRemoteStore: RemoteStore {
    /// The server's host name or address.
    public let host: String
    /// The server's port.
    public let port: Int
    /// The most idle connections kept for reuse.
    public let poolSize: Int
    private let idle = Mutex<[RedisConnection]>([])

    /// Creates a store for the server at `host`:`port`. Connects lazily, on the first call.
    /// - Parameters:
    ///   - host: The server's host name or address ("127.0.0.1").
    ///   - port: The server's port (6379).
    ///   - poolSize: The most idle connections kept for reuse (4); more are opened when more
    ///     threads call at once, and closed after use.
    public init(host: String = "127.0.0.1", port: Int = 6379, poolSize: Int = 4) {
        self.host = host
        self.port = port
        self.poolSize = max(1, poolSize)
    }

    /// Creates a store for the server at `address`, written `host:port`; `nil` when it is not.
    /// - Parameters:
    ///   - address: The server's address, as in "127.0.0.1:6379".
    ///   - poolSize: The most idle connections kept for reuse (4).
    public convenience init?(address: String, poolSize: Int = 4) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]), port > 0 else {
            return nil
        }
        self.init(host: String(address[..<colon]), port: port, poolSize: poolSize)
    }

    /// Runs `body` on a pooled connection, opening one when none is idle; gives it back unless broken.
    func withConnection<T>(_ timeouts: RemoteTimeouts, _ body: (RedisConnection) throws(CacheError) -> T) throws(CacheError) -> T {
        let connection: RedisConnection
        if let pooled = idle.withLock({ $0.popLast() }) {
            connection = pooled
        } else {
            connection = try RedisConnection.open(host: host, port: port, timeout: timeouts.connect)
        }
        defer {
            if !connection.isBroken {
                idle.withLock { if $0.count < poolSize { $0.append(connection) } }
            }
        }
        try connection.setCommandTimeout(timeouts.command)
        return try body(connection)
    }

    /// Sends one command on a pooled connection; an error reply throws.
    @discardableResult
    func command(_ arguments: [String], data: Data? = nil, timeouts: RemoteTimeouts) throws(CacheError) -> RedisReply {
        var parts = arguments.map { Data($0.utf8) }
        if let data { parts.insert(data, at: min(2, parts.count)) }
        let reply = try withConnection(timeouts) { (connection) throws(CacheError) in try connection.command(parts) }
        if case .error(let message) = reply { throw CacheError(.remoteFailure, "Redis answered \(arguments[0]): \(message)") }
        return reply
    }

    // MARK: - RemoteStore

    /// The values under `keys` and their `PTTL`s, pipelined in one round trip.
    public func values(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) -> [RemoteValue?] {
        let commands = keys.flatMap { key in [[Data("GET".utf8), Data(key.utf8)], [Data("PTTL".utf8), Data(key.utf8)]] }
        let replies = try withConnection(timeouts) { (connection) throws(CacheError) in try connection.pipeline(commands) }
        var values: [RemoteValue?] = []
        values.reserveCapacity(keys.count)
        for index in keys.indices {
            switch (replies[2 * index], replies[2 * index + 1]) {
            case (.string(let data), .integer(let ttl)) where ttl != -2:
                values.append(RemoteValue(data: data, millisecondsToLive: ttl >= 0 ? ttl : nil))
            case (.error(let message), _), (_, .error(let message)):
                throw CacheError(.remoteFailure, "Redis answered GET: \(message)", key: keys[index])
            default:
                values.append(nil)
            }
        }
        return values
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

    /// `PEXPIRE key ms`, or `PERSIST key` for no expiry.
    public func touch(forKey key: String, expiresIn milliseconds: Int64?, timeouts: RemoteTimeouts) throws(CacheError) -> Bool {
        let arguments = milliseconds.map { ["PEXPIRE", key, String(max(1, $0))] } ?? ["PERSIST", key]
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
        var cursor = "0"
        var removed = 0
        repeat {
            let reply = try command(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"], timeouts: timeouts)
            guard case .array(let parts) = reply, parts.count == 2, case .string(let next) = parts[0], case .array(let found) = parts[1]
            else {
                throw CacheError(.remoteFailure, "Redis answered SCAN with something else than a cursor and keys")
            }
            let keys = found.compactMap { reply -> String? in
                if case .string(let key) = reply { return String(decoding: key, as: UTF8.self) }
                return nil
            }
            if !keys.isEmpty {
                if case .integer(let count) = try command(["UNLINK"] + keys, timeouts: timeouts) { removed += Int(count) }
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
        RedisSubscription.start(host: host, port: port, channel: channel, timeouts: timeouts, handler: handler)
    }

    /// `PING`.
    public func ping(timeouts: RemoteTimeouts) throws(CacheError) {
        guard case .status("PONG") = try command(["PING"], timeouts: timeouts) else {
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
