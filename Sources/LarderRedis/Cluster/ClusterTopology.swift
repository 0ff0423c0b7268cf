import Foundation
import Larder

/// Which master serves each hash slot, as a cluster node reported it (`CLUSTER SLOTS`).
struct ClusterTopology: Sendable, Equatable {
    /// The masters' addresses, `host:port`, in the order first seen.
    private(set) var masters: [String] = []
    /// For each slot, the index in ``masters`` of the node serving it, or -1 when none does.
    private var owners = [Int32](repeating: -1, count: HashSlot.count)

    /// The address of the master serving `slot`, or `nil` when no node does.
    func master(ofSlot slot: Int) -> String? {
        let owner = owners[slot]
        return owner < 0 ? nil : masters[Int(owner)]
    }

    /// Records that `address` serves `slot` (a `MOVED` redirection says so).
    mutating func assign(_ slot: Int, to address: String) {
        owners[slot] = Int32(index(of: address))
    }

    private mutating func index(of address: String) -> Int {
        if let index = masters.firstIndex(of: address) { return index }
        masters.append(address)
        return masters.count - 1
    }

    /// Reads the reply to `CLUSTER SLOTS`: an array of ranges, each `[first, last, [host, port,
    /// id, ...], replicas...]`. An empty host means the node that answered (`askedHost`).
    /// - Throws: `CacheError.Code.remoteFailure` when the reply has another shape, or assigns no slot.
    init(slotsReply reply: RedisReply, askedHost: String) throws(CacheError) {
        guard case .array(let ranges) = reply else {
            throw CacheError(.remoteFailure, "Redis answered CLUSTER SLOTS with something else than an array of ranges")
        }
        for range in ranges {
            guard case .array(let parts) = range, parts.count >= 3, case .integer(let first) = parts[0],
                case .integer(let last) = parts[1], 0 <= first, first <= last, last < HashSlot.count,
                let address = Self.address(parts[2], askedHost: askedHost)
            else {
                throw CacheError(.remoteFailure, "Redis answered CLUSTER SLOTS with a range that is not [first, last, [host, port, ...]]")
            }
            let owner = Int32(index(of: address))
            for slot in Int(first) ... Int(last) { owners[slot] = owner }
        }
        guard !masters.isEmpty else {
            throw CacheError(.remoteFailure, "Redis answered CLUSTER SLOTS with no slot assigned (is the cluster created?)")
        }
    }

    /// Creates a topology that knows no slot.
    init() {}

    /// `host:port` from a node entry `[host, port, ...]`.
    private static func address(_ entry: RedisReply, askedHost: String) -> String? {
        guard case .array(let node) = entry, node.count >= 2, case .string(let hostBytes) = node[0], case .integer(let port) = node[1],
            (1 ... 65535).contains(port)
        else { return nil }
        let host = String(decoding: hostBytes, as: UTF8.self)
        return "\(host.isEmpty || host == "?" ? askedHost : host):\(port)"
    }
}

/// A redirection a cluster node answered with instead of running a command.
enum ClusterRedirection: Equatable {
    /// `MOVED slot host:port`: the slot lives on that node now.
    case moved(slot: Int, address: String)
    /// `ASK slot host:port`: this one command goes to that node, after `ASKING` (the slot is
    /// being migrated there).
    case ask(slot: Int, address: String)

    /// The node the command is redirected to, `host:port`.
    var address: String {
        switch self {
        case .moved(_, let address), .ask(_, let address): address
        }
    }

    /// The redirection in an error reply, or `nil` when it is another error. An empty host
    /// (Redis 7 with an unknown endpoint) means the node that answered (`askedHost`).
    init?(_ message: String, askedHost: String) {
        let parts = message.split(separator: " ")
        guard parts.count == 3, let slot = Int(parts[1]), (0 ..< HashSlot.count).contains(slot),
            let colon = parts[2].lastIndex(of: ":"), Int(parts[2][parts[2].index(after: colon)...]) != nil
        else { return nil }
        let host = parts[2][..<colon]
        let address = host.isEmpty ? "\(askedHost)\(parts[2])" : String(parts[2])
        switch parts[0] {
        case "MOVED": self = .moved(slot: slot, address: address)
        case "ASK": self = .ask(slot: slot, address: address)
        default: return nil
        }
    }
}
