#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Larder
import Synchronization

/// A `RemoteStore` on a Redis Cluster: the keys are spread over the cluster's masters by hash
/// slot, so that a cache can outgrow one Redis.
///
/// ```swift
/// let cluster = try RedisClusterStore(seeds: ["10.0.0.5:6379", "10.0.0.6:6379"])
/// var options = HybridCacheOptions(directory: cachesURL)
/// options.remote = RemoteTierOptions(store: cluster, namespace: "feeds")
/// ```
///
/// The store asks a node for the cluster's map (`CLUSTER SLOTS`), then sends each command
/// straight to the master serving its key's slot (CRC16 of the key, or of its `{hash tag}`,
/// modulo 16384), over a connection pool per master. While slots move between nodes it follows
/// the cluster's redirections: `MOVED` sends the command to the named node and reloads the map;
/// `ASK` sends that one command to the named node after `ASKING`. A call is redirected at most
/// twice. A read or removal of several keys of a slot whose keys are half moved gets
/// `TRYAGAIN`: it is sent again after a short wait (5 ms, doubling up to 100 ms) until the keys
/// are on one node or the call's budget would end first, and the call then fails. A node that cannot be reached fails the call (the cache then treats it as a miss)
/// unless the reloaded map names another master for its keys (a replica promoted after a
/// failover): then the call is sent there once more. A `SET NX` (`store` with `onlyIfAbsent`)
/// that reached the wire is never sent again: the first may have applied, and a second run
/// would then find the value it stored and answer "not stored". Its call fails instead, and
/// whether the value was stored stays unknown.
///
/// Every call blocks its thread for at most its command timeout, all its waits together: for
/// the map, for a connection, and for the replies of each node, redirections and the retry
/// after a failover included. Connects and reloads of the map run in the background, within
/// the connect and command timeouts of their own; a call waits for them only as long as its
/// own budget lasts, and one that gives up leaves them to serve the next call. The map is
/// loaded on the first call, and again after a node failed or answered `MOVED`.
///
/// Reads and removals of several keys are split by slot, sent to each master in one pipelined
/// write, and merged back in the keys' order. Removal by prefix scans every master.
/// Invalidations use `PUBLISH`, which a cluster forwards to every node, and a `SUBSCRIBE`
/// connection to one node, which moves to another master when that node is lost. With
/// `RemoteTierOptions.invalidation = .tracking`, every master tracks the changes of the keys it
/// serves instead, on a connection per master that follows the cluster's masters as they change
/// (``trackChanges(ofKeysWithPrefix:timeouts:handler:)``).
public final class RedisClusterStore: RemoteStore {
    /// The addresses the store first asks for the cluster's map, `host:port`.
    public let seeds: [String]
    /// The most idle connections kept per master.
    public let poolSize: Int
    /// The TLS settings of every node, or `nil` when the connections are plain TCP.
    public let tls: RedisTLSOptions?

    struct State {
        var topology = ClusterTopology()
        /// Whether the map must be reloaded before the next command: never loaded, or a node failed.
        var stale = true
        var nodes: [String: RedisClusterNode] = [:]
        /// Nodes that failed since the map was last loaded: asked for it last.
        var failedNodes: Set<String> = []
        /// Whether a reload of the map is under way, in the background.
        var refreshing = false
        /// Why the last reload failed, while the map is stale.
        var lastRefreshError: CacheError?
        /// The calls waiting for the reload under way to end.
        var refreshWaiters: [DispatchSemaphore] = []
        /// Which master the subscription tries next.
        var nextSubscriptionNode = 0
        /// The tracking subscriptions, which follow the map's masters.
        var trackings: [RedisClusterTracking] = []
    }

    /// What tests may replace: the clock budgets are kept on, an observer of what is sent, and
    /// the wait before a command answered `TRYAGAIN` is sent again (given its seconds).
    struct Hooks: Sendable {
        var clock: (@Sendable () -> Double)?
        var observer: (@Sendable (ClusterBudget.Sent) -> Void)?
        var pause: (@Sendable (Double) -> Void)?
    }

    let state = Mutex(State())
    let hooks = Mutex(Hooks())
    let username: String?
    let password: String?
    let tlsContext: TLSContext?

    /// Creates a store for the cluster that `seeds` belong to. Connects lazily, on the first call.
    ///
    /// Every node is reached the same way: with `AUTH` when `password` is given, and over TLS
    /// when `tls` is (its ``RedisTLSOptions/serverName``, when set, is expected of every node;
    /// otherwise each node's certificate must name the address the cluster announces for it).
    /// A cluster has one database, so there is no database to select.
    /// - Parameters:
    ///   - seeds: Addresses of some of the cluster's nodes, `host:port`, at least one.
    ///   - username: The ACL user, or `nil` for the `default` user. Used only with a `password`.
    ///   - password: The password, or `nil` to send no `AUTH`.
    ///   - poolSize: The most idle connections kept per master (4), at least 1.
    ///   - tls: How to speak TLS to the nodes, or `nil` (the default) for plain TCP.
    /// - Throws: `CacheError.Code.invalidOptions` when there is no seed, a seed is not
    ///   `host:port`, the pool size is below 1, or a TLS file is missing or unusable.
    public init(seeds: [String], username: String? = nil, password: String? = nil, poolSize: Int = 4, tls: RedisTLSOptions? = nil)
        throws(CacheError)
    {
        guard !seeds.isEmpty else { throw CacheError(.invalidOptions, "a Redis Cluster store needs at least one seed address") }
        for seed in seeds {
            guard let (host, port) = Self.split(seed) else {
                throw CacheError(.invalidOptions, "a Redis Cluster seed is host:port, as in 127.0.0.1:7000, not \"\(seed)\"")
            }
            if let problem = RedisRemoteStore.problem(host: host, port: port, database: 0, poolSize: 1) {
                throw CacheError(.invalidOptions, "Redis Cluster seed \"\(seed)\": \(problem)")
            }
        }
        guard poolSize >= 1 else { throw CacheError(.invalidOptions, "a Redis connection pool size is at least 1, not \(poolSize)") }
        tlsContext = try tls.map { options throws(CacheError) in try TLSContext(options) }
        self.seeds = seeds
        self.poolSize = poolSize
        self.tls = tls
        self.username = username
        self.password = password
    }

    /// `host` and `port` of `address`, written `host:port`, or `nil`.
    static func split(_ address: String) -> (String, Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else { return nil }
        return (String(address[..<colon]), port)
    }

    // MARK: - Routing

    /// Sends each command to the master of its slot, all within `budget`: one pipelined write
    /// per master, then the commands answered with a redirection again, one by one, where they
    /// were sent. The replies come back in the commands' order; error replies other than
    /// redirections are left to the caller.
    ///
    /// When a node cannot be reached, the map is reloaded (in the background, waited for within
    /// the budget) and the commands it was to answer are sent once more if the map now names
    /// another master for them (a replica promoted after a failover). A node that timed out has
    /// spent the budget, so nothing is sent again; nor is a command that is not `idempotent`
    /// and reached the wire (its first run may have applied).
    func route(_ commands: [(slot: Int, arguments: RedisArguments)], idempotent: Bool = true, within budget: ClusterBudget)
        throws(CacheError)
        -> [RedisReply]
    {
        var replies = [RedisReply?](repeating: nil, count: commands.count)
        var pending = Array(commands.indices)
        var retried = false
        while true {
            var byNode: [String: (node: RedisClusterNode, indices: [Int])] = [:]
            var order: [String] = []
            for index in pending {
                let node = try master(ofSlot: commands[index].slot, budget)
                if byNode[node.address] == nil { order.append(node.address) }
                byNode[node.address, default: (node, [])].indices.append(index)
            }
            var failed: [(address: String, indices: [Int])] = []
            var failure: CacheError?
            var outcomeUnknown = false
            for address in order {
                let (node, indices) = byNode[address]!
                let answered: [RedisReply]
                var reachedTheWire = false
                do throws(CacheError) {
                    answered = try node.pipeline(indices.map { commands[$0].arguments }, within: budget, reachedTheWire: &reachedTheWire)
                } catch {
                    noteFailure(of: address, budget.timeouts)
                    failed.append((address, indices))
                    failure = error
                    outcomeUnknown = outcomeUnknown || reachedTheWire
                    continue
                }
                for (index, reply) in zip(indices, answered) {
                    if case .error(let message) = reply, let redirection = ClusterRedirection(message, askedHost: node.server.host) {
                        replies[index] = try follow(redirection, commands[index].arguments, redirectionsLeft: 2, within: budget)
                    } else {
                        replies[index] = reply
                    }
                }
            }
            guard let failure else {
                var settled = replies.map { $0 ?? .null }
                try retryWhileMigrating(commands, &settled, within: budget)
                return settled
            }
            let timedOut = failure.errno.map { [ETIMEDOUT, EAGAIN, EWOULDBLOCK].contains($0) } ?? false
            guard !retried, !timedOut, budget.remaining > 0 else { throw failure }
            if !idempotent && outcomeUnknown {
                throw CacheError(
                    .remoteFailure,
                    "the connection failed after \(commands[failed[0].indices[0]].arguments.name) was sent, so whether it applied is unknown "
                        + "(not sent again: a second run could answer otherwise): \(failure.message)", errno: failure.errno)
            }
            // A node refused or dropped the connection: worth a second try only where the
            // reloaded map names another master.
            try awaitRefresh(budget)
            let topology = state.withLock { $0.topology }
            let moved = failed.flatMap { entry in
                entry.indices.filter { topology.master(ofSlot: commands[$0].slot) != entry.address }
            }
            guard moved.count == failed.reduce(0, { $0 + $1.indices.count }) else { throw failure }
            pending = moved
            retried = true
        }
    }

    /// The first wait before a command answered `TRYAGAIN` is sent again, in seconds; each
    /// further wait doubles, up to ``longestTryAgainPause``.
    static let firstTryAgainPause = 0.005
    /// The longest wait between two tries of a command answered `TRYAGAIN`, in seconds.
    static let longestTryAgainPause = 0.1

    /// Sends again, after a short wait, each command whose reply is `TRYAGAIN` (a multi-key
    /// command on a slot being migrated, whose keys are split between the two nodes for now),
    /// until it gets another reply or what is left of `budget` would not cover the next wait;
    /// the `TRYAGAIN` reply then stays. Each try goes to the slot's master and follows the
    /// redirections it gets (`ASK` once the source holds none of the keys). `TRYAGAIN` means the
    /// command did not run, so any command may be sent again.
    private func retryWhileMigrating(
        _ commands: [(slot: Int, arguments: RedisArguments)], _ replies: inout [RedisReply], within budget: ClusterBudget
    ) throws(CacheError) {
        var pause = Self.firstTryAgainPause
        while true {
            let waiting = replies.indices.filter { Self.isTryAgain(replies[$0]) }
            guard !waiting.isEmpty, budget.remaining > pause else { return }
            if let wait = hooks.withLock({ $0.pause }) {
                wait(pause)
            } else {
                usleep(UInt32(pause * 1_000_000))
            }
            for index in waiting {
                let (slot, arguments) = commands[index]
                let node = try master(ofSlot: slot, budget)
                let reply: RedisReply
                do throws(CacheError) {
                    reply = try node.pipeline([arguments], within: budget)[0]
                } catch {
                    noteFailure(of: node.address, budget.timeouts)
                    throw error
                }
                if case .error(let message) = reply, let redirection = ClusterRedirection(message, askedHost: node.server.host) {
                    replies[index] = try follow(redirection, arguments, redirectionsLeft: 2, within: budget)
                } else {
                    replies[index] = reply
                }
            }
            pause = min(pause * 2, Self.longestTryAgainPause)
        }
    }

    /// Whether `reply` is the cluster's `TRYAGAIN` error.
    static func isTryAgain(_ reply: RedisReply) -> Bool {
        if case .error(let message) = reply { return message.hasPrefix("TRYAGAIN") }
        return false
    }

    /// Sends `arguments` where `redirection` says, within `budget`: after `MOVED`, to the slot's
    /// new master (the map is reloaded in the background, the redirection's word kept for this
    /// slot meanwhile); after `ASK`, to the named node with `ASKING` first.
    private func follow(_ redirection: ClusterRedirection, _ arguments: RedisArguments, redirectionsLeft: Int, within budget: ClusterBudget)
        throws(CacheError) -> RedisReply
    {
        guard redirectionsLeft > 0 else {
            throw CacheError(.remoteFailure, "Redis Cluster redirected \(arguments.name) more than twice (slots moving?)")
        }
        // A value read from a node whose changes are not tracked must not be kept as if they
        // were: the loss is handled before the command goes there, or the command is not sent.
        for tracking in state.withLock({ $0.trackings }) { try tracking.ensureTracked(redirection.address, within: budget) }
        let target: RedisClusterNode
        let asking: Bool
        switch redirection {
        case .moved(let slot, let address):
            // The rest of the map has likely moved too (a resharding, a failover): reload it
            // off this call's path.
            state.withLock { $0.topology.assign(slot, to: address) }
            startRefresh(budget.timeouts)
            (target, asking) = (try node(address), false)
        case .ask(_, let address):
            (target, asking) = (try node(address), true)
        }
        let reply: RedisReply
        do throws(CacheError) {
            reply = try target.pipeline([arguments], asking: asking, within: budget)[0]
        } catch {
            noteFailure(of: target.address, budget.timeouts)
            throw error
        }
        if case .error(let message) = reply, let next = ClusterRedirection(message, askedHost: target.server.host) {
            return try follow(next, arguments, redirectionsLeft: redirectionsLeft - 1, within: budget)
        }
        return reply
    }

    /// Sends one command of one key to its master, within one budget; an error reply throws.
    @discardableResult
    private func command(_ arguments: [String], key: String, data: Data? = nil, idempotent: Bool = true, timeouts: RemoteTimeouts)
        throws(CacheError) -> RedisReply
    {
        var parts = RedisArguments(arguments)
        if let data { parts.insert(data, at: 2) }
        let reply = try route([(HashSlot.slot(of: key), parts)], idempotent: idempotent, within: budget(timeouts))[0]
        if case .error(let message) = reply {
            throw CacheError(.remoteFailure, "Redis Cluster answered \(arguments[0]): \(message)", key: key)
        }
        return reply
    }

    /// The keys grouped by slot, each group with the keys' positions, in the order first seen.
    private static func groupedBySlot(_ keys: [String]) -> [(slot: Int, indices: [Int])] {
        var groups: [(slot: Int, indices: [Int])] = []
        var groupOfSlot: [Int: Int] = [:]
        for (index, key) in keys.enumerated() {
            let slot = HashSlot.slot(of: key)
            if let group = groupOfSlot[slot] {
                groups[group].indices.append(index)
            } else {
                groupOfSlot[slot] = groups.count
                groups.append((slot, [index]))
            }
        }
        return groups
    }

    // MARK: - RemoteStore

    /// The values under `keys`: one `MGET` per hash slot (a `GET` for a slot of one key), the
    /// masters' pipelined, merged back in the keys' order. The time to live is not asked, as
    /// in `RedisRemoteStore`.
    public func values(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) -> [RemoteValue?] {
        guard !keys.isEmpty else { return [] }
        let groups = Self.groupedBySlot(keys)
        let commands = groups.map { group in
            (
                group.slot,
                RedisArguments(group.indices.count == 1 ? ["GET", keys[group.indices[0]]] : ["MGET"] + group.indices.map { keys[$0] })
            )
        }
        let replies = try route(commands, within: budget(timeouts))
        var values = [RemoteValue?](repeating: nil, count: keys.count)
        for (group, reply) in zip(groups, replies) {
            let found: [RedisReply]
            switch reply {
            case .array(let parts) where parts.count == group.indices.count && group.indices.count > 1: found = parts
            case .string(_) where group.indices.count == 1, .null where group.indices.count == 1: found = [reply]
            case .error(let message) where Self.isTryAgain(reply):
                throw CacheError(
                    .remoteFailure,
                    "Redis Cluster answered TRYAGAIN to a read of \(group.indices.count) keys of slot \(group.slot) until the call's "
                        + "command timeout (\(timeouts.command) s) was spent: the slot is being migrated and its keys are split "
                        + "between two nodes (\(message))")
            case .error(let message): throw CacheError(.remoteFailure, "Redis Cluster answered a read: \(message)")
            default:
                throw CacheError(
                    .remoteFailure, "Redis Cluster answered a read of \(group.indices.count) keys with another number of values")
            }
            for (index, part) in zip(group.indices, found) {
                if case .string(let data) = part { values[index] = RemoteValue(data: data, millisecondsToLive: nil) }
            }
        }
        return values
    }

    /// `GET key` on the key's master.
    public func value(forKey key: String, timeouts: RemoteTimeouts) throws(CacheError) -> RemoteValue? {
        switch try command(["GET", key], key: key, timeouts: timeouts) {
        case .string(let data): return RemoteValue(data: data, millisecondsToLive: nil)
        case .null: return nil
        default: throw CacheError(.remoteFailure, "Redis Cluster answered GET with something else than a value", key: key)
        }
    }

    /// `SET key value [PX ms] [NX]` on the key's master. A `SET NX` is sent once: when the
    /// connection fails after it was sent the call throws (whether it applied is unknown), where
    /// another command would be sent again to a master promoted meanwhile.
    public func store(_ data: Data, forKey key: String, expiresIn milliseconds: Int64?, onlyIfAbsent: Bool, timeouts: RemoteTimeouts)
        throws(CacheError) -> Bool
    {
        var arguments = ["SET", key]
        if let milliseconds { arguments += ["PX", String(max(1, milliseconds))] }
        if onlyIfAbsent { arguments.append("NX") }
        return try command(arguments, key: key, data: data, idempotent: !onlyIfAbsent, timeouts: timeouts) != .null
    }

    /// `PEXPIRE key ms GT`, or `PERSIST key` for no expiry, on the key's master.
    public func touch(forKey key: String, expiresIn milliseconds: Int64?, timeouts: RemoteTimeouts) throws(CacheError) -> Bool {
        let arguments = milliseconds.map { ["PEXPIRE", key, String(max(1, $0)), "GT"] } ?? ["PERSIST", key]
        return try command(arguments, key: key, timeouts: timeouts) == .integer(1)
    }

    /// `UNLINK` of the keys of each hash slot, the masters' pipelined.
    public func remove(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) {
        guard !keys.isEmpty else { return }
        _ = try unlink(keys, within: budget(timeouts))
    }

    /// `UNLINK` of `keys`, one per slot; how many were removed.
    private func unlink(_ keys: [String], within budget: ClusterBudget) throws(CacheError) -> Int {
        let groups = Self.groupedBySlot(keys)
        let replies = try route(groups.map { ($0.slot, RedisArguments(["UNLINK"] + $0.indices.map { keys[$0] })) }, within: budget)
        var removed = 0
        for reply in replies {
            switch reply {
            case .integer(let count): removed += Int(count)
            case .error(let message): throw CacheError(.remoteFailure, "Redis Cluster answered UNLINK: \(message)")
            default: throw CacheError(.remoteFailure, "Redis Cluster answered UNLINK with something else than a count")
            }
        }
        return removed
    }

    /// `SCAN cursor MATCH prefix* COUNT 1000` on every master, then `UNLINK` of each batch.
    @discardableResult
    public func remove(withPrefix prefix: String, timeouts: RemoteTimeouts) throws(CacheError) -> Int {
        let pattern = RedisRemoteStore.escapedForMatch(prefix) + "*"
        var removed = 0
        // One budget for every SCAN and UNLINK on every master.
        let budget = budget(timeouts)
        for node in try masters(budget) {
            var cursor = "0"
            repeat {
                let reply: RedisReply
                do throws(CacheError) {
                    reply = try node.pipeline([RedisArguments(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"])], within: budget)[0]
                } catch {
                    noteFailure(of: node.address, timeouts)
                    throw error
                }
                guard case .array(let parts) = reply, parts.count == 2, case .string(let next) = parts[0], case .array(let found) = parts[1]
                else {
                    throw CacheError(.remoteFailure, "Redis at \(node.address) answered SCAN with something else than a cursor and keys")
                }
                let keys = found.compactMap { reply -> String? in
                    if case .string(let key) = reply { return String(decoding: key, as: UTF8.self) }
                    return nil
                }
                if !keys.isEmpty { removed += try unlink(keys, within: budget) }
                cursor = String(decoding: next, as: UTF8.self)
            } while cursor != "0"
        }
        return removed
    }

    /// `PUBLISH channel message` on the channel's slot's master; the cluster forwards it to
    /// every node, so subscribers anywhere receive it.
    public func publish(_ message: Data, to channel: String, timeouts: RemoteTimeouts) throws(CacheError) {
        try command(["PUBLISH", channel], key: channel, data: message, timeouts: timeouts)
    }

    /// `SUBSCRIBE channel` on one master, on a connection and a thread of the subscription's
    /// own; after a loss it subscribes again on the next master of the map (reloaded first).
    public func subscribe(
        to channel: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> any RemoteSubscription {
        RedisSubscription.start(
            nextServer: { [self] () throws(CacheError) -> RedisServer in try subscriptionServer(channel: channel, timeouts: timeouts) },
            channel: channel, timeouts: timeouts, handler: handler)
    }

    /// `true`: every master tracks the changes of the keys it serves (`CLIENT TRACKING`, Redis 6
    /// and later).
    public var canTrackChanges: Bool { true }

    /// `HELLO 3` (with `AUTH` when the store has a password) and `CLIENT TRACKING on BCAST PREFIX
    /// prefix` on a connection of its own to every master, each on a thread of its own that
    /// reconnects and tracks again after a loss, and the server's `invalidate` pushes of all of
    /// them, reported as one subscription.
    ///
    /// It reports `RemoteSubscriptionEvent.subscribed(afterReconnect:)` once every master
    /// tracks, and `RemoteSubscriptionEvent.lost(_:)` as soon as one does not: its connection
    /// ended, or the slot map (reloaded after such a loss, a `MOVED`, or a failed call) names a
    /// master that is not tracked yet, such as a replica promoted after a failover, or a node
    /// that took slots in a resharding. A command redirected (`MOVED`, `ASK`) to a node that is
    /// not tracked is sent there only once the handler returned from that loss; the handler
    /// runs on a background thread, and a call whose budget ends first fails without sending
    /// it. Tracking is in broadcast mode, as on a single server: the values are read on the
    /// pooled connections, which do not track.
    public func trackChanges(
        ofKeysWithPrefix prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> (any RemoteSubscription)? {
        let tracking = RedisClusterTracking(store: self, prefix: prefix, timeouts: timeouts, handler: handler)
        let known = state.withLock { state -> [String] in
            state.trackings.append(tracking)
            return state.topology.masters
        }
        if !known.isEmpty { tracking.reconcile(masters: known) }
        startRefresh(timeouts)
        return tracking
    }

    /// Forgets a tracking subscription that was cancelled.
    func stopTracking(_ tracking: RedisClusterTracking) {
        state.withLock { $0.trackings.removeAll { $0 === tracking } }
    }

    /// The node a subscription connects to next: the channel's slot's master first, then the
    /// other masters in turn, with the map reloaded before each try but the first.
    private func subscriptionServer(channel: String, timeouts: RemoteTimeouts) throws(CacheError) -> RedisServer {
        let turn = state.withLock { state in
            defer { state.nextSubscriptionNode += 1 }
            return state.nextSubscriptionNode
        }
        // The subscription's own thread waits: a budget of the connect and the command timeouts.
        let hooks = hooks.withLock { $0 }
        let budget = ClusterBudget(timeouts, seconds: timeouts.connect + timeouts.command, clock: hooks.clock ?? Socket.monotonicSeconds)
        if turn == 0 { return try master(ofSlot: HashSlot.slot(of: channel), budget).server }
        state.withLock { $0.stale = true }
        let nodes = try masters(budget)
        return nodes[turn % nodes.count].server
    }

    /// `PING` on every master: the cluster answers when each of them does.
    public func ping(timeouts: RemoteTimeouts) throws(CacheError) {
        let budget = budget(timeouts)
        for node in try masters(budget) {
            let reply: RedisReply
            do throws(CacheError) {
                reply = try node.pipeline([RedisArguments(["PING"])], within: budget)[0]
            } catch {
                noteFailure(of: node.address, timeouts)
                throw error
            }
            guard case .status("PONG") = reply else {
                throw CacheError(.remoteFailure, "Redis at \(node.address) did not answer PING with PONG")
            }
        }
    }
}
