import Foundation

/// How a ``RedisRemoteStore`` speaks TLS to its server: whom it trusts, which name it expects,
/// and the certificate it shows when the server asks for one.
///
/// ```swift
/// var tls = RedisTLSOptions()  // the system's trusted roots, the store's host as the name
/// tls.certificateAuthorityFile = URL(filePath: "/etc/redis/ca.crt")
/// let redis = try RedisRemoteStore(host: "redis.internal", port: 6380, tls: tls)
/// ```
///
/// The server's certificate is verified by default: it must chain to a trusted certificate and
/// name ``serverName`` (or the store's host) in its subject alternative names; an IP address is
/// matched against the certificate's IP addresses. A host name is also sent as the server name
/// indication (SNI), so that a server behind a shared address picks the right certificate.
/// TLS 1.2 is the oldest version accepted.
///
/// The files are PEM, read once when the store is created; a file that is missing, unreadable
/// or not what it should be fails the store's initializer with `CacheError.Code.invalidOptions`
/// naming the file. The private key must not be encrypted.
public struct RedisTLSOptions: Sendable, Hashable {
    /// A PEM file of the certificate authorities that may sign the server's certificate, or
    /// `nil` (the default) for the system's trusted roots.
    public var certificateAuthorityFile: URL?
    /// The name the server's certificate must carry and the name sent as SNI, or `nil` (the
    /// default) for the store's host. Set it when connecting by address to a server whose
    /// certificate names a host (`host: "10.0.0.5"`, `serverName: "redis.internal"`).
    public var serverName: String?
    /// A PEM file of the certificate (and any intermediates) shown to a server that asks for
    /// one (`tls-auth-clients yes`), or `nil` for none. Needs ``clientKeyFile``.
    public var clientCertificateFile: URL?
    /// The PEM file of the private key of ``clientCertificateFile``, unencrypted, or `nil`.
    public var clientKeyFile: URL?
    /// **Insecure**: when `true`, the server's certificate is not verified at all, so anyone on
    /// the network path can pose as the server, read every value and change what the cache
    /// serves. `false` by default. For a test against a server with a throwaway certificate only;
    /// never in production, where ``certificateAuthorityFile`` names the test's CA instead.
    public var insecurelySkipsServerVerification: Bool

    /// TLS settings; the defaults verify the server against the system's trusted roots under the
    /// store's host name, and show no client certificate.
    /// - Parameters:
    ///   - certificateAuthorityFile: The PEM file of trusted certificate authorities, or `nil`
    ///     for the system's.
    ///   - serverName: The name the server's certificate must carry, or `nil` for the store's host.
    ///   - clientCertificateFile: The PEM file of the client's certificate, or `nil`.
    ///   - clientKeyFile: The PEM file of the client certificate's private key, or `nil`.
    public init(
        certificateAuthorityFile: URL? = nil, serverName: String? = nil, clientCertificateFile: URL? = nil, clientKeyFile: URL? = nil
    ) {
        self.certificateAuthorityFile = certificateAuthorityFile
        self.serverName = serverName
        self.clientCertificateFile = clientCertificateFile
        self.clientKeyFile = clientKeyFile
        insecurelySkipsServerVerification = false
    }

    /// What is wrong with these settings before any file is read, or `nil`.
    var problem: String? {
        if serverName?.isEmpty == true { return "the TLS server name is empty" }
        switch (clientCertificateFile, clientKeyFile) {
        case (.some(let certificate), nil):
            return "the TLS client certificate \(certificate.path) needs a client key file"
        case (nil, .some(let key)):
            return "the TLS client key \(key.path) needs a client certificate file"
        default: return nil
        }
    }
}
