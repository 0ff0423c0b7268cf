import Foundation
import Larder

#if canImport(COpenSSL)
import COpenSSL

/// A ``RedisTLSOptions`` loaded into an OpenSSL context: the trusted certificates, the client's
/// certificate and key, the verification mode. Built once per store, so that a bad file fails
/// the store's initializer rather than every connection; each connection makes its session from it.
///
/// `@unchecked Sendable`: the context is only read after `init` (OpenSSL makes sessions from a
/// configured context on any thread).
final class TLSContext: @unchecked Sendable {
    private let context: OpaquePointer
    /// The name the server's certificate must carry, when not the host connected to.
    private let serverName: String?

    /// Loads `options`.
    /// - Throws: `CacheError.Code.invalidOptions` naming the setting or the file that is wrong.
    init(_ options: RedisTLSOptions) throws(CacheError) {
        if let problem = options.problem { throw CacheError(.invalidOptions, problem) }
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw CacheError(.invalidOptions, "OpenSSL could not create a TLS context: \(Self.openSSLError())")
        }
        self.context = context
        serverName = options.serverName
        _ = larder_ssl_ctx_set_min_tls12(context)
        larder_ssl_ctx_ignore_unexpected_eof(context)
        if let file = options.certificateAuthorityFile {
            try Self.checkReadable(file, "TLS certificate authority file")
            guard SSL_CTX_load_verify_locations(context, file.path, nil) == 1 else {
                throw CacheError(
                    .invalidOptions, "the TLS certificate authority file \(file.path) holds no usable certificate: \(Self.openSSLError())")
            }
        } else if SSL_CTX_set_default_verify_paths(context) != 1 {
            throw CacheError(.invalidOptions, "the system's trusted TLS certificates could not be loaded: \(Self.openSSLError())")
        }
        if let certificate = options.clientCertificateFile, let key = options.clientKeyFile {
            try Self.checkReadable(certificate, "TLS client certificate")
            try Self.checkReadable(key, "TLS client key")
            guard SSL_CTX_use_certificate_chain_file(context, certificate.path) == 1 else {
                throw CacheError(
                    .invalidOptions, "the TLS client certificate \(certificate.path) is not a PEM certificate: \(Self.openSSLError())")
            }
            guard SSL_CTX_use_PrivateKey_file(context, key.path, SSL_FILETYPE_PEM) == 1 else {
                throw CacheError(
                    .invalidOptions, "the TLS client key \(key.path) is not an unencrypted PEM private key: \(Self.openSSLError())")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw CacheError(.invalidOptions, "the TLS client key \(key.path) does not match the certificate \(certificate.path)")
            }
        }
        SSL_CTX_set_verify(context, options.insecurelySkipsServerVerification ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nil)
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// Runs the TLS handshake over a connected `socket` to `host`, by `deadline` (in
    /// `Socket.monotonicSeconds()`; `nil` for ever): the stream commands then go over.
    /// - Throws: `CacheError.Code.remoteFailure` when the handshake fails, times out, or the
    ///   server's certificate is refused (the message says why).
    func handshake(over socket: Socket, host: String, deadline: Double?) throws(CacheError) -> any RedisTransport {
        ERR_clear_error()
        guard let session = SSL_new(context) else {
            throw CacheError(.remoteFailure, "OpenSSL could not create a TLS session: \(Self.openSSLError())")
        }
        let name = serverName ?? host
        // An address is matched against the certificate's IP addresses and sent as no SNI
        // (RFC 6066 names hosts only); a name is both checked and sent.
        if X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(session), name) != 1 {
            guard SSL_set1_host(session, name) == 1, larder_ssl_set_server_name(session, name) == 1 else {
                SSL_free(session)
                throw CacheError(.remoteFailure, "the TLS server name \"\(name)\" was refused by OpenSSL: \(Self.openSSLError())")
            }
        }
        return try TLSStream(socket: socket, session: session, deadline: deadline)
    }

    private static func checkReadable(_ file: URL, _ what: String) throws(CacheError) {
        guard FileManager.default.isReadableFile(atPath: file.path) else {
            throw CacheError(.invalidOptions, "the \(what) \(file.path) does not exist or cannot be read")
        }
    }

    /// The oldest error OpenSSL queued on this thread, as text (the queue is emptied).
    static func openSSLError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "no detail from OpenSSL" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

#else

/// TLS needs OpenSSL, which LarderRedis links on Linux only: elsewhere a store with TLS settings
/// is refused when it is created. No value of this type exists.
enum TLSContext: Sendable {
    /// Always throws: TLS is not available on this platform.
    init(_ options: RedisTLSOptions) throws(CacheError) {
        throw CacheError(.invalidOptions, "TLS is not available on this platform: LarderRedis speaks TLS on Linux only")
    }

    func handshake(over socket: Socket, host: String, deadline: Double?) throws(CacheError) -> any RedisTransport {
        switch self {}
    }
}

#endif
