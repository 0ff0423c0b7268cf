import Dispatch

/// The disk copies of remote hits, written off the reader's path: a bounded backlog of one job
/// per key, drained in order by one worker.
///
/// A later hit of a key already waiting replaces its job (the newer read wins; the queue keeps
/// the key's place). When the backlog is full, `submit` refuses the job and the reader writes its
/// copy itself: under sustained load the disk writes slow the readers down rather than pile up
/// in memory. Each job checks, under the key lock, that the key did not change since its read
/// (``KeyGenerations``), so a store, removal or invalidation that arrives while a job waits wins.
///
/// The worker does not start with the first job: it starts once half the backlog waits, or
/// ``startDelay`` after the first job, whichever comes first. A burst of remote reads (a screen
/// that fans out to many keys) is served before its file writes compete with it for the cores
/// and the disk: a file write costs about twice a loopback `GET` here (`larder-bench remote`).
final class PromotionQueue: Sendable {
    /// The most jobs waiting at once; 0 makes every reader write its own copy.
    let capacity: Int
    /// How many waiting jobs start the worker at once.
    let startThreshold: Int
    /// How long the first job of a batch waits for more before the worker starts anyway.
    let startDelay: DispatchTimeInterval
    private let state = LarderMutex(State())
    private let worker = DispatchQueue(label: "larder.remote.promotions", qos: .utility)

    private struct State {
        var jobs: [String: PromotionQueue.Job] = [:]
        /// The keys in submission order; those before `head` are done.
        var order: [String] = []
        var head = 0
        /// Whether a drain is scheduled or running (it will see jobs submitted meanwhile).
        var draining = false
        /// Whether that drain starts now rather than after the delay.
        var startsNow = false
    }

    /// How a submission starts the worker.
    private enum Start {
        case none, now, later
    }

    init(capacity: Int, startDelay: DispatchTimeInterval = .milliseconds(5)) {
        self.capacity = capacity
        self.startThreshold = max(1, capacity / 2)
        self.startDelay = startDelay
    }

    /// How many jobs are waiting.
    var backlog: Int { state.withLock { $0.jobs.count } }

    /// A disk copy to write.
    typealias Job = @Sendable () -> Void

    /// Queues `job` for `key`, replacing a job of the same key still waiting.
    /// - Returns: `false` when the backlog is full: the caller runs `job` itself.
    func submit(_ key: String, _ job: @escaping Job) -> Bool {
        let (accepted, start) = state.withLock { s -> (Bool, Start) in
            let accepted = Self._enqueue(&s, key, job, capacity: capacity)
            return (accepted, accepted ? _start(&s) : .none)
        }
        begin(start)
        return accepted
    }

    /// Queues the jobs of a batch of reads under one lock, as `submit(_:_:)` queues each.
    /// - Returns: The jobs refused because the backlog is full, in order: the caller runs them.
    func submit(_ jobs: [(key: String, job: Job)]) -> [Job] {
        guard !jobs.isEmpty else { return [] }
        let (refused, start) = state.withLock { s -> ([Job], Start) in
            var refused: [Job] = []
            for (key, job) in jobs where !Self._enqueue(&s, key, job, capacity: capacity) { refused.append(job) }
            return (refused, refused.count < jobs.count ? _start(&s) : .none)
        }
        begin(start)
        return refused
    }

    /// Adds `job` unless the backlog is full; `false` when it is.
    private static func _enqueue(_ s: inout State, _ key: String, _ job: @escaping Job, capacity: Int) -> Bool {
        guard s.jobs.count < capacity || s.jobs[key] != nil else { return false }
        if s.jobs.updateValue(job, forKey: key) == nil { s.order.append(key) }
        return true
    }

    /// Whether jobs just queued start the worker, and when.
    private func _start(_ s: inout State) -> Start {
        let full = s.jobs.count >= startThreshold
        if !s.draining {
            s.draining = true
            s.startsNow = full
            return full ? .now : .later
        }
        guard full, !s.startsNow else { return .none }
        s.startsNow = true
        return .now
    }

    private func begin(_ start: Start) {
        switch start {
        case .none: break
        case .now: worker.async { self.drain() }
        case .later: worker.asyncAfter(deadline: .now() + startDelay) { self.drain() }
        }
    }

    /// Runs every job submitted so far (without waiting for the start delay), and waits for them.
    func wait() {
        worker.sync { drain() }
    }

    /// Runs the jobs until none is left; a job submitted meanwhile runs in this same pass.
    private func drain() {
        while let job = state.withLock({ Self._next(&$0) }) { job() }
    }

    private static func _next(_ s: inout State) -> Job? {
        while s.head < s.order.count {
            let key = s.order[s.head]
            s.head += 1
            if let job = s.jobs.removeValue(forKey: key) { return job }
        }
        s.order.removeAll(keepingCapacity: true)
        s.head = 0
        s.draining = false
        s.startsNow = false
        return nil
    }
}
