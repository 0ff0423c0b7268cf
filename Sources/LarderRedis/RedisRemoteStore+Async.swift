import Dispatch
import Foundation
import Larder
import Synchronization

extension RedisRemoteStore {
    /// The values under `keys`, as ``values(forKeys:timeouts:)`` reads them (one `GET`, or one
    /// `MGET` for several keys), without blocking a thread while Redis answers.
    ///
    /// Concurrent calls share one connection: their commands go out together and the replies,
    /// which Redis sends in the order of the commands, come back to each caller in turn, so
    /// many tasks reading at once cost Redis and the network a few large writes, not one round
    /// trip each. Each call keeps its own budget (`timeouts.command`, for the connect and the
    /// reply together); a caller that runs out of it gets a timeout while the others still get
    /// their own replies. A connection that fails fails only the calls waiting on it, and the
    /// next call opens a new one (within `timeouts.connect`, in the background). Over TLS each
    /// call uses a pooled connection instead, as ``values(forKeys:timeouts:)`` does, on a thread
    /// outside the cooperative pool.
    /// - Parameters:
    ///   - keys: The keys.
    ///   - timeouts: How long to wait for a connection and for the answer.
    /// - Returns: The values in the order of `keys`, `nil` for a missing key.
    /// - Throws: `CacheError.Code.remoteFailure` when Redis fails, refuses the command, or does
    ///   not answer within the budget.
    public func fetchValues(forKeys keys: [String], timeouts: RemoteTimeouts) async throws(CacheError) -> [RemoteValue?] {
        guard !keys.isEmpty else { return [] }
        guard server.tls == nil else { return try await valuesOnAThread(forKeys: keys, timeouts: timeouts) }
        let deadline = Self.deadline(timeouts)
        let channel = try shared.channel(connectTimeout: timeouts.connect)
        let reply = try await channel.send(deadline: deadline, budget: timeouts.command) { output in
            RESPEncoding.appendCommand(keys.count == 1 ? "GET" : "MGET", keys: keys, to: &output)
        }
        return try Self.values(in: reply, count: keys.count)
    }

    /// The values a `GET` (one key) or `MGET` reply holds.
    static func values(in reply: RedisReply, count: Int) throws(CacheError) -> [RemoteValue?] {
        let found: [RedisReply]
        switch reply {
        case .error(let message): throw CacheError(.remoteFailure, "Redis answered \(count == 1 ? "GET" : "MGET"): \(message)")
        case .array(let replies) where replies.count == count: found = replies
        case .array: throw CacheError(.remoteFailure, "Redis answered MGET with another number of values than keys")
        default: found = [reply]
        }
        return found.map { reply in
            if case .string(let data) = reply { return RemoteValue(data: data, millisecondsToLive: nil) }
            return nil
        }
    }

    /// ``values(forKeys:timeouts:)`` on a Dispatch thread, the caller suspended meanwhile.
    private func valuesOnAThread(forKeys keys: [String], timeouts: RemoteTimeouts) async throws(CacheError) -> [RemoteValue?] {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[RemoteValue?], CacheError>, Never>) in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: Result { () throws(CacheError) in try self.values(forKeys: keys, timeouts: timeouts) })
            }
        }
        return try result.get()
    }
}

/// The channel the store's async calls share: the one open, or a new one when it broke.
final class RedisSharedChannel: Sendable {
    private let server: RedisServer
    private let current = Mutex<RedisChannel?>(nil)

    init(server: RedisServer) {
        self.server = server
    }

    deinit {
        current.withLock { $0 }?.close()
    }

    /// The open channel, or a new one (its connect started) when there is none or it broke.
    func channel(connectTimeout: Double) throws(CacheError) -> RedisChannel {
        try current.withLock { channel throws(CacheError) -> RedisChannel in
            if let open = channel, !open.isBroken { return open }
            let fresh = try RedisChannel(server: server, connectTimeout: connectTimeout)
            channel = fresh
            return fresh
        }
    }
}

extension RESPEncoding {
    /// Appends `name key...` in RESP2 to `output`, each key as its UTF-8 bytes.
    static func appendCommand(_ name: StaticString, keys: [String], to output: inout [UInt8]) {
        appendHeader(UInt8(ascii: "*"), keys.count + 1, to: &output)
        appendHeader(UInt8(ascii: "$"), name.utf8CodeUnitCount, to: &output)
        output.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        output.append(contentsOf: crlf)
        for key in keys {
            var key = key
            key.withUTF8 { bytes in
                appendHeader(UInt8(ascii: "$"), bytes.count, to: &output)
                output.append(contentsOf: bytes)
            }
            output.append(contentsOf: crlf)
        }
    }
}
