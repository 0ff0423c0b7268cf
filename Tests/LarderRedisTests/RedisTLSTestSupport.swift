#if os(Linux)
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import LarderRedis
import LarderTestSupport
import Testing

/// What the TLS tests need: `openssl` and a `redis-server` built with TLS.
enum TLSTestEnvironment {
    /// Why the TLS tests cannot run here, or `nil` when they can (found by starting a TLS
    /// `redis-server` once, with certificates made for it).
    static let unavailableReason: String? = {
        guard PrivateRedisServer.executable != nil else { return "redis-server is not on the PATH" }
        guard executable("openssl") != nil else { return "openssl is not on the PATH" }
        do {
            let certificates = try TestCertificates()
            defer { certificates.remove() }
            let server = try PrivateTLSRedisServer(certificates)
            server.stop()
            return nil
        } catch {
            return "no TLS redis-server could be started: \(error)"
        }
    }()

    /// Whether the TLS suite runs: when it can, or when Redis is required (it then fails).
    static let runs: Bool = {
        if let unavailableReason, !TestRedis.isRequired {
            print("RedisTLSTests skipped: \(unavailableReason) (LARDER_REQUIRE_REDIS=1 makes this a failure)")
            return false
        }
        return true
    }()

    /// `name` on the PATH, or `nil`.
    static func executable(_ name: String) -> URL? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}

/// Certificates made with the `openssl` command in a folder of their own: a CA, a server
/// certificate it signed for 127.0.0.1 and localhost, a client certificate it signed, and a
/// second CA that signed nothing the server shows.
struct TestCertificates {
    let directory = TemporaryDirectory("larder-tls")

    var authority: URL { file("ca.crt") }
    var otherAuthority: URL { file("other-ca.crt") }
    var serverCertificate: URL { file("server.crt") }
    var serverKey: URL { file("server.key") }
    var clientCertificate: URL { file("client.crt") }
    var clientKey: URL { file("client.key") }

    init() throws {
        for authority in ["ca", "other-ca"] {
            try openssl(
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(authority).key",
                "-out", "\(authority).crt", "-subj", "/CN=Larder test \(authority)", "-days", "2",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        }
        try issue("server", name: "localhost", extensions: "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        try issue("client", name: "larder-client", extensions: "extendedKeyUsage=clientAuth\n")
    }

    func file(_ name: String) -> URL { directory.url.appendingPathComponent(name) }

    func remove() { directory.remove() }

    /// A key and a certificate for it, signed by `ca`.
    private func issue(_ role: String, name: String, extensions: String) throws {
        try Data(extensions.utf8).write(to: file("\(role).ext"))
        try openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(role).key", "-out", "\(role).csr",
            "-subj", "/CN=\(name)")
        try openssl(
            "x509", "-req", "-in", "\(role).csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-out", "\(role).crt", "-extfile", "\(role).ext")
    }

    private func openssl(_ arguments: String...) throws {
        guard let executable = TLSTestEnvironment.executable("openssl") else { throw CacheError(.notFound, "openssl is not on the PATH") }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory.url
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CacheError(.ioFailure, "openssl \(arguments.prefix(2).joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }
}

/// A `redis-server` of the test's own that speaks TLS only (`--port 0 --tls-port P`), with the
/// server certificate of `certificates` and their CA for client certificates.
final class PrivateTLSRedisServer {
    let port: Int
    private let process: Process
    private let log: URL

    /// Starts the server and waits until its log says it accepts connections.
    /// - Parameter authenticatesClients: `--tls-auth-clients yes`: a client must show a
    ///   certificate the CA signed.
    init(_ certificates: TestCertificates, authenticatesClients: Bool = false) throws {
        guard let executable = PrivateRedisServer.executable else { throw CacheError(.notFound, "redis-server is not on the PATH") }
        port = try PrivateRedisServer.freePort()
        log = certificates.file("redis-\(port).log")
        process = Process()
        process.executableURL = executable
        process.arguments = [
            "--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--tls-cert-file", certificates.serverCertificate.path, "--tls-key-file", certificates.serverKey.path,
            "--tls-ca-cert-file", certificates.authority.path, "--tls-auth-clients", authenticatesClients ? "yes" : "no",
            "--logfile", log.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The log, not a client of ours: whether the server came up must not depend on the TLS
        // code under test.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if text.contains("Ready to accept connections") { return }
            if !process.isRunning { throw CacheError(.remoteFailure, "redis-server with TLS exited at start: \(text.suffix(400))") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        stop()
        throw CacheError(.remoteFailure, "redis-server with TLS on port \(port) never became ready")
    }

    deinit { stop() }

    func pause() { kill(process.processIdentifier, SIGSTOP) }
    func resume() { kill(process.processIdentifier, SIGCONT) }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGCONT)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
#endif
