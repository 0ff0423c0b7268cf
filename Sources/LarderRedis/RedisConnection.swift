import Foundation
import Larder

/// One blocking connection to Redis, speaking RESP2 over a ``RedisTransport`` (a ``Socket``, or
/// TLS over one). Used by one thread at a time: the pool hands it out and takes it back
/// (`RedisRemoteStore`), or a subscription's thread owns it.
///
/// `@unchecked Sendable`: its buffers are never touched by two threads at once; the one call
/// another thread makes, ``shutdownSocket()``, only shuts the transport down.
final class RedisConnection: @unchecked Sendable {
    /// The byte stream, for a ``RedisChannel`` that drives it itself once the connection is open.
    let transport: any RedisTransport
    private let reader: RedisReplyReader<RedisTransportBytes>
    /// The commands written and not yet sent, reused from one command to the next.
    private var output: [UInt8] = []
    /// Whether a command failed on the wire (an I/O error, a timeout, a reply that broke the
    /// protocol): the stream is then at an unknown place, so the connection is closed rather
    /// than pooled again, and every later command on it throws. An error reply does not break it.
    private(set) var isBroken = false
    /// Where RESP3 push frames (``RedisReply/push(_:)``) go when they arrive between replies, as
    /// a tracking connection's invalidations do; `nil` returns them as replies. Set before the
    /// connection is used, on the thread that uses it.
    var pushHandler: ((RedisReply) -> Void)?

    private init(transport: any RedisTransport, limits: RedisReplyLimits) {
        self.transport = transport
        reader = RedisReplyReader(source: RedisTransportBytes(transport: transport), limits: limits)
        output.reserveCapacity(1024)
    }

    /// How a connection that only waits for pushes probes a silent peer (``open(_:timeout:limits:keepsAlive:)``):
    /// after 5 idle seconds, every second, 3 times, so that a peer gone without closing the
    /// connection is noticed within about 8 seconds.
    static let keepAlive: (idle: Int32, interval: Int32, count: Int32) = (5, 1, 3)

    /// Connects to `server`, waiting at most `timeout` seconds for the connection and, when the
    /// server is reached over TLS, its handshake together; then authenticates and selects its
    /// database (one exchange with the server, within the same timeout) when it asks for them. With
    /// `keepsAlive`, the socket has TCP keepalive on (``keepAlive``).
    static func open(_ server: RedisServer, timeout: TimeInterval, limits: RedisReplyLimits = RedisReplyLimits(), keepsAlive: Bool = false)
        throws(CacheError) -> RedisConnection
    {
        let (host, port) = (server.host, server.port)
        let transport: any RedisTransport
        do throws(CacheError) {
            let deadline = timeout > 0 ? Socket.monotonicSeconds() + timeout : nil
            let socket = try Socket.connect(host: host, port: port, timeout: timeout)
            if keepsAlive {
                try socket.enableKeepAlive(idle: keepAlive.idle, interval: keepAlive.interval, count: keepAlive.count)
            }
            if let tls = server.tls {
                transport = try tls.handshake(over: socket, host: host, deadline: deadline)
            } else {
                transport = socket
            }
        } catch {
            throw CacheError(.remoteFailure, "could not connect to Redis at \(host):\(port): \(error.message)", errno: error.errno)
        }
        let connection = RedisConnection(transport: transport, limits: limits)
        let handshake = server.handshake
        guard !handshake.isEmpty else { return connection }
        try connection.setCommandTimeout(timeout)
        for (reply, arguments) in zip(try connection.pipeline(handshake), handshake) {
            // Never the arguments themselves: AUTH's are secrets.
            if case .error(let message) = reply {
                throw CacheError(.remoteFailure, "Redis at \(host):\(port) refused \(arguments.name): \(message)")
            }
        }
        return connection
    }

    /// Sets how long one write or read of a command may wait; 0 waits for ever. Ends a deadline.
    func setCommandTimeout(_ seconds: TimeInterval) throws(CacheError) {
        transport.setDeadline(nil)
        guard transport.timeout != seconds else { return }
        do throws(CacheError) {
            try transport.setTimeout(seconds)
        } catch {
            isBroken = true
            throw error
        }
    }

    /// Sets when every write and read from now on must be over (``Socket/monotonicSeconds()``):
    /// the commands of one call share one budget, whatever they are.
    func setDeadline(_ deadline: Double) {
        transport.setDeadline(deadline)
    }

    /// Sends one command and reads its reply.
    func command(_ arguments: RedisArguments) throws(CacheError) -> RedisReply {
        try checkUsable()
        arguments.encode(into: &output)
        return try flushAndRead()
    }

    /// Sends `name key` (a command of one key, such as `GET`) and reads its reply, written
    /// straight into the output buffer (the remote tier's read of one key).
    func command(_ name: StaticString, key: String) throws(CacheError) -> RedisReply {
        try checkUsable()
        var key = key
        key.withUTF8 { keyBytes in
            RESPEncoding.appendHeader(UInt8(ascii: "*"), 2, to: &output)
            RESPEncoding.appendHeader(UInt8(ascii: "$"), name.utf8CodeUnitCount, to: &output)
            output.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            output.append(contentsOf: RESPEncoding.crlf)
            RESPEncoding.appendHeader(UInt8(ascii: "$"), keyBytes.count, to: &output)
            output.append(contentsOf: keyBytes)
            output.append(contentsOf: RESPEncoding.crlf)
        }
        return try flushAndRead()
    }

    /// Sends `name key...` (a command of several keys, such as `MGET`) and reads its reply,
    /// written straight into the output buffer (the remote tier's read of several keys).
    func command(_ name: StaticString, keys: [String]) throws(CacheError) -> RedisReply {
        try checkUsable()
        RESPEncoding.appendCommand(name, keys: keys, to: &output)
        return try flushAndRead()
    }

    /// Sends every command in one write, then reads their replies in order, so the commands cost one wait for the server together.
    func pipeline(_ commands: [RedisArguments]) throws(CacheError) -> [RedisReply] {
        try checkUsable()
        for arguments in commands { arguments.encode(into: &output) }
        try flush()
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands { replies.append(try readReply()) }
        return replies
    }

    /// Reads the next reply (a subscription's next message), handing the push frames that come
    /// first to ``pushHandler`` when there is one.
    func readReply() throws(CacheError) -> RedisReply {
        try checkUsable()
        do throws(CacheError) {
            while true {
                let reply = try reader.readReply()
                guard case .push = reply, let pushHandler else { return reply }
                pushHandler(reply)
            }
        } catch {
            isBroken = true
            throw error
        }
    }

    /// Shuts the transport down, so that a thread blocked reading it wakes up with an error.
    func shutdownSocket() {
        transport.shutdown()
    }

    private func flushAndRead() throws(CacheError) -> RedisReply {
        try flush()
        return try readReply()
    }

    /// Sends the output buffer and empties it.
    private func flush() throws(CacheError) {
        // Kept for the next command, unless a large value grew it.
        defer { if output.capacity > 1 << 20 { output = [] } else { output.removeAll(keepingCapacity: true) } }
        do throws(CacheError) {
            try output.withUnsafeBytes { bytes in Result { () throws(CacheError) in try transport.send(bytes) } }.get()
        } catch {
            isBroken = true
            throw error
        }
    }

    private func checkUsable() throws(CacheError) {
        guard !isBroken else { throw CacheError(.remoteFailure, "the Redis connection is broken") }
    }
}
