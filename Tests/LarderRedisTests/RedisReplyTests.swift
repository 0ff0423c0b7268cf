import Foundation
import Larder
@testable import LarderRedis
import LarderTestSupport
import Testing

/// Replies from a real server: each string is a `Data` of its own, so it outlives the read, the
/// connection's buffer and the array it came in.
@Suite(.enabled(if: TestRedis.runs, "no Redis server: set LARDER_TEST_REDIS=host:port (.ci/run starts one)"))
struct RedisReplyTests {
    let timeouts = RemoteTimeouts(connect: 5, command: 5)

    func randomValue(_ size: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0 ..< size).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
    }

    func connection() throws -> RedisConnection {
        let store = try TestRedis.store()
        return try RedisConnection.open(
            RedisServer(host: store.host, port: store.port, username: nil, password: nil, database: 0), timeout: 5)
    }

    @Test func aStringReplyOutlivesItsConnection() throws {
        let key = uniqueNamespace("reply")
        let value = randomValue(4096)
        var connection: RedisConnection? = try connection()
        try connection!.setCommandTimeout(5)
        var set = RedisArguments(["SET", key])
        set.append(value)
        #expect(try connection!.command(set) == .status("OK"))
        let reply = try connection!.command(RedisArguments(["GET", key]))
        let many = try connection!.command(RedisArguments(["MGET", key, key + ":missing", key]))
        _ = try connection!.command(RedisArguments(["UNLINK", key]))
        connection = nil  // the socket and the read buffer go
        #expect(reply == .string(value))
        guard case .string(let data) = reply else { return }
        #expect(data.startIndex == 0 && data.count == 4096)
        // Each value of the array owns its bytes: keep one, drop the rest.
        guard case .array(var parts) = many else {
            Issue.record("MGET answered \(many)")
            return
        }
        #expect(parts.count == 3 && parts[1] == .null)
        let last = parts.removeLast()
        parts = []
        #expect(last == .string(value))
    }

    @Test func theStoresValuesOutliveTheStore() throws {
        let key = uniqueNamespace("values")
        let value = randomValue(4096)
        var store: RedisRemoteStore? = try TestRedis.store()
        #expect(try store!.store(value, forKey: key, expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts))
        let one = try store!.values(forKeys: [key], timeouts: timeouts)
        let two = try store!.values(forKeys: [key, key + ":missing"], timeouts: timeouts)
        try store!.remove(forKeys: [key], timeouts: timeouts)
        store = nil  // the pooled connections go with it
        #expect(one.map { $0?.data } == [value])
        #expect(two.map { $0?.data } == [value, nil])
    }

    @Test(arguments: ["damaged", "short", "foreign"])
    func aBadFrameFromRedisIsAMiss(_ kind: String) throws {
        let store = try TestRedis.store()
        let namespace = uniqueNamespace("bad-frame")
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let cache = try HybridCache(options: redisCacheOptions(directory.url, store: store, namespace: namespace))
        defer {
            try? cache.removeAll()
            cache.close()
        }
        var frame = RemotePayload.encode(randomValue(4096), expiryMilliseconds: nil, isLocked: false)
        switch kind {
        case "damaged": frame[frame.count / 2] ^= 0x10
        case "short": frame = frame.prefix(RemotePayload.headerSize - 1)
        default: frame = Data("not a Larder frame, but long enough".utf8)
        }
        #expect(try store.store(frame, forKey: "\(namespace):v:k", expiresIn: 60_000, onlyIfAbsent: false, timeouts: timeouts))
        #expect(try cache.value(forKey: "k") == nil)
        #expect(try cache.values(forKeys: ["k", "k"]) == [nil, nil])
        #expect(!cache.memory.contains("k"))
        #expect(cache.statistics.remote?.rejectedPayloads == 3)
    }
}
