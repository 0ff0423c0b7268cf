#if canImport(COpenSSL)
import COpenSSL
import Larder

/// TLS over a connected ``Socket``, with OpenSSL. The socket is non-blocking: each read, write
/// and the handshake wait for it with `poll`, so that every one of them keeps its deadline.
///
/// OpenSSL reads and writes the socket through a BIO of Larder's own (``Socket/sendSome(_:)``
/// and ``Socket/receiveSome(into:)``), so that a write to a closed peer fails with `EPIPE`
/// instead of raising `SIGPIPE`, as the plain socket's writes do.
///
/// `@unchecked Sendable`: the session is used by one thread at a time (the connection's owner);
/// the one call another thread makes, ``shutdown()``, only shuts the socket down.
final class TLSStream: RedisTransport, @unchecked Sendable {
    private let socket: Socket
    private let session: OpaquePointer
    /// How long one read or write may wait; 0 for ever.
    private(set) var timeout: Double = 0
    /// When every read and write of the current call must be over, or `nil` (see
    /// ``setDeadline(_:)``).
    private var callDeadline: Double?
    /// The `errno` of the socket call that last failed inside OpenSSL, or 0.
    fileprivate var socketError: Int32 = 0

    /// Takes `session` (freed with the stream) and runs the handshake over `socket` by `deadline`.
    init(socket: Socket, session: OpaquePointer, deadline: Double?) throws(CacheError) {
        self.socket = socket
        self.session = session
        guard let method = socketMethod, let bio = BIO_new(method) else {
            throw CacheError(.remoteFailure, "OpenSSL could not create a socket BIO: \(TLSContext.openSSLError())")
        }
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        BIO_set_init(bio, 1)
        SSL_set_bio(session, bio, bio)
        try socket.setNonBlocking()
        do throws(CacheError) {
            guard try perform("the TLS handshake", deadline: deadline, { SSL_connect(session) }) == .done else {
                throw CacheError(.remoteFailure, "the server closed the connection during the TLS handshake")
            }
        } catch {
            let verdict = SSL_get_verify_result(session)
            guard verdict == X509_V_OK else {
                let reason = String(cString: X509_verify_cert_error_string(verdict))
                throw CacheError(.remoteFailure, "the server's TLS certificate was refused: \(reason)")
            }
            throw error
        }
    }

    deinit {
        SSL_free(session)
    }

    func setTimeout(_ seconds: Double) throws(CacheError) {
        timeout = seconds
    }

    func setDeadline(_ deadline: Double?) {
        callDeadline = deadline
    }

    func send(_ bytes: UnsafeRawBufferPointer) throws(CacheError) {
        var offset = 0
        let deadline = self.deadline
        while offset < bytes.count {
            var written = 0
            let outcome = try perform("writing a command", deadline: deadline) {
                SSL_write_ex(session, bytes.baseAddress! + offset, bytes.count - offset, &written)
            }
            guard outcome == .done else { throw CacheError(.remoteFailure, "writing a command failed: the server closed the connection") }
            offset += written
        }
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(CacheError) -> Int {
        var read = 0
        let outcome = try perform("reading a reply", deadline: deadline) { SSL_read_ex(session, buffer.baseAddress, buffer.count, &read) }
        return outcome == .ended ? 0 : read
    }

    func shutdown() {
        socket.shutdown()
    }

    /// The earlier of the call's deadline and one ``timeout`` from now.
    private var deadline: Double? {
        let perWait = timeout > 0 ? Socket.monotonicSeconds() + timeout : nil
        guard let callDeadline else { return perWait }
        return min(callDeadline, perWait ?? callDeadline)
    }

    private enum Outcome { case done, ended }

    /// Runs `operation` (an OpenSSL call returning 1 on success) until it succeeds, waiting for
    /// the socket whenever OpenSSL needs it, by `deadline`; `.ended` when the peer closed.
    private func perform(_ what: String, deadline: Double?, _ operation: () -> Int32) throws(CacheError) -> Outcome {
        while true {
            ERR_clear_error()
            socketError = 0
            let result = operation()
            if result == 1 { return .done }
            let code = SSL_get_error(session, result)
            switch code {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                guard try socket.waitUntilReady(forWriting: code == SSL_ERROR_WANT_WRITE, deadline: deadline) else {
                    throw CacheError(.remoteFailure, "\(what) timed out")
                }
            case SSL_ERROR_ZERO_RETURN:
                return .ended
            case SSL_ERROR_SYSCALL where socketError != 0:
                throw CacheError(.remoteFailure, "\(what) failed", errno: socketError)
            case SSL_ERROR_SYSCALL:
                return .ended
            default:
                throw CacheError(.remoteFailure, "\(what) failed: \(TLSContext.openSSLError())")
            }
        }
    }

    /// The BIO callbacks' way to the stream.
    fileprivate static func from(_ bio: OpaquePointer?) -> TLSStream? {
        guard let bio, let data = BIO_get_data(bio) else { return nil }
        return Unmanaged<TLSStream>.fromOpaque(data).takeUnretainedValue()
    }

    /// What a BIO callback returns for `transfer`, with the retry flag OpenSSL reads.
    fileprivate func bioResult(_ transfer: SocketTransfer, bio: OpaquePointer?, reading: Bool) -> Int32 {
        larder_bio_clear_retry_flags(bio)
        switch transfer {
        case .transferred(let count):
            return Int32(count)
        case .wouldBlock:
            if reading { larder_bio_set_retry_read(bio) } else { larder_bio_set_retry_write(bio) }
            return -1
        case .failed(let code):
            socketError = code
            return -1
        }
    }

    fileprivate var bioSocket: Socket { socket }
}

/// OpenSSL's way to the socket: reads and writes through ``Socket``, which never raises
/// `SIGPIPE`. Made once; `nil` only when OpenSSL cannot allocate it.
nonisolated(unsafe) private let socketMethod: OpaquePointer? = {
    guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "larder socket") else { return nil }
    _ = BIO_meth_set_write(method) { bio, data, length in
        guard let stream = TLSStream.from(bio), let data else { return -1 }
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(length))
        return stream.bioResult(stream.bioSocket.sendSome(bytes), bio: bio, reading: false)
    }
    _ = BIO_meth_set_read(method) { bio, data, length in
        guard let stream = TLSStream.from(bio), let data else { return -1 }
        let buffer = UnsafeMutableRawBufferPointer(start: data, count: Int(length))
        return stream.bioResult(stream.bioSocket.receiveSome(into: buffer), bio: bio, reading: true)
    }
    // OpenSSL flushes after each record it writes; every other control is unsupported here.
    _ = BIO_meth_set_ctrl(method) { _, command, _, _ in command == BIO_CTRL_FLUSH ? 1 : 0 }
    return method
}()
#endif
