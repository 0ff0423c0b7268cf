#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import Synchronization
import Testing

@testable import LarderRedis

/// The connection that async callers share (`RedisChannel`, `RedisRemoteStore.fetchValues`):
/// each caller gets its own reply, in the order of the commands, whatever happens to the others.
/// Over a server the test answers by hand (no Redis needed), then over a real Redis. The callers
/// run on threads of the test's own (``onOwnThreads(threads:_:)``), so that a busy cooperative
/// pool cannot make them late; every bound is minutes, a liveness bound, never a timing.
@Suite struct RedisChannelTests {
    let server = { (port: Int) in RedisServer(host: "127.0.0.1", port: port, username: nil, password: nil, database: 0) }

    /// `GET key` sent on `channel`, waited for `budget` seconds: the value, as a string, or the
    /// error. The channel's silence bound is ten minutes, whatever the caller's budget.
    static func get(_ channel: RedisChannel, _ key: String, budget: Double) async -> Result<String?, CacheError> {
        let deadline = Socket.monotonicSeconds() + budget
        do throws(CacheError) {
            let reply = try await channel.send(deadline: deadline, budget: 300) { output in
                RESPEncoding.appendCommand("GET", keys: [key], to: &output)
            }
            if case .string(let data) = reply { return .success(String(decoding: data, as: UTF8.self)) }
            return .success(nil)
        } catch {
            return .failure(error)
        }
    }

    @Test func aCallerThatTimesOutLeavesTheOthersTheirOwnReplies() async throws {
        try await onOwnThreads { try await callerThatTimesOutLeavesTheOthersTheirOwnReplies() }
    }

    func callerThatTimesOutLeavesTheOthersTheirOwnReplies() async throws {
        let manual = try ManualServer()
        let channel = try RedisChannel(server: server(manual.port), connectTimeout: 5)
        defer { channel.close() }
        // A gives up long before the server answers it; its reply, when it comes, is dropped.
        let a = await Self.get(channel, "a", budget: 0.2)
        guard case .failure(let error) = a else {
            Issue.record("a call the server never answered returned \(a)")
            return
        }
        #expect(error.errno == ETIMEDOUT)
        async let b = Self.get(channel, "b", budget: 600)
        await eventually("the server has both GETs") { manual.keys(connection: 0) == ["a", "b"] }
        manual.send("$1\r\nA\r\n$1\r\nB\r\n", connection: 0)
        #expect(try await b.get() == "B")
        // The stream is still in step: the next caller gets its own reply too.
        async let c = Self.get(channel, "c", budget: 600)
        await eventually("the server has the third GET") { manual.keys(connection: 0).count == 3 }
        manual.send("$1\r\nC\r\n", connection: 0)
        #expect(try await c.get() == "C")
        #expect(!channel.isBroken)
    }

    @Test func aLostConnectionFailsTheCallersStillWaitingAndNoOneGetsAnothersValue() async throws {
        try await onOwnThreads { try await lostConnectionFailsTheCallersStillWaiting() }
    }

    func lostConnectionFailsTheCallersStillWaiting() async throws {
        let manual = try ManualServer()
        let store = try RedisRemoteStore(host: "127.0.0.1", port: manual.port)
        let timeouts = RemoteTimeouts(connect: 300, command: 600)
        let keys = (0 ..< 8).map { "k\($0)" }
        let outcomes = try await withThrowingTaskGroup(of: (String, Result<[RemoteValue?], CacheError>).self) { group in
            for key in keys {
                group.addTask {
                    do throws(CacheError) {
                        return (key, .success(try await store.fetchValues(forKeys: [key], timeouts: timeouts)))
                    } catch {
                        return (key, .failure(error))
                    }
                }
            }
            await eventually("the server has every GET") { manual.keys(connection: 0).count == keys.count }
            // Replies to the first three commands, in the order they came (each value its key in
            // capitals), then the connection drops with five commands unanswered.
            let order = manual.keys(connection: 0)
            manual.send(order.prefix(3).map { "$2\r\n\($0.uppercased())\r\n" }.joined(), connection: 0)
            manual.close(connection: 0)
            var outcomes: [String: Result<[RemoteValue?], CacheError>] = [:]
            for try await (key, outcome) in group { outcomes[key] = outcome }
            return (outcomes, order)
        }
        let (results, order) = outcomes
        for key in keys {
            switch results[key] {
            case .success(let values):
                #expect(values.count == 1 && values[0].map { String(decoding: $0.data, as: UTF8.self) } == key.uppercased())
                #expect(order.prefix(3).contains(key))
            case .failure(let error):
                #expect(error.code == .remoteFailure)
                #expect(!order.prefix(3).contains(key))
            case nil: Issue.record("no outcome for \(key)")
            }
        }
        // The next call opens a new connection and gets its own value.
        async let next = store.fetchValues(forKeys: ["z"], timeouts: timeouts)
        await eventually("the server has the GET on a second connection") { manual.keys(connection: 1) == ["z"] }
        manual.send("$1\r\nZ\r\n", connection: 1)
        #expect(try await next.first??.data == Data("Z".utf8))
        // One connection served the eight concurrent callers; none came from the pool.
        #expect(store.pool.lent == 0)
    }
}

/// The same over a real Redis (`LARDER_TEST_REDIS`).
@Suite(.enabled(if: TestRedis.runs, "no Redis server: set LARDER_TEST_REDIS=host:port (.ci/run starts one)"))
struct RedisSharedConnectionTests {
    /// Liveness bounds: minutes, for a loaded machine.
    let timeouts = RemoteTimeouts(connect: 120, command: 300)

    @Test func manyConcurrentCallersEachGetTheirOwnValues() async throws {
        try await onOwnThreads { try await manyConcurrentCallers() }
    }

    func manyConcurrentCallers() async throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("shared")
        let keys = (0 ..< 256).map { "\(namespace):\($0)" }
        // No time to live: a value missing is then a wrong answer, however late the callers run.
        for key in keys { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts) }
        defer { try? store.remove(forKeys: keys, timeouts: timeouts) }
        let lentBefore = store.pool.lent
        let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
            for caller in 0 ..< 64 {
                group.addTask {
                    var wrong = 0
                    for round in 0 ..< 20 {
                        // One key, or several in one MGET, a different choice per caller and round.
                        let chosen = (0 ..< 1 + (caller + round) % 3).map { keys[(caller * 7 + round * 13 + $0 * 31) % keys.count] }
                        let values = try await store.fetchValues(forKeys: chosen, timeouts: timeouts)
                        for (key, value) in zip(chosen, values) where value?.data != Data(key.utf8) { wrong += 1 }
                        if values.count != chosen.count { wrong += 1 }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(wrong == 0)
        // Served by the shared connection: no call took a pooled one.
        #expect(store.pool.lent == lentBefore)
    }

    @Test func callersSurviveAKilledConnectionWithoutAWrongValue() async throws {
        try await onOwnThreads { try await callersSurviveAKilledConnection() }
    }

    func callersSurviveAKilledConnection() async throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("shared-kill")
        let keys = (0 ..< 64).map { "\(namespace):\($0)" }
        for key in keys { _ = try store.store(Data(key.utf8), forKey: key, expiresIn: nil, onlyIfAbsent: false, timeouts: timeouts) }
        defer { try? store.remove(forKeys: keys, timeouts: timeouts) }
        let killer = try TestRedis.store()
        let reads = ReadCounter()
        let (wrong, failed) = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for key in keys {
                group.addTask {
                    var (wrong, failed) = (0, 0)
                    for _ in 0 ..< 50 {
                        do throws(CacheError) {
                            if try await store.fetchValues(forKeys: [key], timeouts: timeouts).first??.data != Data(key.utf8) { wrong += 1 }
                        } catch {
                            failed += 1
                        }
                        reads.count.add(1, ordering: .relaxed)
                    }
                    return (wrong, failed)
                }
            }
            // Kills the shared connection three times while the callers read: its client id
            // asked on it, then `CLIENT KILL ID` from another connection.
            for share in 1 ... 3 {
                await eventually("the callers have read a share of their values") {
                    reads.count.load(ordering: .relaxed) >= share * keys.count * 50 / 4
                }
                // Asked again until it goes through: the channel taken may be the one the last
                // kill broke, before its thread saw the connection go.
                var killed = false
                for _ in 0 ..< 1000 where !killed {
                    let channel = try store.shared.channel(connectTimeout: 120)
                    let id = try? await channel.send(deadline: Socket.monotonicSeconds() + 300, budget: 300) { output in
                        RESPEncoding.appendCommand("CLIENT", keys: ["ID"], to: &output)
                    }
                    guard case .integer(let id) = id else { continue }
                    killed = (try? killer.command(["CLIENT", "KILL", "ID", String(id)], timeouts: timeouts)) != nil
                }
                #expect(killed, "kill \(share) of the shared connection")
            }
            return try await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
        #expect(wrong == 0)
        #expect(failed < keys.count * 50)
        // After the kills, every key reads back its own value (a call made before the channel
        // saw its connection go fails, and the next opens a new one).
        var values: [RemoteValue?] = []
        for _ in 0 ..< 100 {
            guard let read = try? await store.fetchValues(forKeys: keys, timeouts: timeouts) else { continue }
            values = read
            break
        }
        #expect(values.count == keys.count)
        #expect(zip(keys, values).allSatisfy { $1?.data == Data($0.utf8) })
    }
}

/// A server on 127.0.0.1 that records the keys of the `GET` commands each connection sends and
/// answers only what the test tells it to.
final class ManualServer: Sendable {
    let port: Int
    private let listener: Int32
    private let state = Mutex<(clients: [Int32], received: [[UInt8]])>(([], []))

    init() throws {
        guard let (listener, port) = listenOnLoopback(backlog: 8) else {
            throw CacheError(.ioFailure, "the manual server could not listen")
        }
        self.listener = listener
        self.port = port
        Thread { [self] in acceptLoop() }.start()
    }

    deinit {
        shutDown(listener)
        closeDescriptor(listener)
        for client in state.withLock({ $0.clients }) { closeDescriptor(client) }
    }

    /// The keys of the `GET`s (and `MGET`s) connection `index` sent so far, in order.
    func keys(connection index: Int) -> [String] {
        let bytes = state.withLock { index < $0.received.count ? $0.received[index] : [] }
        // Each command: `*N`, then N bulk strings (`$len`, the bytes); the keys are all but the first.
        var keys: [String] = []
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        var at = 0
        while at < lines.count, lines[at].hasPrefix("*"), let count = Int(lines[at].dropFirst()) {
            guard at + 2 * count < lines.count else { break }
            for argument in 1 ..< count { keys.append(lines[at + 2 * argument + 2]) }
            at += 1 + 2 * count
        }
        return keys
    }

    /// Sends `reply` on connection `index`.
    func send(_ reply: String, connection index: Int) {
        sendAll(state.withLock { $0.clients[index] }, Array(reply.utf8))
    }

    /// Closes connection `index` (both directions shut down).
    func close(connection index: Int) {
        shutDown(state.withLock { $0.clients[index] })
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let index = state.withLock { s in
                s.clients.append(client)
                s.received.append([])
                return s.received.count - 1
            }
            Thread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    guard count > 0 else { return }
                    state.withLock { $0.received[index] += buffer[..<count] }
                }
            }.start()
        }
    }
}

/// Counts the reads the callers of a test made.
private final class ReadCounter: Sendable {
    let count = Atomic<Int>(0)
}

private func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) {
    #if canImport(Glibc)
    _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    #else
    _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
    #endif
}

private func shutDown(_ descriptor: Int32) {
    _ = shutdown(descriptor, Int32(SHUT_RDWR))
}

private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
