#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Larder

/// A connected TCP socket: every system call LarderRedis makes, each wrapped once, `EINTR`
/// retried in one place, `close` never retried. The rest of the module imports no libc.
///
/// `@unchecked Sendable`: the descriptor is read by one thread at a time (its owner), except
/// ``shutdown()``, which any thread may call to wake a blocked reader.
final class Socket: @unchecked Sendable {
    /// The descriptor, closed on `deinit`.
    let descriptor: Int32
    /// What `SO_RCVTIMEO` and `SO_SNDTIMEO` hold now, in seconds (0: no timeout).
    private(set) var timeout: Double = 0
    /// When every wait of the current call must be over (``monotonicSeconds()``), or `nil` to
    /// wait up to ``timeout`` each time.
    private var deadline: Double?
    /// How far the timeout may run past the deadline before a wait sets it again: a call that is
    /// over in less sets nothing (the kernel rounds timeouts to its own tick anyway).
    static let deadlineSlack = 0.001

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        _ = close(descriptor)
    }

    /// Connects to `host`:`port`, trying each address the name resolves to in turn, all within
    /// `timeout` seconds (0 waits for ever), and turns Nagle's algorithm off (`TCP_NODELAY`):
    /// a command is one small write that must leave at once.
    static func connect(host: String, port: Int, timeout: Double) throws(CacheError) -> Socket {
        let deadline = timeout > 0 ? monotonicSeconds() + timeout : nil
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw CacheError(.remoteFailure, "the host name did not resolve: \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: CacheError?
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            do throws(CacheError) {
                return try connect(to: address.pointee, deadline: deadline)
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CacheError(.remoteFailure, "the host name resolved to no address")
    }

    /// One attempt: a non-blocking `connect`, `poll` until it completes or `deadline` passes,
    /// then the socket back in blocking mode.
    private static func connect(to address: addrinfo, deadline: Double?) throws(CacheError) -> Socket {
        let descriptor = socket(address.ai_family, address.ai_socktype, address.ai_protocol)
        guard descriptor >= 0 else { throw failure("socket() failed") }
        let socket = Socket(descriptor: descriptor)
        // Not inherited by processes the app starts.
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw failure("fcntl(O_NONBLOCK) failed")
        }
        if systemConnect(descriptor, address.ai_addr, address.ai_addrlen) != 0 {
            guard errno == EINPROGRESS || errno == EINTR else { throw failure("connect() failed") }
            guard try socket.poll(events: Int16(POLLOUT), deadline: deadline) else {
                throw CacheError(.remoteFailure, "timed out")
            }
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 else {
                throw failure("getsockopt(SO_ERROR) failed")
            }
            guard pending == 0 else {
                throw CacheError(.remoteFailure, "connect() failed", errno: pending)
            }
        }
        guard fcntl(descriptor, F_SETFL, flags) == 0 else { throw failure("fcntl(blocking) failed") }
        var on: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        // Writing to a closed peer fails with EPIPE instead of killing the process.
        _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
        return socket
    }

    /// Turns TCP keepalive on: after `idle` seconds without traffic the kernel probes the peer
    /// every `interval` seconds, and after `count` unanswered probes a blocked read fails
    /// (`ETIMEDOUT`). A connection that only waits for the server's pushes thus notices a peer
    /// that vanished without closing it (a dropped route, a machine gone) instead of waiting for
    /// ever.
    func enableKeepAlive(idle: Int32, interval: Int32, count: Int32) throws(CacheError) {
        let size = socklen_t(MemoryLayout<Int32>.size)
        var on: Int32 = 1
        var idle = idle
        var interval = interval
        var count = count
        #if canImport(Glibc)
        let idleOption = TCP_KEEPIDLE
        #else
        let idleOption = TCP_KEEPALIVE
        #endif
        guard setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &on, size) == 0,
            setsockopt(descriptor, Int32(IPPROTO_TCP), idleOption, &idle, size) == 0,
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &interval, size) == 0,
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_KEEPCNT, &count, size) == 0
        else { throw Self.failure("could not turn TCP keepalive on") }
    }

    /// The keepalive settings in force: whether it is on, then idle, interval and count.
    func keepAliveSettings() -> (on: Bool, idle: Int32, interval: Int32, count: Int32) {
        func option(_ level: Int32, _ name: Int32) -> Int32 {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(descriptor, level, name, &value, &length) == 0 ? value : -1
        }
        #if canImport(Glibc)
        let idleOption = TCP_KEEPIDLE
        #else
        let idleOption = TCP_KEEPALIVE
        #endif
        let tcp = Int32(IPPROTO_TCP)
        return (
            option(SOL_SOCKET, SO_KEEPALIVE) != 0, option(tcp, idleOption), option(tcp, TCP_KEEPINTVL), option(tcp, TCP_KEEPCNT)
        )
    }

    /// Waits until the socket is ready for `events`; `false` when `deadline` passed first.
    private func poll(events: Int16, deadline: Double?) throws(CacheError) -> Bool {
        while true {
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let milliseconds = deadline.map { Int32(clamping: Int64(max(0, ($0 - Self.monotonicSeconds()) * 1000).rounded(.up))) } ?? -1
            let ready = systemPoll(&entry, 1, milliseconds)
            if ready > 0 { return true }
            if ready == 0 { return false }
            if errno != EINTR { throw Self.failure("poll failed") }
        }
    }

    /// Sets how long one `send` or `recv` may block (`SO_SNDTIMEO`, `SO_RCVTIMEO`); 0 for ever.
    func setTimeout(_ seconds: Double) throws(CacheError) {
        // A positive timeout below the clock's microsecond would read as 0, no timeout.
        let seconds = seconds > 0 ? max(seconds, 1e-6) : 0
        let whole = seconds.rounded(.down)
        var time = timeval(tv_sec: .init(whole), tv_usec: .init((seconds - whole) * 1_000_000))
        let size = socklen_t(MemoryLayout<timeval>.size)
        guard setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, size) == 0,
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &time, size) == 0
        else { throw Self.failure("could not set the socket's timeout") }
        timeout = seconds
    }

    /// Sets the moment by which every later `send` and `recv` must be over (monotonic seconds,
    /// as ``monotonicSeconds()``), or `nil` to go back to one ``timeout`` per wait: the waits
    /// of a call then share one budget, however many there are.
    func setDeadline(_ deadline: Double?) {
        self.deadline = deadline
    }

    /// Before a wait: the timeout made what is left until the deadline, unless it is that already
    /// to within ``deadlineSlack``; throws a timeout when nothing is left.
    private func armForDeadline(_ what: String) throws(CacheError) {
        guard let deadline else { return }
        let left = deadline - Self.monotonicSeconds()
        guard left > 0 else { throw CacheError(.remoteFailure, "\(what) timed out", errno: ETIMEDOUT) }
        if timeout == 0 || abs(timeout - left) > Self.deadlineSlack { try setTimeout(left) }
    }

    /// Writes every byte of `bytes`.
    func send(_ bytes: UnsafeRawBufferPointer) throws(CacheError) {
        var offset = 0
        while offset < bytes.count {
            try armForDeadline("writing a command")
            #if canImport(Glibc)
            let sent = Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            #else
            let sent = Darwin.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, 0)
            #endif
            let code = errno
            if sent >= 0 {
                offset += sent
            } else if code != EINTR {
                throw CacheError(
                    .remoteFailure, Self.isTimeout(code) ? "writing a command timed out" : "writing a command failed", errno: code)
            }
        }
    }

    /// Reads what has arrived into `buffer`, blocking until something has (or the timeout):
    /// the number of bytes read, 0 when the peer closed the connection.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(CacheError) -> Int {
        while true {
            try armForDeadline("reading a reply")
            let received = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            let code = errno
            if received >= 0 { return received }
            if code != EINTR {
                throw CacheError(.remoteFailure, Self.isTimeout(code) ? "reading a reply timed out" : "reading a reply failed", errno: code)
            }
        }
    }

    /// Shuts both directions down: a thread blocked in ``receive(into:)`` wakes and reads 0.
    /// Safe from any thread while the socket is alive.
    func shutdown() {
        #if canImport(Glibc)
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
        #else
        _ = Darwin.shutdown(descriptor, SHUT_RDWR)
        #endif
    }

    private static func isTimeout(_ code: Int32) -> Bool { code == EAGAIN || code == EWOULDBLOCK }

    /// A failure of the call that just returned, with its `errno` (read before anything else runs).
    private static func failure(_ message: @autoclosure () -> String) -> CacheError {
        let code = errno
        return CacheError(.remoteFailure, message(), errno: code)
    }

    /// The monotonic clock, in seconds: what deadlines are measured on.
    static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// What one `send` or `recv` on a non-blocking socket did.
enum SocketTransfer {
    /// This many bytes went (0 from a receive: the peer closed the connection).
    case transferred(Int)
    /// Nothing can go until the socket is ready again.
    case wouldBlock
    /// The call failed with this `errno`.
    case failed(Int32)
}

/// The non-blocking side of a socket, for a layer (TLS) that drives its own reads and writes
/// and waits with ``waitUntilReady(forWriting:deadline:)`` between them.
extension Socket {
    /// Switches the socket to non-blocking mode (`O_NONBLOCK`).
    func setNonBlocking() throws(CacheError) {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw Self.failure("fcntl(O_NONBLOCK) failed")
        }
    }

    /// Waits until the socket can be read (or written, when `forWriting`); `false` when
    /// `deadline` (in ``monotonicSeconds()``; `nil` for ever) passed first.
    func waitUntilReady(forWriting: Bool, deadline: Double?) throws(CacheError) -> Bool {
        try poll(events: Int16(forWriting ? POLLOUT : POLLIN), deadline: deadline)
    }

    /// One `send` of up to `bytes.count` bytes, `EINTR` retried.
    func sendSome(_ bytes: UnsafeRawBufferPointer) -> SocketTransfer {
        while true {
            #if canImport(Glibc)
            let sent = Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            #else
            let sent = Darwin.send(descriptor, bytes.baseAddress, bytes.count, 0)
            #endif
            let code = errno
            if sent >= 0 { return .transferred(sent) }
            if code != EINTR { return Self.isTimeout(code) ? .wouldBlock : .failed(code) }
        }
    }

    /// One `recv` into `buffer`, `EINTR` retried.
    func receiveSome(into buffer: UnsafeMutableRawBufferPointer) -> SocketTransfer {
        while true {
            let received = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            let code = errno
            if received >= 0 { return .transferred(received) }
            if code != EINTR { return Self.isTimeout(code) ? .wouldBlock : .failed(code) }
        }
    }
}

/// A pipe that one thread waits on beside a socket (``Socket/waitUntilReadable(orWoken:deadline:)``)
/// and any other thread writes a byte to (``signal()``) to wake it. Both ends are non-blocking.
final class WakePipe: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    /// A new pipe.
    /// - Throws: `CacheError.Code.remoteFailure` when the system has no descriptor left.
    init() throws(CacheError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let code = errno
            throw CacheError(.remoteFailure, "pipe() failed", errno: code)
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        (readEnd, writeEnd) = (ends[0], ends[1])
    }

    deinit {
        _ = close(readEnd)
        _ = close(writeEnd)
    }

    /// Wakes the waiting thread (or its next wait). A full pipe already wakes it, so a write
    /// that finds it full is not retried.
    func signal() {
        var byte: UInt8 = 1
        while write(writeEnd, &byte, 1) < 0, errno == EINTR {}
    }

    /// Empties the pipe after a wake.
    func drain() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while true {
            let count = withUnsafeMutableBytes(of: &bytes) { read(readEnd, $0.baseAddress, $0.count) }
            if count > 0 { continue }
            if count < 0, errno == EINTR { continue }
            return
        }
    }

    /// Waits until the pipe is signalled or `deadline` (``Socket/monotonicSeconds()``; `nil` for
    /// ever) passes; `true` when it was signalled (and is drained).
    func wait(deadline: Double?) throws(CacheError) -> Bool {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        let ready = try pollEntries(&entry, count: 1, deadline: deadline)
        if ready { drain() }
        return ready
    }

    fileprivate var descriptor: Int32 { readEnd }
}

/// What ``Socket/waitUntilReadable(orWoken:deadline:)`` saw.
struct SocketReadiness {
    /// The socket has bytes to read, or its peer closed it (a read then returns them or 0).
    var readable = false
    /// The pipe was signalled (and is drained).
    var woken = false
}

extension Socket {
    /// Waits until the socket has something to read, `wake` is signalled, or `deadline`
    /// (``monotonicSeconds()``; `nil` for ever) passes: one `poll` of both descriptors.
    func waitUntilReadable(orWoken wake: WakePipe, deadline: Double?) throws(CacheError) -> SocketReadiness {
        var entries = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        var readiness = SocketReadiness()
        guard try pollEntries(&entries, count: 2, deadline: deadline) else { return readiness }
        readiness.readable = entries[0].revents != 0
        readiness.woken = entries[1].revents != 0
        if readiness.woken { wake.drain() }
        return readiness
    }
}

/// `poll` of `count` entries until one is ready (`true`) or `deadline` passes (`false`), `EINTR`
/// retried with what is left of the wait.
private func pollEntries(_ entries: UnsafeMutablePointer<pollfd>, count: Int, deadline: Double?) throws(CacheError) -> Bool {
    while true {
        let milliseconds =
            deadline.map { Int32(clamping: Int64(max(0, ($0 - Socket.monotonicSeconds()) * 1000).rounded(.up))) } ?? -1
        let ready = systemPoll(entries, count, milliseconds)
        if ready > 0 { return true }
        if ready == 0 { return false }
        let code = errno
        if code != EINTR { throw CacheError(.remoteFailure, "poll failed", errno: code) }
    }
}

#if canImport(Glibc)
private func systemConnect(_ descriptor: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    Glibc.connect(descriptor, address, length)
}
private func systemPoll(_ entries: UnsafeMutablePointer<pollfd>, _ count: Int, _ timeout: Int32) -> Int32 {
    Glibc.poll(entries, nfds_t(count), timeout)
}
#else
private func systemConnect(_ descriptor: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    Darwin.connect(descriptor, address, length)
}
private func systemPoll(_ entries: UnsafeMutablePointer<pollfd>, _ count: Int, _ timeout: Int32) -> Int32 {
    Darwin.poll(entries, nfds_t(count), timeout)
}
#endif
