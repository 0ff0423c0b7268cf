#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Larder
import LarderTestSupport
import Synchronization
import Testing

/// A Redis Cluster of the test's own on loopback: `redis-server --cluster-enabled yes` processes on
/// free ports (each with its cluster bus on another free port), joined by `redis-cli --cluster
/// create`; with certificates, every node speaks TLS only, to clients, to the other nodes and
/// to its replicas. Every server is killed by its pid in ``stop()``.
final class LocalRedisCluster {
    /// `redis-server` and `redis-cli` on the PATH, or `nil` when either is missing.
    static let executables: (server: URL, cli: URL)? = {
        func find(_ name: String) -> URL? {
            for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
                let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            }
            return nil
        }
        guard let server = find("redis-server"), let cli = find("redis-cli") else { return nil }
        return (server, cli)
    }()

    /// Whether the cluster suites run: with both programs, or without them when Redis is
    /// required (they then fail).
    static let runs = executables != nil || TestRedis.isRequired

    private(set) var ports: [Int] = []
    /// The nodes' ports and their cluster buses' ports.
    private var takenPorts: Set<Int> = []
    private let directory: TemporaryDirectory
    private var processes: [Int: Process] = [:]
    private let cli: URL
    private let server: URL
    /// What each node and each `redis-cli` run are given to speak TLS, or `nil` for plain TCP.
    private let tls: TLSArguments?

    /// The options of `redis-server` that make a node speak TLS only, and those of `redis-cli`
    /// that make it speak TLS to the nodes.
    struct TLSArguments {
        var server: [String]
        var cli: [String]
    }

    /// Starts `masters` masters, each with `replicasEach` replicas, creates the cluster and
    /// waits until every node says `cluster_state:ok` and knows every other node. With
    /// `tls`, the nodes listen on TLS ports only (`--port 0 --tls-port P --tls-cluster yes
    /// --tls-replication yes` and `tls.server`).
    init(masters: Int = 3, replicasEach: Int = 0, tls: TLSArguments? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let executables = Self.executables else {
            Issue.record("LARDER_REQUIRE_REDIS=1 but redis-server or redis-cli is not on the PATH", sourceLocation: sourceLocation)
            throw CacheError(.remoteFailure, "no redis-server or redis-cli")
        }
        cli = executables.cli
        server = executables.server
        self.tls = tls
        directory = TemporaryDirectory()
        do {
            for _ in 0 ..< masters * (1 + replicasEach) { try startNode(executables.server) }
            let create = try runCLI(
                ["--cluster", "create"] + ports.map { "127.0.0.1:\($0)" } + ["--cluster-replicas", String(replicasEach), "--cluster-yes"])
            guard create.status == 0 else { throw CacheError(.remoteFailure, "redis-cli --cluster create failed: \(create.output)") }
            try waitUntilHealthy()
        } catch {
            stop()
            throw error
        }
    }

    /// `host:port` of every node.
    var addresses: [String] { ports.map { "127.0.0.1:\($0)" } }

    /// Waits until every running node reports `cluster_state:ok` and that all slots are served,
    /// and every replica's link to its master is up (a replica still syncing can miss writes).
    func waitUntilHealthy() throws {
        try waitFor("the cluster is ok on every node") {
            processes.keys.allSatisfy { port in
                guard let info = try? run(port, "CLUSTER", "INFO"), let replication = try? run(port, "INFO", "replication") else {
                    return false
                }
                return info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
                    && info.contains("cluster_known_nodes:\(ports.count)")
                    && (replication.contains("role:master") || replication.contains("master_link_status:up"))
            }
        }
    }

    /// Runs `redis-cli -p port arguments...` and returns its output, trimmed.
    @discardableResult
    func run(_ port: Int, _ arguments: String...) throws -> String { try run(port, arguments: arguments) }

    /// Runs `redis-cli -p port arguments...` and returns its output, trimmed.
    @discardableResult
    func run(_ port: Int, arguments: [String]) throws -> String {
        let result = try runCLI(["-p", String(port)] + arguments)
        guard result.status == 0 else {
            throw CacheError(.remoteFailure, "redis-cli \(arguments.joined(separator: " ")): \(result.output)")
        }
        return result.output
    }

    /// The node's id (`CLUSTER MYID`).
    func id(_ port: Int) throws -> String { try run(port, "CLUSTER", "MYID") }

    /// How many keys the node holds (`DBSIZE`).
    func keyCount(_ port: Int) throws -> Int { Int(try run(port, "DBSIZE")) ?? -1 }

    /// Moves the empty or emptied `slot` from the master at `source` to the one at `target` as
    /// Redis's resharding does (importing on the target, migrating on the source, then the owner
    /// named on the target first, which bumps its epoch so that its claim wins over any older
    /// gossip), and waits until every master names `target` as its owner.
    func assignSlot(_ slot: Int, from source: Int, to target: Int, alreadyMigrating: Bool = false) throws {
        let (sourceID, targetID) = (try id(source), try id(target))
        if !alreadyMigrating {
            try run(target, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID)
            try run(source, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID)
        }
        for port in [target, source] + ports.filter({ $0 != target && $0 != source }) {
            try run(port, "CLUSTER", "SETSLOT", String(slot), "NODE", targetID)
        }
        try waitFor("every node names \(target) the owner of slot \(slot)") {
            processes.keys.allSatisfy { port in (try? masterPort(ofSlot: slot, askedPort: port)) == target }
        }
    }

    /// Starts one more node, joins it to the cluster as a master serving no slot (`redis-cli
    /// --cluster add-node`), waits until every node knows it, and returns its port.
    func addMaster() throws -> Int {
        try startNode(server)
        let port = ports[ports.count - 1]
        let added = try runCLI(["--cluster", "add-node", "127.0.0.1:\(port)", addresses[0]])
        guard added.status == 0 else { throw CacheError(.remoteFailure, "redis-cli --cluster add-node failed: \(added.output)") }
        try waitUntilHealthy()
        return port
    }

    /// Starts moving `slot` from the master at `source` to the one at `target`, as Redis's
    /// resharding does: importing on the target, then migrating on the source. Until
    /// ``migrateKeys(ofSlot:from:to:)`` moved a key, the source serves it; after, the source
    /// answers `ASK` for it.
    func beginMigrating(_ slot: Int, from source: Int, to target: Int) throws {
        try run(target, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", try id(source))
        try run(source, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", try id(target))
    }

    /// Moves every key of `slot` from `source` to `target` in one `MIGRATE` (so that no
    /// multi-key command on the slot finds it half moved); returns how many there were.
    @discardableResult
    func migrateKeys(ofSlot slot: Int, from source: Int, to target: Int) throws -> Int {
        let keys = try run(source, "CLUSTER", "GETKEYSINSLOT", String(slot), "1000").split(separator: "\n").map(String.init)
        guard !keys.isEmpty else { return 0 }
        let answer = try run(source, arguments: ["MIGRATE", "127.0.0.1", String(target), "", "0", "60000", "KEYS"] + keys)
        guard answer == "OK" else { throw CacheError(.remoteFailure, "MIGRATE of slot \(slot) answered \(answer)") }
        return keys.count
    }

    /// The port of the master serving `slot`, as the node at `askedPort` sees it.
    func masterPort(ofSlot slot: Int, askedPort: Int) throws -> Int? {
        for line in try run(askedPort, "CLUSTER", "NODES").split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 9, fields[2].contains("master"), !fields[2].contains("fail") else { continue }
            for range in fields[8...] {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                if bounds.count == 1 ? bounds[0] == slot : bounds.count == 2 && (bounds[0] ... bounds[1]).contains(slot) {
                    let address = fields[1].split(separator: "@")[0]
                    return Int(address.split(separator: ":").last ?? "")
                }
            }
        }
        return nil
    }

    /// How often the node answered a command named `name`, from `INFO commandstats` (0 if never).
    func calls(_ port: Int, command name: String) throws -> Int {
        try stat(port, section: "commandstats", prefix: "cmdstat_\(name):calls=")
    }

    /// How often the node answered with the error `prefix` (`MOVED`, `ASK`), from `INFO errorstats`.
    func errors(_ port: Int, _ prefix: String) throws -> Int {
        try stat(port, section: "errorstats", prefix: "errorstat_\(prefix):count=")
    }

    private func stat(_ port: Int, section: String, prefix: String) throws -> Int {
        for line in try run(port, "INFO", section).split(whereSeparator: \.isNewline) where line.hasPrefix(prefix) {
            return Int(line.dropFirst(prefix.count).prefix { $0.isNumber }) ?? 0
        }
        return 0
    }

    /// Stops the node at `port` (SIGSTOP): it keeps its connections but answers nothing.
    func pauseNode(_ port: Int) {
        if let process = processes[port] { kill(process.processIdentifier, SIGSTOP) }
    }

    /// Lets the node at `port` run again (SIGCONT).
    func resumeNode(_ port: Int) {
        if let process = processes[port] { kill(process.processIdentifier, SIGCONT) }
    }

    /// Kills the node at `port` (SIGKILL) and waits for it to exit.
    func killNode(_ port: Int) {
        guard let process = processes.removeValue(forKey: port) else { return }
        kill(process.processIdentifier, SIGKILL)
        kill(process.processIdentifier, SIGCONT)
        process.waitUntilExit()
    }

    /// Kills every node still running, by pid, and removes the folder.
    func stop() {
        for port in Array(processes.keys) { killNode(port) }
        directory.remove()
    }

    /// Starts one node on free ports and waits until it answers. A free port can be taken by
    /// another process (another test's server, or a connection's local port) before the node
    /// binds it; a node that exits for that is started again on other ports.
    private func startNode(_ executable: URL) throws {
        for _ in 0 ..< 10 {
            var port = try PrivateRedisServer.freePort()
            var busPort = try PrivateRedisServer.freePort()
            while takenPorts.contains(port) { port = try PrivateRedisServer.freePort() }
            while busPort == port || takenPorts.contains(busPort) { busPort = try PrivateRedisServer.freePort() }
            let process = try launch(executable, port: port, busPort: busPort)
            try waitFor("node \(port) answers PING or exits") { !process.isRunning || (try? run(port, "PING")) == "PONG" }
            if process.isRunning {
                ports.append(port)
                takenPorts.formUnion([port, busPort])
                return
            }
            processes[port] = nil
        }
        throw CacheError(.remoteFailure, "no node of the cluster could bind its ports in 10 tries")
    }

    private func launch(_ executable: URL, port: Int, busPort: Int) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.currentDirectoryURL = directory.url
        let listening: [String]
        if let tls {
            listening = ["--port", "0", "--tls-port", String(port), "--tls-cluster", "yes", "--tls-replication", "yes"] + tls.server
        } else {
            listening = ["--port", String(port)]
        }
        process.arguments =
            listening + [
                "--cluster-port", String(busPort), "--bind", "127.0.0.1",
                "--cluster-enabled", "yes", "--cluster-config-file", directory.url.appendingPathComponent("nodes-\(port).conf").path,
                "--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no", "--daemonize", "no",
            ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        processes[port] = process
        return process
    }

    /// `redis-cli -p port arguments...` as a job that any thread may run later (a store's test
    /// hook, which must not hold the cluster), returning the output, trimmed.
    func job(_ port: Int, arguments: [String]) -> @Sendable () throws -> String {
        let (cli, options) = (cli, tls?.cli ?? [])
        return {
            let result = try Self.runCLI(cli, options + ["-p", String(port)] + arguments)
            guard result.status == 0 else {
                throw CacheError(.remoteFailure, "redis-cli \(arguments.joined(separator: " ")): \(result.output)")
            }
            return result.output
        }
    }

    private func runCLI(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try Self.runCLI(cli, (tls?.cli ?? []) + arguments)
    }

    /// Runs `redis-cli arguments...`; one that has not finished within ``cliBound`` seconds (a
    /// node that accepts but never answers) is killed, and the call throws naming it.
    private static func runCLI(_ cli: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = cli
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let watchdog = CLIWatchdog(process)
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.cliBound) { watchdog.killIfRunning() }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        // The output ends when the process does: no kill after this, before its id can be reused.
        let killed = watchdog.exited()
        process.waitUntilExit()
        let text = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !killed else {
            throw CacheError(
                .remoteFailure,
                "redis-cli \(arguments.joined(separator: " ")) did not finish within \(Int(Self.cliBound)) s; killed: \(text)")
        }
        return (process.terminationStatus, text)
    }

    /// How long one `redis-cli` run may take (`--cluster create` included) on a loaded machine.
    static let cliBound: Double = 300

    /// Polls `condition` every 20 ms for up to two minutes; throws if it never holds.
    private func waitFor(_ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            if condition() { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw CacheError(.remoteFailure, "never happened: \(what)")
    }
}

/// Kills a `redis-cli` run that outlived its bound, unless it exited first.
private final class CLIWatchdog: Sendable {
    /// The process id while the run goes on; `nil` once it exited or was killed.
    private let state = Mutex<(pid: Int32?, killed: Bool)>((nil, false))

    init(_ process: Process) {
        state.withLock { $0.pid = process.processIdentifier }
    }

    /// Kills the process if it has not exited yet (its pid is still the run's: not yet reaped).
    func killIfRunning() {
        state.withLock { state in
            guard let pid = state.pid else { return }
            kill(pid, SIGKILL)
            state.killed = true
        }
    }

    /// Marks the run over (no kill after this); whether the watchdog killed it.
    func exited() -> Bool {
        state.withLock { state in
            state.pid = nil
            return state.killed
        }
    }
}
