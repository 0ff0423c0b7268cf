import Foundation
import Larder
@testable import LarderRedis
import Synchronization
import Testing

/// What `RedisClusterStore` sends again after a master dropped the connection with a command on
/// it, over servers the test plays (no Redis needed): a seed that names master A, then master B
/// (a failover); A takes the `SET` and drops the connection without answering, as a master that
/// applied it and died would; B answers as a master that holds the value already.
@Suite struct RedisClusterRetryTests {
    /// `CLUSTER SLOTS` naming the node on `port` master of every slot.
    static func slots(_ port: Int) -> String {
        "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:\(port)\r\n"
    }

    @Test(arguments: [false, true])
    func aStoreWhoseConnectionDroppedIsSentAgainOnlyWhenASecondRunCannotAnswerOtherwise(onlyIfAbsent: Bool) async throws {
        let masterA = try ManualServer()
        // B holds the value already: `SET NX` finds it (a null reply), a plain `SET` overwrites it.
        let masterB = try ScriptedServer([onlyIfAbsent ? "$-1\r\n" : "+OK\r\n"])
        defer { masterB.stop() }
        // The seed's one connection answers the first map with A, the reload after A fails with B.
        let seed = try ScriptedServer([Self.slots(masterA.port), Self.slots(masterB.port)])
        defer { seed.stop() }
        let store = try RedisClusterStore(seeds: ["127.0.0.1:\(seed.port)"])
        let timeouts = RemoteTimeouts(connect: 120, command: 600)

        // The call blocks its thread: one of its own.
        let outcome = Outcome()
        let caller = Thread {
            let stored = Result { () throws(CacheError) in
                try store.store(Data("v".utf8), forKey: "k", expiresIn: nil, onlyIfAbsent: onlyIfAbsent, timeouts: timeouts)
            }
            outcome.result.withLock { $0 = stored }
        }
        caller.start()
        await eventually("master A has the SET") { !masterA.keys(connection: 0).isEmpty }
        masterA.close(connection: 0)
        await eventually("the store returned") { outcome.result.withLock { $0 } != nil }

        switch outcome.result.withLock({ $0 }) {
        case .success(let stored) where !onlyIfAbsent:
            // Sent again, to the promoted master, which stored it.
            #expect(stored)
            #expect(String(decoding: masterB.received(0), as: UTF8.self).contains("SET"))
        case .failure(let error) where onlyIfAbsent:
            // Not sent again: B's "exists" would have been this call's own value.
            #expect(error.code == .remoteFailure)
            #expect(error.message.contains("unknown"))
            #expect(masterB.accepted == 0)
        case let other:
            Issue.record("a store with onlyIfAbsent \(onlyIfAbsent) whose connection dropped returned \(String(describing: other))")
        }
    }
}

/// What a call made on a thread of its own returned.
private final class Outcome: Sendable {
    let result = Mutex<Result<Bool, CacheError>?>(nil)
}
