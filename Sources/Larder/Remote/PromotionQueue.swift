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
///
/// Once started, the worker stays scheduled: after a pass that leaves no job, it looks again
/// ``startDelay`` later, and goes idle only when that look finds none. A reader's submission
/// wakes a thread only when the worker is idle (or half the backlog waits). Waking an idle thread
/// (`dispatch_async` or `dispatch_after`) cost the caller 22-26 µs of CPU time on this project's
/// 2-core virtual machines, as much as a loopback `GET`; without the second look, sustained reads
/// woke the worker every few reads, since each pass emptied the backlog and the next hit found it
/// idle (the remote suite of `larder-bench` measures both).
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
        /// Whether the worker's pass, or its next look for jobs, is queued or running: it will see
        /// jobs submitted meanwhile.
        var scheduled = false
        /// Whether a pass was started at once for the jobs waiting now (half the backlog).
        var startsNow = false
        /// How many submissions woke the worker (tests).
        var wakeups = 0
    }

    /// How a submission starts the worker.
    private enum Start {
        /// It is scheduled already.
        case none
        /// From idle: its scheduled pass, at once (half the backlog waits) or after the delay.
        case now, later
        /// A pass at once besides the scheduled one, which still comes.
        case extra
    }

    init(capacity: Int, startDelay: DispatchTimeInterval = .milliseconds(5)) {
        self.capacity = capacity
        self.startThreshold = max(1, capacity / 2)
        self.startDelay = startDelay
    }

    /// How many jobs are waiting.
    var backlog: Int { state.withLock { $0.jobs.count } }

    /// How many submissions so far woke the worker (queued a pass on its queue).
    var wakeups: Int { state.withLock { $0.wakeups } }

    /// Whether the worker is idle: no pass, and no look for jobs, is queued or running.
    var isIdle: Bool { state.withLock { !$0.scheduled } }

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
        if !s.scheduled {
            s.scheduled = true
            s.startsNow = full
            s.wakeups += 1
            return full ? .now : .later
        }
        guard full, !s.startsNow else { return .none }
        s.startsNow = true
        s.wakeups += 1
        return .extra
    }

    private func begin(_ start: Start) {
        switch start {
        case .none: break
        case .now: worker.async { self.scheduledPass() }
        case .later: worker.asyncAfter(deadline: .now() + startDelay) { self.scheduledPass() }
        case .extra: worker.async { self.drain() }
        }
    }

    /// The worker's scheduled pass: runs the jobs, then looks again after the start delay.
    private func scheduledPass() {
        drain()
        worker.asyncAfter(deadline: .now() + startDelay) { self.lookAgain() }
    }

    /// Runs another scheduled pass if jobs came since the last; otherwise the worker goes idle,
    /// and the next submission wakes it.
    private func lookAgain() {
        let more = state.withLock { s -> Bool in
            guard s.jobs.isEmpty else { return true }
            s.scheduled = false
            return false
        }
        if more { scheduledPass() }
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
        // The scheduled pass still comes (`scheduled` stays); half a backlog from now on starts
        // one more at once.
        s.startsNow = false
        return nil
    }
}
