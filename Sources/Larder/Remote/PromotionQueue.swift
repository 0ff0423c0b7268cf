import Dispatch

/// The disk copies of remote hits, written off the reader's path: a bounded backlog of one job
/// per key, drained in order by one worker.
///
/// A later hit of a key already waiting replaces its job (the newer read wins; the queue keeps
/// the key's place). When the backlog is full, `submit` refuses the job and the reader writes its
/// copy itself: under sustained load the disk writes slow the readers down rather than pile up
/// in memory. Each job checks, under the key lock, that the key did not change since its read
/// (``KeyGenerations``), so a store, removal or invalidation that arrives while a job waits wins.
final class PromotionQueue: Sendable {
    /// The most jobs waiting at once; 0 makes every reader write its own copy.
    let capacity: Int
    private let state = LarderMutex(State())
    private let worker = DispatchQueue(label: "larder.remote.promotions", qos: .utility)

    private struct State {
        var jobs: [String: @Sendable () -> Void] = [:]
        /// The keys in submission order; those before `head` are done.
        var order: [String] = []
        var head = 0
        var draining = false
    }

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// How many jobs are waiting.
    var backlog: Int { state.withLock { $0.jobs.count } }

    /// Queues `job` for `key`, replacing a job of the same key still waiting.
    /// - Returns: `false` when the backlog is full: the caller runs `job` itself.
    func submit(_ key: String, _ job: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, starts) = state.withLock { s -> (Bool, Bool) in
            if s.jobs[key] != nil {
                s.jobs[key] = job
                return (true, false)
            }
            guard s.jobs.count < capacity else { return (false, false) }
            s.jobs[key] = job
            s.order.append(key)
            if s.draining { return (true, false) }
            s.draining = true
            return (true, true)
        }
        if starts { worker.async { self.drain() } }
        return accepted
    }

    /// Waits until every job submitted so far has run.
    func wait() {
        worker.sync {}
    }

    /// Runs the jobs until none is left; a job submitted meanwhile runs in this same pass.
    private func drain() {
        while let job = state.withLock({ Self._next(&$0) }) { job() }
    }

    private static func _next(_ s: inout State) -> (@Sendable () -> Void)? {
        while s.head < s.order.count {
            let key = s.order[s.head]
            s.head += 1
            if let job = s.jobs.removeValue(forKey: key) { return job }
        }
        s.order.removeAll(keepingCapacity: true)
        s.head = 0
        s.draining = false
        return nil
    }
}
