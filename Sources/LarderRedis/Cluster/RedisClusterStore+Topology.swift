import Dispatch
import Foundation
import Larder

/// The slot map: loaded in the background, one load at a time, and waited for by a call only
/// within its budget.
extension RedisClusterStore {
    /// The node at `address`, made on first use.
    func node(_ address: String) throws(CacheError) -> RedisClusterNode {
        if let node = state.withLock({ $0.nodes[address] }) { return node }
        guard let (host, port) = Self.split(address) else {
            throw CacheError(.remoteFailure, "Redis Cluster named a node at \"\(address)\", which is not host:port")
        }
        let server = RedisServer(host: host, port: port, username: username, password: password, database: 0, tls: tlsContext)
        let made = RedisClusterNode(server: server, poolSize: poolSize)
        return state.withLock { state in
            if let existing = state.nodes[address] { return existing }
            state.nodes[address] = made
            return made
        }
    }

    /// A budget of the command timeout from now, for one call.
    func budget(_ timeouts: RemoteTimeouts) -> ClusterBudget {
        let hooks = hooks.withLock { $0 }
        return ClusterBudget(timeouts, seconds: timeouts.command, clock: hooks.clock ?? Socket.monotonicSeconds, observer: hooks.observer)
    }

    /// Marks the map stale after the node at `address` failed, and starts reloading it in the
    /// background; the failed node is asked for the map last.
    func noteFailure(of address: String?, _ timeouts: RemoteTimeouts) {
        state.withLock { state in
            state.stale = true
            if let address { state.failedNodes.insert(address) }
        }
        startRefresh(timeouts)
    }

    /// Starts reloading the map in the background unless a reload is under way.
    func startRefresh(_ timeouts: RemoteTimeouts) {
        let starts = state.withLock { state -> Bool in
            guard !state.refreshing else { return false }
            state.refreshing = true
            return true
        }
        guard starts else { return }
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let loaded: Result<ClusterTopology, CacheError> = Result { () throws(CacheError) in try loadTopology(timeouts) }
            // The tracking connections follow the map before any call is routed by it: a master
            // that joined is reported untracked before a value read from it could be kept.
            let trackings = state.withLock { $0.trackings }
            for tracking in trackings {
                switch loaded {
                case .success(let topology): tracking.reconcile(masters: topology.masters)
                case .failure(let error): tracking.mapFailed(error)
                }
            }
            let (waiters, late) = state.withLock { state -> ([DispatchSemaphore], [RedisClusterTracking]) in
                let late = state.trackings.filter { tracking in !trackings.contains { $0 === tracking } }
                state.refreshing = false
                switch loaded {
                case .success(let topology):
                    state.topology = topology
                    state.stale = false
                    state.failedNodes.removeAll()
                    state.lastRefreshError = nil
                case .failure(let error):
                    state.lastRefreshError = error
                }
                defer { state.refreshWaiters.removeAll() }
                return (state.refreshWaiters, late)
            }
            // Trackings that began during the load have not listened yet: no loss to report first.
            for tracking in late {
                switch loaded {
                case .success(let topology): tracking.reconcile(masters: topology.masters)
                case .failure(let error): tracking.mapFailed(error)
                }
            }
            for waiter in waiters { waiter.signal() }
        }
    }

    /// Waits, within `budget`, for a reload of the map (started now unless one is under way)
    /// to end.
    /// - Throws: `CacheError.Code.remoteFailure` when the budget is spent first, or the reload
    ///   failed (naming why).
    func awaitRefresh(_ budget: ClusterBudget) throws(CacheError) {
        let ended = DispatchSemaphore(value: 0)
        state.withLock { $0.refreshWaiters.append(ended) }
        startRefresh(budget.timeouts)
        let left = budget.remaining
        if left <= 0 || ended.wait(timeout: .now() + .nanoseconds(Int(min(left, 86_400) * 1e9))) == .timedOut {
            state.withLock { $0.refreshWaiters.removeAll { $0 === ended } }
            throw budget.spent("the cluster's slot map was loaded (loading it in the background)")
        }
        if let error = state.withLock({ $0.stale ? $0.lastRefreshError : nil }) { throw error }
    }

    /// Asks for the map (`CLUSTER SLOTS`) until a node answers: the known masters that did not
    /// fail, then the seeds, then the nodes that failed. Each node gets a budget of its own (the
    /// connect and the command timeouts): this runs off every caller's path.
    /// - Throws: `CacheError.Code.remoteFailure` naming the last failure when none answers.
    private func loadTopology(_ timeouts: RemoteTimeouts) throws(CacheError) -> ClusterTopology {
        let (known, failed) = state.withLock { ($0.topology.masters, $0.failedNodes) }
        var lastError = CacheError(.remoteFailure, "no Redis Cluster node to ask for the slot map")
        var asked = Set<String>()
        let candidates = known.filter { !failed.contains($0) } + seeds.filter { !failed.contains($0) } + known + seeds
        for address in candidates where asked.insert(address).inserted {
            do throws(CacheError) {
                let node = try node(address)
                let hooks = hooks.withLock { $0 }
                let budget = ClusterBudget(
                    timeouts, seconds: timeouts.connect + timeouts.command, clock: hooks.clock ?? Socket.monotonicSeconds)
                let reply = try node.pipeline([RedisArguments(["CLUSTER", "SLOTS"])], within: budget)[0]
                if case .error(let message) = reply {
                    throw CacheError(.remoteFailure, "Redis at \(address) answered CLUSTER SLOTS: \(message)")
                }
                return try ClusterTopology(slotsReply: reply, askedHost: node.server.host)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// The node serving `slot`: from the map, or, when the map is stale or names no node for
    /// it, from the map reloaded within `budget`.
    func master(ofSlot slot: Int, _ budget: ClusterBudget) throws(CacheError) -> RedisClusterNode {
        var (address, stale) = state.withLock { ($0.topology.master(ofSlot: slot), $0.stale) }
        if stale || address == nil {
            try awaitRefresh(budget)
            address = state.withLock { $0.topology.master(ofSlot: slot) }
        }
        guard let address else { throw CacheError(.remoteFailure, "no Redis Cluster node serves hash slot \(slot)") }
        return try node(address)
    }

    /// The masters, from the map reloaded within `budget` first when it is stale.
    func masters(_ budget: ClusterBudget) throws(CacheError) -> [RedisClusterNode] {
        if state.withLock({ $0.stale }) { try awaitRefresh(budget) }
        var nodes: [RedisClusterNode] = []
        for address in state.withLock({ $0.topology.masters }) { nodes.append(try node(address)) }
        return nodes
    }
}
