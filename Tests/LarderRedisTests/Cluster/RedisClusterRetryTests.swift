import Foundation
import Larder
@testable import LarderRedis
import Synchronization
import Testing

/// What `RedisClusterStore` sends again after a master dropped the connection with a command on
/// it, over servers the test plays (no Redis needed): a seed whose map names master A, then,
/// once A failed, master B (a failover). A takes the `SET` and drops the connection without
/// answering, as a master that applied it and died would; B holds the value already.
@Suite struct RedisClusterRetryTests {
    /// `CLUSTER SLOTS` naming the node on `port` master of every slot.
    static func slots(_ port: Int) -> String {
        "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:\(port)\r\n"
    }

    @Test(arguments: [false, true])
    func aStoreWhoseConnectionDroppedIsSentAgainOnlyWhenASecondRunCannotAnswerOtherwise(onlyIfAbsent: Bool) throws {
        let failedOver = FailedOver()
        // B holds the value already: `SET NX` finds it (a null reply), a plain `SET` overwrites it.
        let masterB = try AnsweringServer { command in
            switch command.first {
            case "CLUSTER": return Self.slots(failedOver.portB.load(ordering: .relaxed))
            case "SET": return command.last == "NX" ? "$-1\r\n" : "+OK\r\n"
            default: return "-ERR unexpected\r\n"
            }
        }
        failedOver.portB.store(masterB.port, ordering: .relaxed)
        let masterA = try AnsweringServer { command in
            guard command.first == "SET" else { return Self.slots(failedOver.portB.load(ordering: .relaxed)) }
            failedOver.happened.store(true, ordering: .releasing)
            return nil
        }
        let seed = try AnsweringServer { _ in
            Self.slots(failedOver.happened.load(ordering: .acquiring) ? masterB.port : masterA.port)
        }
        let store = try RedisClusterStore(seeds: ["127.0.0.1:\(seed.port)"])
        let timeouts = RemoteTimeouts(connect: 120, command: 600)

        let outcome = Result { () throws(CacheError) in
            try store.store(Data("v".utf8), forKey: "k", expiresIn: nil, onlyIfAbsent: onlyIfAbsent, timeouts: timeouts)
        }
        #expect(masterA.commands.filter { $0.first == "SET" }.count == 1)
        let setsOnB = masterB.commands.filter { $0.first == "SET" }.count
        switch outcome {
        case .success(let stored) where !onlyIfAbsent:
            // Sent again, to the promoted master, which stored it.
            #expect(stored)
            #expect(setsOnB == 1)
        case .failure(let error) where onlyIfAbsent:
            // Not sent again: B's "exists" would have been this call's own value.
            #expect(error.code == .remoteFailure)
            #expect(error.message.contains("unknown"))
            #expect(setsOnB == 0)
        case let other:
            Issue.record("a store with onlyIfAbsent \(onlyIfAbsent) whose connection dropped returned \(other)")
        }
    }
}

/// Whether master A failed (it took a `SET` and dropped the connection), and B's port.
private final class FailedOver: Sendable {
    let happened = Atomic<Bool>(false)
    let portB = Atomic<Int>(0)
}
