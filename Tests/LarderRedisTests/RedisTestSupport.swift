#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import LarderRedis
import LarderTestSupport
import Synchronization
import Testing

/// The server the tests use: `LARDER_TEST_REDIS` (`host:port`), set by `.ci/run`.
enum TestRedis {
    static let address = ProcessInfo.processInfo.environment["LARDER_TEST_REDIS"].flatMap { $0.isEmpty ? nil : $0 }
    static let isRequired = ProcessInfo.processInfo.environment["LARDER_REQUIRE_REDIS"] == "1"
    /// Whether the suites run: with a server, or without one when it is required (they then fail).
    static let runs = address != nil || isRequired

    /// The store for the test server; records an issue (the test fails) when there is none.
    static func store(sourceLocation: SourceLocation = #_sourceLocation) throws -> RedisRemoteStore {
        guard let address, let store = try? RedisRemoteStore(address: address) else {
            Issue.record("LARDER_REQUIRE_REDIS=1 but LARDER_TEST_REDIS is not a host:port", sourceLocation: sourceLocation)
            throw CacheError(.remoteFailure, "no test Redis server")
        }
        return store
    }
}

/// A fresh namespace per test, so that tests running at once never share keys.
func uniqueNamespace(_ test: String) -> String { "larder-test-\(test)-\(UUID().uuidString.prefix(8))" }

/// Options for a cache on `store` in `directory`, with generous timeouts for a loaded machine.
func redisCacheOptions(
    _ directory: URL, store: any RemoteStore, namespace: String, events: (@Sendable (RemoteEvent) -> Void)? = nil,
    configure: (inout RemoteTierOptions) -> Void = { _ in }
) -> HybridCacheOptions {
    var options = HybridCacheOptions(directory: directory)
    var remote = RemoteTierOptions(store: store, namespace: namespace)
    remote.connectTimeout = 5
    remote.commandTimeout = 5
    remote.eventHandler = events
    configure(&remote)
    options.remote = remote
    return options
}

/// Events collected from a cache's remote tier.
final class EventLog: Sendable {
    private let events = Mutex<[RemoteEvent]>([])
    var handler: @Sendable (RemoteEvent) -> Void { { [self] event in events.withLock { $0.append(event) } } }
    func count(_ matches: (RemoteEvent) -> Bool) -> Int { events.withLock { $0.filter(matches).count } }
    var subscribed: Int { count { if case .subscribed = $0 { true } else { false } } }
    var lost: Int { count { if case .subscriptionLost = $0 { true } else { false } } }
    var restored: Int { count { if case .subscriptionRestored = $0 { true } else { false } } }
}

/// Polls `condition` every 10 ms for up to two minutes (a loaded machine); records an issue if
/// it never holds. Not a timing assertion: only that it happens at all.
func waitUntil(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) {
    let deadline = Date().addingTimeInterval(120)
    while Date() < deadline {
        if condition() { return }
        Thread.sleep(forTimeInterval: 0.01)
    }
    Issue.record("never happened: \(what)", sourceLocation: sourceLocation)
}

/// A `redis-server` of the test's own, on a free port, for the tests that stop or kill it.
final class PrivateRedisServer {
    let port: Int
    private(set) var process: Process
    /// Where the server keeps its append-only file, when it persists (`nil`: it keeps nothing).
    let persistenceDirectory: URL?

    /// `redis-server` on the PATH, or `nil`.
    static var executable: URL? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("redis-server")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// Starts a server on a free port and waits until it answers PING. With a
    /// `persistenceDirectory`, every write is in its append-only file (`fsync` each time) before
    /// the server answers it, and a restart after `killNow()` loads the file.
    init(executable: URL, persistenceDirectory: URL? = nil) throws {
        port = try Self.freePort()
        self.persistenceDirectory = persistenceDirectory
        process = try Self.launch(executable, port: port, persistenceDirectory: persistenceDirectory)
        try waitForPing()
    }

    var address: String { "127.0.0.1:\(port)" }

    /// Starts the server again on the same port (after `kill()`).
    func restart() throws {
        process = try Self.launch(process.executableURL!, port: port, persistenceDirectory: persistenceDirectory)
        try waitForPing()
    }

    func pause() { kill(process.processIdentifier, SIGSTOP) }
    func resume() { kill(process.processIdentifier, SIGCONT) }

    func killNow() {
        kill(process.processIdentifier, SIGCONT)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func stop() {
        guard process.isRunning else { return }
        killNow()
    }

    private func waitForPing() throws {
        let store = try RedisRemoteStore(host: "127.0.0.1", port: port)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try? store.ping(timeouts: RemoteTimeouts(connect: 1, command: 1))) != nil { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw CacheError(.remoteFailure, "the private redis-server on port \(port) never answered PING")
    }

    private static func launch(_ executable: URL, port: Int, persistenceDirectory: URL?) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no"]
        if let persistenceDirectory {
            process.arguments! += ["--dir", persistenceDirectory.path, "--appendonly", "yes", "--appendfsync", "always"]
        } else {
            process.arguments! += ["--appendonly", "no"]
        }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// A port the kernel just handed out and released.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CacheError(.ioFailure, "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw CacheError(.ioFailure, "bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
