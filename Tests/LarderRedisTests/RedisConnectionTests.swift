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

@testable import LarderRedis

/// The connection and the store over a scripted TCP server: what breaks a connection and what
/// does not, timeouts, the handshake on the wire, and invalid settings. No Redis needed.
@Suite struct RedisConnectionTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    func server(port: Int, host: String = "127.0.0.1", password: String? = nil, database: Int = 0) -> RedisServer {
        RedisServer(host: host, port: port, username: nil, password: password, database: database)
    }

    @Test func anErrorReplyLeavesTheConnectionUsable() throws {
        let scripted = try ScriptedServer(["-ERR nope\r\n", "+PONG\r\n"])
        defer { scripted.stop() }
        let connection = try RedisConnection.open(server(port: scripted.port), timeout: 5)
        try connection.setCommandTimeout(5)
        #expect(try connection.command(RedisArguments(["NOPE"])) == .error("ERR nope"))
        #expect(!connection.isBroken)
        #expect(try connection.command(RedisArguments(["PING"])) == .status("PONG"))
        #expect(scripted.received(0) == Array("*1\r\n$4\r\nNOPE\r\n*1\r\n$4\r\nPING\r\n".utf8))
    }

    @Test func aGarbledReplyBreaksTheConnectionForGood() throws {
        let scripted = try ScriptedServer(["+OK\r\n", "!garbage\r\n", "+OK\r\n"])
        defer { scripted.stop() }
        let connection = try RedisConnection.open(server(port: scripted.port), timeout: 5)
        try connection.setCommandTimeout(5)
        #expect(try connection.command("GET", key: "k") == .status("OK"))
        #expect(throws: CacheError.self) { try connection.command("GET", key: "k") }
        #expect(connection.isBroken)
        // Never sent: the stream is at an unknown place.
        do throws(CacheError) {
            _ = try connection.command("GET", key: "k")
            Issue.record("a broken connection sent a command")
        } catch {
            #expect(error.message == "the Redis connection is broken")
        }
        #expect(scripted.received(0) == Array(String(repeating: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", count: 2).utf8))
    }

    @Test func aReadOfSeveralKeysIsOneMGETAndItsErrorReplyIsThrown() throws {
        let scripted = try ScriptedServer(["*3\r\n$1\r\nx\r\n$-1\r\n$0\r\n\r\n", "-ERR denied\r\n", "$1\r\ny\r\n"])
        defer { scripted.stop() }
        let store = try RedisRemoteStore(host: "127.0.0.1", port: scripted.port)
        // Keys go out as their UTF-8 bytes, each with its length: spaces, accents, empty.
        let found = try store.values(forKeys: ["a", "clé b", ""], timeouts: timeouts)
        #expect(found.map { $0?.data } == [Data("x".utf8), nil, Data()])
        do throws(CacheError) {
            _ = try store.values(forKeys: ["a", "b"], timeouts: timeouts)
            Issue.record("an error reply to MGET was not thrown")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.message == "Redis answered MGET: ERR denied")
        }
        // An error reply leaves the connection usable: the next read goes out on it.
        #expect(try store.values(forKeys: ["c"], timeouts: timeouts).first??.data == Data("y".utf8))
        #expect(scripted.accepted == 1)
        let sent =
            "*4\r\n$4\r\nMGET\r\n$1\r\na\r\n$6\r\nclé b\r\n$0\r\n\r\n" + "*3\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n"
            + "*2\r\n$3\r\nGET\r\n$1\r\nc\r\n"
        #expect(scripted.received(0) == Array(sent.utf8))
    }

    @Test func aBrokenConnectionIsNeverPooledAgain() throws {
        let scripted = try ScriptedServer(["+PONG\r\n", "@3\r\n", "+PONG\r\n"])
        defer { scripted.stop() }
        let store = try RedisRemoteStore(host: "127.0.0.1", port: scripted.port)
        // `command`, not `ping`: a ping sends itself again on a new connection after a failure.
        try store.command(["PING"], timeouts: timeouts)
        #expect(throws: CacheError.self) { try store.command(["PING"], timeouts: timeouts) }
        // The pool dropped the connection that broke: this ping opens a second one.
        try store.command(["PING"], timeouts: timeouts)
        #expect(scripted.accepted == 2)
    }

    @Test func aCommandWithoutAnAnswerTimesOutAndBreaksTheConnection() throws {
        let scripted = try ScriptedServer([])
        defer { scripted.stop() }
        let connection = try RedisConnection.open(server(port: scripted.port), timeout: 5)
        try connection.setCommandTimeout(0.1)
        do throws(CacheError) {
            _ = try connection.command(RedisArguments(["PING"]))
            Issue.record("a command without an answer returned")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.message == "reading a reply timed out")
        }
        #expect(connection.isBroken)
    }

    @Test func aRefusedConnectionThrowsWithItsErrno() throws {
        let port = try PrivateRedisServer.freePort()
        do throws(CacheError) {
            _ = try RedisConnection.open(server(port: port), timeout: 5)
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.code == .remoteFailure)
            #expect(error.errno == ECONNREFUSED)
            #expect(error.message.contains("could not connect to Redis at 127.0.0.1:\(port)"))
        }
        #expect(throws: CacheError.self) { try RedisConnection.open(server(port: 6379, host: "no-such-host.invalid"), timeout: 5) }
    }

    @Test func shuttingTheSocketDownWakesABlockedReader() throws {
        let scripted = try ScriptedServer([])
        defer { scripted.stop() }
        let connection = try RedisConnection.open(server(port: scripted.port), timeout: 5)
        try connection.setCommandTimeout(0)  // waits for ever, as a subscription does
        let outcome = Mutex<CacheError?>(nil)
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            do throws(CacheError) {
                _ = try connection.readReply()
            } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        reader.start()
        connection.shutdownSocket()
        // A guard against hanging the suite, not a timing assertion.
        #expect(done.wait(timeout: .now() + 120) == .success)
        #expect(outcome.withLock { $0?.code } == .remoteFailure)
        #expect(connection.isBroken)
    }

    @Test func theHandshakeAuthenticatesAndSelectsInOneWrite() throws {
        let scripted = try ScriptedServer(["+OK\r\n+OK\r\n", "+PONG\r\n"])
        defer { scripted.stop() }
        let connection = try RedisConnection.open(server(port: scripted.port, password: "s3cret", database: 3), timeout: 5)
        #expect(try connection.command(RedisArguments(["PING"])) == .status("PONG"))
        let handshake = "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"
        #expect(scripted.received(0) == Array((handshake + "*1\r\n$4\r\nPING\r\n").utf8))
    }

    @Test func aRefusedHandshakeNamesTheCommandNeverTheSecret() throws {
        let scripted = try ScriptedServer(["-WRONGPASS invalid username-password pair\r\n"])
        defer { scripted.stop() }
        do throws(CacheError) {
            _ = try RedisConnection.open(server(port: scripted.port, password: "s3cret"), timeout: 5)
            Issue.record("a refused AUTH opened a connection")
        } catch {
            #expect(error.message.contains("refused AUTH: WRONGPASS"))
            #expect(!error.message.contains("s3cret"))
        }
    }

    @Test(arguments: [
        ("host", "the Redis host is empty"),
        ("port0", "a Redis port is from 1 to 65535, not 0"),
        ("port65536", "a Redis port is from 1 to 65535, not 65536"),
        ("database", "a Redis database index is at least 0, not -1"),
        ("pool", "a Redis connection pool size is at least 1, not 0"),
        ("address", "a Redis address is host:port, as in 127.0.0.1:6379, not \"localhost\""),
    ])
    func invalidSettingsThrowInvalidOptions(_ setting: String, _ message: String) {
        do throws(CacheError) {
            switch setting {
            case "host": _ = try RedisRemoteStore(host: "")
            case "port0": _ = try RedisRemoteStore(port: 0)
            case "port65536": _ = try RedisRemoteStore(port: 65536)
            case "database": _ = try RedisRemoteStore(database: -1)
            case "pool": _ = try RedisRemoteStore(poolSize: 0)
            default: _ = try RedisRemoteStore(address: "localhost")
            }
            Issue.record("\(setting): accepted")
        } catch {
            #expect(error.code == .invalidOptions)
            #expect(error.message == message)
        }
    }

    @Test func validSettingsAreKept() throws {
        let store = try RedisRemoteStore(address: "10.0.0.5:6380", database: 15, poolSize: 1)
        #expect((store.host, store.port, store.database, store.poolSize) == ("10.0.0.5", 6380, 15, 1))
    }
}
