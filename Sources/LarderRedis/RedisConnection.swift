import CHiredis
import Foundation
import Larder

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A reply from Redis. A string's `Data` owns the hiredis reply object that holds its bytes (they
/// are not copied) and frees it when the last copy of the `Data` goes; the rest is copied out.
enum RedisReply: Sendable, Hashable {
    case string(Data)
    case array([RedisReply])
    case integer(Int64)
    case null
    case status(String)
    case error(String)
}

/// One blocking hiredis connection. Used by one thread at a time: the pool hands it out and
/// takes it back (`RedisRemoteStore`), or a subscription's thread owns it.
///
/// `@unchecked Sendable`: the context is never touched by two threads at once; the one call
/// another thread makes, `shutdownSocket()`, uses only the descriptor copied at open time.
final class RedisConnection: @unchecked Sendable {
    private let context: UnsafeMutablePointer<redisContext>
    /// The socket, for `shutdownSocket()`.
    private let descriptor: Int32
    private var commandTimeout: TimeInterval?
    /// Whether the context reported an I/O or protocol error (or a timeout): hiredis leaves such a
    /// context unusable, so it is closed rather than pooled again.
    private(set) var isBroken = false

    private init(context: UnsafeMutablePointer<redisContext>) {
        self.context = context
        descriptor = context.pointee.fd
    }

    deinit {
        redisFree(context)
    }

    /// Connects to `server`, waiting at most `timeout` seconds, then authenticates and selects its
    /// database (one round trip, within the same timeout) when it asks for them.
    static func open(_ server: RedisServer, timeout: TimeInterval) throws(CacheError) -> RedisConnection {
        let (host, port) = (server.host, server.port)
        guard let context = redisConnectWithTimeout(host, Int32(port), timeval(seconds: timeout)) else {
            throw CacheError(.remoteFailure, "could not allocate a hiredis context for \(host):\(port)")
        }
        if context.pointee.err != 0 {
            let message = Self.errorText(context)
            redisFree(context)
            throw CacheError(.remoteFailure, "could not connect to Redis at \(host):\(port): \(message)")
        }
        let connection = RedisConnection(context: context)
        let handshake = server.handshake
        guard !handshake.isEmpty else { return connection }
        try connection.setCommandTimeout(timeout)
        for (reply, arguments) in zip(try connection.pipeline(handshake), handshake) {
            // Never the arguments themselves: AUTH's are secrets.
            if case .error(let message) = reply {
                throw CacheError(
                    .remoteFailure, "Redis at \(host):\(port) refused \(arguments.name): \(message)")
            }
        }
        return connection
    }

    /// Sets how long a command may wait for its reply; 0 waits for ever.
    func setCommandTimeout(_ seconds: TimeInterval) throws(CacheError) {
        guard commandTimeout != seconds else { return }
        guard redisSetTimeout(context, timeval(seconds: seconds)) == REDIS_OK else { throw failure("setting the timeout") }
        commandTimeout = seconds
    }

    /// Sends one command and reads its reply.
    func command(_ arguments: RedisArguments) throws(CacheError) -> RedisReply {
        try send(arguments)
        return try readReply()
    }

    /// Sends `name key` (a command of one key, such as `GET`) and reads its reply: the arguments
    /// go to hiredis from the stack, with no ``RedisArguments`` buffer (the remote tier's read).
    func command(_ name: StaticString, key: String) throws(CacheError) -> RedisReply {
        guard !isBroken else { throw CacheError(.remoteFailure, "the Redis connection is broken") }
        var key = key
        let status = key.withUTF8 { keyBytes in
            // Any address will do for an empty key: hiredis reads its length.
            let keyBase = UnsafeRawPointer(keyBytes.baseAddress ?? name.utf8Start).assumingMemoryBound(to: CChar.self)
            let nameBase = UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
            var argv: (UnsafePointer<CChar>?, UnsafePointer<CChar>?) = (nameBase, keyBase)
            var lengths: (Int, Int) = (name.utf8CodeUnitCount, keyBytes.count)
            return withUnsafeMutableBytes(of: &argv) { argvBytes in
                withUnsafeBytes(of: &lengths) { lengthBytes in
                    redisAppendCommandArgv(
                        context, 2, argvBytes.baseAddress!.assumingMemoryBound(to: UnsafePointer<CChar>?.self),
                        lengthBytes.baseAddress!.assumingMemoryBound(to: Int.self))
                }
            }
        }
        guard status == REDIS_OK else { throw failure("sending a command") }
        return try readReply()
    }

    /// Sends every command, then reads their replies: one round trip.
    func pipeline(_ commands: [RedisArguments]) throws(CacheError) -> [RedisReply] {
        for arguments in commands { try send(arguments) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands { replies.append(try readReply()) }
        return replies
    }

    /// Appends a command to the output buffer; the next read sends it.
    private func send(_ arguments: RedisArguments) throws(CacheError) {
        guard !isBroken else { throw CacheError(.remoteFailure, "the Redis connection is broken") }
        let status = arguments.withArgv { count, argv, lengths in redisAppendCommandArgv(context, count, argv, lengths) }
        guard status == REDIS_OK else { throw failure("sending a command") }
    }

    /// Reads the next reply (a subscription's next message).
    func readReply() throws(CacheError) -> RedisReply {
        var raw: UnsafeMutableRawPointer?
        guard redisGetReply(context, &raw) == REDIS_OK, let raw else { throw failure("reading a reply") }
        return Self.adopt(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// Shuts the socket down, so that a thread blocked reading it wakes up with an error.
    func shutdownSocket() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    private func failure(_ action: String) -> CacheError {
        isBroken = true
        let code = context.pointee.err
        return CacheError(.remoteFailure, "Redis failed \(action): \(Self.errorText(context)) (hiredis error \(code))")
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Converts `reply` and frees it, or hands it over: a string reply's bytes are not copied,
    /// the `Data` takes the buffer hiredis allocated for them and frees it with `free` when its
    /// last copy goes; the reply object itself is freed at once, its string detached first
    /// (hiredis 0.14 frees a string reply's buffer with `free`, and a `NULL` one as nothing).
    /// An array's elements are detached from it first (hiredis frees a `NULL` element as
    /// nothing), so that each string element lives as long as its own `Data`.
    static func adopt(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING:
            guard let bytes = r.str, r.len > 0 else { break }
            reply.pointee.str = nil
            freeReplyObject(reply)
            return .string(Data(bytesNoCopy: bytes, count: r.len, deallocator: .free))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(r.elements)
            for index in 0 ..< r.elements {
                guard let element = r.element[index] else { continue }
                r.element[index] = nil
                elements.append(adopt(element))
            }
            freeReplyObject(reply)
            return .array(elements)
        default:
            break
        }
        defer { freeReplyObject(reply) }
        switch r.type {
        case REDIS_REPLY_STRING: return .string(Data())
        case REDIS_REPLY_INTEGER: return .integer(r.integer)
        case REDIS_REPLY_STATUS: return .status(r.str.map { String(cString: $0) } ?? "")
        case REDIS_REPLY_ERROR: return .error(r.str.map { String(cString: $0) } ?? "")
        default: return .null
        }
    }
}

extension timeval {
    /// A `timeval` of `seconds`.
    init(seconds: TimeInterval) {
        let whole = seconds.rounded(.down)
        self.init(tv_sec: .init(whole), tv_usec: .init((seconds - whole) * 1_000_000))
    }
}
