import Dispatch
import Foundation

/// The disk copies of remote hits, written off the reader's path: a bounded backlog of copies,
/// drained in order by one worker thread.
///
/// A read of one key queues one job; a later hit of a key already waiting replaces its job (the
/// newer read wins; the queue keeps the key's place). A read of many keys queues one job for all
/// its copies, which counts as that many in the backlog: the reader allocates one closure and
/// adds one entry for the batch, not one of each for every key. When the backlog is full,
/// `submit` refuses the job, or the copies of a batch that do not fit, and the reader writes them
/// itself: under sustained load the disk writes slow the readers down rather than pile up in
/// memory. Each job checks, under the key lock, that the key did not change since its read
/// (``KeyGenerations``), so a store, removal or invalidation that arrives while a job waits wins.
///
/// The worker does not start with the first job: it starts once half the backlog waits, or the
/// start delay (5 ms) after the first job, whichever comes first. A burst of remote reads (a
/// screen that fans out to many keys) is served before its file writes compete with it for the
/// cores and the disk: a file write costs about twice a loopback `GET` here
/// (`larder-bench remote`).
///
/// Once started, the worker stays scheduled: after a pass that leaves no job, it looks again
/// the start delay later, and goes idle only when that look finds none. A reader's submission
/// wakes the worker only when it is idle (or half the backlog waits): without the second look,
/// sustained reads woke it every few reads, since each pass emptied the backlog and the next hit
/// found it idle (the remote suite of `larder-bench` measures both).
///
/// The worker is a thread of its own, at a background priority: `.utility` on Apple platforms,
/// and on Linux a batch thread (`SCHED_BATCH`), which a wake-up does not let take the core of the
/// thread that woke it. A pool thread of Dispatch, woken at the end of a reader's call that
/// queued half the backlog, took that reader's core before the call returned: on a busy 2-core
/// machine a read of 100 keys then waited milliseconds for the writes it meant to leave behind.
/// The thread ends once the queue is let go of and no job waits.
final class PromotionQueue: Sendable {
    /// The most jobs waiting at once; 0 makes every reader write its own copy.
    let capacity: Int
    /// How many waiting jobs start the worker at once.
    let startThreshold: Int
    private let core: Core

    /// A disk copy to write.
    typealias Job = @Sendable () -> Void

    /// The disk copies of a batch to write: those at the given positions of the batch.
    typealias BatchJob = @Sendable (Range<Int>) -> Void

    /// The queue's state and the condition that guards it, shared with the worker thread, which
    /// does not keep the queue itself alive.
    private final class Core: @unchecked Sendable {
        // @unchecked: `state` is only touched with `condition` locked.
        let condition = NSCondition()
        var state = State()
        /// How long, in seconds, the first job of a batch waits for more before the worker
        /// starts anyway, and a pass that left no job waits before it looks again.
        let delay: Double

        init(delay: Double) { self.delay = delay }
    }

    /// A place in the queue: a key's job, a batch's, or one already taken (which holds nothing,
    /// so a batch's values go with its job).
    private enum Entry {
        case key(String)
        case batch(BatchJob, Range<Int>)
        case taken
    }

    /// A key's job as the table keeps it: in a struct, a closure is kept as it is, where the
    /// table's generic storage would wrap it in one more closure (one more allocation a job).
    private struct KeyJob {
        let run: Job
    }

    private struct State {
        /// The jobs of single keys, each waiting at its key's entry of `order`.
        var jobs: [String: KeyJob] = [:]
        /// The entries in submission order; those before `head` are done.
        var order: [Entry] = []
        var head = 0
        /// How many copies wait: the single keys' jobs and every copy of the waiting batches.
        var waiting = 0
        /// Whether the worker's pass, or its next look for jobs, is due or running: it will see
        /// jobs submitted meanwhile.
        var scheduled = false
        /// When the scheduled pass (or look) is due, on ``PromotionQueue/monotonicSeconds()``.
        var due: Double?
        /// Whether what is due is a pass (it drains even an empty backlog, then looks again) rather
        /// than a look (it lets the worker go idle when no job waits).
        var duePass = false
        /// Whether a pass was started at once for the jobs waiting now (half the backlog).
        var startsNow = false
        /// An extra pass at once, besides the scheduled one.
        var passNow = false
        /// How many jobs are running (on the worker, or on a thread in `wait()`).
        var running = 0
        /// Whether the worker thread was started.
        var hasThread = false
        /// Whether the queue was let go of: the worker ends once no job waits.
        var closed = false
        /// How many submissions woke the worker (tests).
        var wakeups = 0
    }

    /// A queue of at most `capacity` jobs, whose worker starts once half of them wait or
    /// `startDelay` after the first.
    init(capacity: Int, startDelay: Duration = .milliseconds(5)) {
        self.capacity = capacity
        self.startThreshold = max(1, capacity / 2)
        self.core = Core(delay: RemoteTier.seconds(startDelay))
    }

    deinit {
        core.condition.lock()
        core.state.closed = true
        core.condition.signal()
        core.condition.unlock()
    }

    /// How many copies are waiting.
    var backlog: Int { locked { $0.waiting } }

    /// How many submissions so far woke the worker.
    var wakeups: Int { locked { $0.wakeups } }

    /// Whether the worker is idle: no pass, and no look for jobs, is due or running.
    var isIdle: Bool { locked { !$0.scheduled } }

    /// Queues `job` for `key`, replacing a job of the same key still waiting.
    /// - Returns: `false` when the backlog is full: the caller runs `job` itself.
    func submit(_ key: String, _ job: @escaping Job) -> Bool {
        locked { s in
            let accepted = Self._enqueue(&s, key, job, capacity: capacity)
            if accepted { _start(&s) }
            return accepted
        }
    }

    /// Queues the disk copies of a batch of reads (positions `0 ..< count`) as one job, which
    /// counts as `count` in the backlog: as many as it has room for, the first ones.
    /// - Returns: The positions refused because the backlog is full: the caller writes them.
    func submit(batch count: Int, _ job: @escaping BatchJob) -> Range<Int> {
        guard count > 0 else { return 0 ..< 0 }
        return locked { s in
            let accepted = min(count, max(0, capacity - s.waiting))
            guard accepted > 0 else { return 0 ..< count }
            s.order.append(.batch(job, 0 ..< accepted))
            s.waiting += accepted
            _start(&s)
            return accepted ..< count
        }
    }

    /// Runs every job submitted so far (without waiting for the start delay) on the calling
    /// thread, and waits for those the worker is running.
    func wait() {
        core.condition.lock()
        Self._drain(core)
        while core.state.running > 0 { core.condition.wait() }
        core.condition.unlock()
    }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        core.condition.lock()
        defer { core.condition.unlock() }
        return body(&core.state)
    }

    /// Adds `job` unless the backlog is full; `false` when it is.
    private static func _enqueue(_ s: inout State, _ key: String, _ job: @escaping Job, capacity: Int) -> Bool {
        guard s.waiting < capacity || s.jobs[key] != nil else { return false }
        if s.jobs.updateValue(KeyJob(run: job), forKey: key) == nil {
            s.order.append(.key(key))
            s.waiting += 1
        }
        return true
    }

    /// Schedules the worker for jobs just queued: from idle, its pass at once (half the backlog
    /// waits) or after the delay; when scheduled already, one more pass at once when half the
    /// backlog waits again. Signals the worker only then.
    private func _start(_ s: inout State) {
        let full = s.waiting >= startThreshold
        if !s.scheduled {
            s.scheduled = true
            s.startsNow = full
            s.due = Self.monotonicSeconds() + (full ? 0 : core.delay)
            s.duePass = true
        } else if full, !s.startsNow {
            s.startsNow = true
            s.passNow = true
        } else {
            return
        }
        s.wakeups += 1
        if !s.hasThread {
            s.hasThread = true
            startThread()
        } else {
            core.condition.signal()
        }
    }

    private func startThread() {
        let core = self.core
        let thread = Thread {
            // Named from the thread itself: Linux keeps 15 characters of a name.
            Thread.current.name = "larder.promote"
            Self.work(core)
        }
        thread.qualityOfService = .utility
        thread.start()
    }

    /// The worker thread: runs the passes and looks as they fall due, until the queue is let go
    /// of and no job waits.
    private static func work(_ core: Core) {
        makeCurrentThreadBatch()
        core.condition.lock()
        defer { core.condition.unlock() }
        while true {
            if core.state.passNow {
                core.state.passNow = false
                _drain(core)
                continue
            }
            let now = monotonicSeconds()
            if let due = core.state.due, due <= now {
                if core.state.duePass || core.state.waiting > 0 {
                    _drain(core)
                    core.state.due = monotonicSeconds() + core.delay
                    core.state.duePass = false
                } else {
                    core.state.due = nil
                    core.state.scheduled = false
                }
                continue
            }
            if core.state.closed {
                guard core.state.waiting == 0 else {
                    _drain(core)
                    continue
                }
                return
            }
            if let due = core.state.due {
                _ = core.condition.wait(until: Date(timeIntervalSinceNow: due - now))
            } else {
                core.condition.wait()
            }
        }
    }

    /// Runs the jobs until none is left, each with the condition unlocked; a job submitted
    /// meanwhile runs in this same pass. Called with the condition locked.
    private static func _drain(_ core: Core) {
        while let job = _next(&core.state) {
            core.state.running += 1
            core.condition.unlock()
            job()
            core.condition.lock()
            core.state.running -= 1
            if core.state.running == 0 { core.condition.broadcast() }
        }
    }

    private static func _next(_ s: inout State) -> Job? {
        while s.head < s.order.count {
            let entry = s.order[s.head]
            s.order[s.head] = .taken
            s.head += 1
            switch entry {
            case .key(let key):
                guard let job = s.jobs.removeValue(forKey: key) else { continue }
                s.waiting -= 1
                return job.run
            case .batch(let job, let positions):
                s.waiting -= positions.count
                return { job(positions) }
            case .taken:
                continue
            }
        }
        s.order.removeAll(keepingCapacity: true)
        s.head = 0
        // The scheduled pass still comes (`scheduled` stays); half a backlog from now on starts
        // one more at once.
        s.startsNow = false
        return nil
    }

    /// The monotonic clock, in seconds.
    private static func monotonicSeconds() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}
