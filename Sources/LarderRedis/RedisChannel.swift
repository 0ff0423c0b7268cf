import Dispatch
import Foundation
import Larder
import Synchronization

/// One connection that many async callers share at once: each caller's command is appended to
/// one output buffer and its continuation to a queue of requests in flight; a thread of the
/// channel's own sends what the buffer holds (the commands of every caller that came meanwhile
/// go in one write: a pipeline) and reads the replies, which Redis sends in the order of the
/// commands, handing each to the request at the head of the queue. No caller blocks a thread.
///
/// Each request has its own deadline. One that passes before its reply arrives resumes its
/// caller with a timeout, and stays in the queue without a caller, so that its reply, when it
/// comes, is read and dropped: the replies of the others stay matched. When Redis has sent
/// nothing for twice the budget of the request at the head, counted from when that request's
/// command went out or from the last reply, whichever came later (the server's silence, not how
/// late a caller was to ask), or the connection fails, the channel breaks: every caller
/// still waiting gets an error (never another caller's reply), the connection is closed, and
/// the next call opens a new channel.
///
/// The connect runs in the background (within the connect timeout); requests made meanwhile
/// wait in the buffer, each within its own deadline.
final class RedisChannel: Sendable {
    /// A request in flight.
    private struct Request {
        /// When its caller stops waiting (``Socket/monotonicSeconds()``).
        var deadline: Double
        /// Its caller's whole budget in seconds; twice this much silence from Redis breaks the
        /// channel while the request is at the head.
        var budget: Double
        /// When its command went out (``Socket/monotonicSeconds()``), or `nil` while it waits in
        /// the output buffer.
        var sentAt: Double?
        /// Its caller, or `nil` once resumed (a timeout): the reply is then dropped.
        var continuation: UnsafeContinuation<RedisReply, any Error>?
    }

    private struct State {
        /// Commands not yet sent.
        var output: [UInt8] = []
        /// Requests in order of their commands: `requests[head...]` await replies.
        var requests: [Request] = []
        var head = 0
        /// `requests[unsent...]` have their commands still in the output buffer.
        var unsent = 0
        /// When the last reply came (``Socket/monotonicSeconds()``), 0 before the first.
        var lastReplyAt: Double = 0
        /// The channel's thread waits in `poll` and must be woken to send.
        var parked = false
        /// Set once the connect finished (the connection) or failed (the error).
        var connection: RedisConnection?
        var connectFailure: CacheError?
        /// Why the channel broke; once set, every request fails with it.
        var failure: CacheError?
    }

    private let state = Mutex(State())
    private let wake: WakePipe
    private let server: RedisServer
    private let limits: RedisReplyLimits
    /// Set when the channel broke: callers then open a new one.
    private let broken = Atomic<Bool>(false)

    /// A channel to `server`, its connect started at once (within `connectTimeout`).
    init(server: RedisServer, connectTimeout: Double, limits: RedisReplyLimits = RedisReplyLimits()) throws(CacheError) {
        self.server = server
        self.limits = limits
        wake = try WakePipe()
        state.withLock { $0.output.reserveCapacity(16 * 1024) }
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            do throws(CacheError) {
                let connection = try RedisConnection.open(server, timeout: connectTimeout, limits: limits)
                try connection.setCommandTimeout(0)
                state.withLock { $0.connection = connection }
            } catch {
                state.withLock { $0.connectFailure = error }
            }
            wake.signal()
        }
        let thread = Thread { [self] in run() }
        thread.name = "larder.redis.channel"
        thread.start()
    }

    /// Whether the channel broke (a new one must serve later calls).
    var isBroken: Bool { broken.load(ordering: .acquiring) }

    /// Sends the command `encode` writes, and waits for its reply until `deadline`.
    /// - Parameters:
    ///   - budget: The call's whole budget in seconds: while this request is the oldest
    ///     unanswered, twice this long without a reply from Redis breaks the channel.
    ///   - encode: Appends the command, in RESP, to the output buffer.
    /// - Throws: `CacheError.Code.remoteFailure` when the deadline passes first (`ETIMEDOUT`) or
    ///   the channel breaks.
    func send(deadline: Double, budget: Double, _ encode: (inout [UInt8]) -> Void) async throws(CacheError) -> RedisReply {
        do {
            return try await withUnsafeThrowingContinuation { continuation in
                enum Outcome {
                    case queued(wakeThread: Bool)
                    case failed(CacheError)
                }
                let outcome = state.withLock { s -> Outcome in
                    if let failure = s.failure { return .failed(failure) }
                    encode(&s.output)
                    s.requests.append(Request(deadline: deadline, budget: budget, continuation: continuation))
                    guard s.parked else { return .queued(wakeThread: false) }
                    s.parked = false
                    return .queued(wakeThread: true)
                }
                switch outcome {
                case .failed(let error): continuation.resume(throwing: error)
                case .queued(let wakeThread): if wakeThread { wake.signal() }
                }
            }
        } catch let error as CacheError {
            throw error
        } catch {
            throw CacheError(.remoteFailure, "the Redis call failed: \(error)")
        }
    }

    /// Breaks the channel: its thread stops, its callers get `error`.
    func close(_ error: CacheError = CacheError(.remoteFailure, "the Redis store was released")) {
        state.withLock { s in if s.failure == nil { s.failure = error } }
        broken.store(true, ordering: .releasing)
        wake.signal()
    }

    // MARK: - The channel's thread

    private func run() {
        let failure: CacheError
        do throws(CacheError) {
            let connection = try awaitConnection()
            guard let socket = connection.transport as? Socket else {
                throw CacheError(.remoteFailure, "a shared Redis connection needs plain TCP")
            }
            let reader = RedisReplyReader(source: ChannelBytes(channel: self, socket: socket), limits: limits)
            while true { deliver(try reader.readReply()) }
        } catch {
            failure = error
        }
        fail(failure)
    }

    /// Waits for the background connect, timing out requests meanwhile.
    private func awaitConnection() throws(CacheError) -> RedisConnection {
        while true {
            let (connection, connectFailure, failure, deadline) = state.withLock { s in
                (s.connection, s.connectFailure, s.failure, Self.nextDeadline(s))
            }
            if let failure { throw failure }
            if let connectFailure { throw connectFailure }
            if let connection { return connection }
            if try !wake.wait(deadline: deadline) { try expire() }
        }
    }

    /// Gives `reply` to the request at the head (dropped if its caller stopped waiting).
    private func deliver(_ reply: RedisReply) {
        let now = Socket.monotonicSeconds()
        let continuation = state.withLock { s -> UnsafeContinuation<RedisReply, any Error>?? in
            guard s.head < s.unsent else { return .none }
            s.lastReplyAt = now
            defer {
                s.head += 1
                if s.head == s.requests.count {
                    s.requests.removeAll(keepingCapacity: true)
                    s.head = 0
                    s.unsent = 0
                } else if s.head >= 1024, s.head * 2 >= s.requests.count {
                    s.requests.removeFirst(s.head)
                    s.unsent -= s.head
                    s.head = 0
                }
            }
            return .some(s.requests[s.head].continuation)
        }
        switch continuation {
        case .none:
            // A reply nobody asked for: the stream is not what the channel thinks it is.
            fail(CacheError(.remoteFailure, "Redis sent a reply to no command"))
        case .some(let waiting): waiting?.resume(returning: reply)
        }
    }

    /// Resumes every request whose deadline passed with a timeout; throws (breaking the channel)
    /// when the head's reply is overdue past its stall deadline.
    private func expire() throws(CacheError) {
        let now = Socket.monotonicSeconds()
        let (expired, stalled) = state.withLock { s -> ([UnsafeContinuation<RedisReply, any Error>], Bool) in
            var expired: [UnsafeContinuation<RedisReply, any Error>] = []
            for index in s.requests.indices[s.head...] where s.requests[index].deadline <= now {
                if let continuation = s.requests[index].continuation {
                    expired.append(continuation)
                    s.requests[index].continuation = nil
                }
            }
            let stalled = Self.stallDeadline(s).map { $0 <= now } ?? false
            return (expired, stalled)
        }
        let error = CacheError(
            .remoteFailure, "no reply from Redis at \(server.host):\(server.port) within the command timeout", errno: ETIMEDOUT)
        for continuation in expired { continuation.resume(throwing: error) }
        if stalled { throw CacheError(.remoteFailure, "Redis at \(server.host):\(server.port) stopped answering", errno: ETIMEDOUT) }
    }

    /// When the channel gives up on Redis: twice the head's budget after its command went out or
    /// the last reply came, whichever was later; `nil` when no command awaits a reply.
    private static func stallDeadline(_ s: State) -> Double? {
        guard s.head < s.requests.count, let sentAt = s.requests[s.head].sentAt else { return nil }
        return max(sentAt, s.lastReplyAt) + 2 * s.requests[s.head].budget
    }

    /// The earliest moment the thread must wake to expire a request, or `nil` when none waits.
    private static func nextDeadline(_ s: State) -> Double? {
        var earliest = stallDeadline(s)
        for request in s.requests[s.head...] where request.continuation != nil {
            earliest = min(earliest ?? request.deadline, request.deadline)
        }
        return earliest
    }

    /// Breaks the channel with `error`: every caller still waiting gets it, the connection closes.
    private func fail(_ error: CacheError) {
        broken.store(true, ordering: .releasing)
        let (waiting, connection) = state.withLock { s -> ([UnsafeContinuation<RedisReply, any Error>], RedisConnection?) in
            if s.failure == nil { s.failure = error }
            let waiting = s.requests[s.head...].compactMap(\.continuation)
            s.requests.removeAll()
            s.head = 0
            s.unsent = 0
            s.output.removeAll()
            defer { s.connection = nil }
            return (waiting, s.connection)
        }
        connection?.shutdownSocket()
        let reported = state.withLock { $0.failure } ?? error
        for continuation in waiting { continuation.resume(throwing: reported) }
    }

    /// The reader's bytes: before each wait, sends what callers queued; while waiting, wakes for
    /// new commands and to expire requests. Only the channel's thread uses it.
    private struct ChannelBytes: RedisByteSource {
        let channel: RedisChannel
        let socket: Socket
        /// The buffer sent from, swapped with the callers' so that neither is copied.
        private let spare = SpareBuffer()

        init(channel: RedisChannel, socket: Socket) {
            self.channel = channel
            self.socket = socket
        }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws(CacheError) -> Int {
            while true {
                let now = Socket.monotonicSeconds()
                let (failure, sendBy, deadline) = channel.state.withLock { s -> (CacheError?, Double?, Double?) in
                    if s.failure != nil { return (s.failure, nil, nil) }
                    guard s.output.isEmpty else {
                        swap(&s.output, &spare.bytes)
                        var longest = 0.0
                        for index in s.unsent ..< s.requests.count {
                            s.requests[index].sentAt = now
                            longest = max(longest, s.requests[index].budget)
                        }
                        s.unsent = s.requests.count
                        // A server that takes none of the bytes for that long is silent too.
                        return (nil, now + 2 * longest, nil)
                    }
                    s.parked = true
                    return (nil, nil, RedisChannel.nextDeadline(s))
                }
                if let failure { throw failure }
                if let sendBy {
                    socket.setDeadline(sendBy)
                    defer { spare.bytes.removeAll(keepingCapacity: spare.bytes.capacity <= 1 << 20) }
                    try spare.bytes.withUnsafeBytes { bytes in Result { () throws(CacheError) in try socket.send(bytes) } }.get()
                    continue
                }
                let readiness = try socket.waitUntilReadable(orWoken: channel.wake, deadline: deadline)
                channel.state.withLock { $0.parked = false }
                // Checked whatever woke the thread: replies that keep arriving for the requests
                // ahead must not keep a later one waiting past its deadline.
                if let deadline, Socket.monotonicSeconds() >= deadline { try channel.expire() }
                if readiness.readable {
                    socket.setDeadline(nil)
                    return try socket.receive(into: buffer)
                }
            }
        }
    }

    /// The channel thread's send buffer (a class, so that the source, a struct, can swap it).
    private final class SpareBuffer {
        var bytes: [UInt8] = []
    }
}
