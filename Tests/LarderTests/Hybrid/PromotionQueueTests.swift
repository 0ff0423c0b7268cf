import Dispatch
import Foundation
import Testing
@testable import Larder

/// When the promotion worker starts: at half the backlog at once, else after the start delay;
/// `wait()` runs whatever waits without the delay. Once started, it stays scheduled until a look
/// finds no job, and submissions meanwhile wake no thread.
@Suite struct PromotionQueueTests {
    /// Counts the jobs that ran.
    final class Ran: Sendable {
        private let count = LarderMutex(0)
        let signal = DispatchSemaphore(value: 0)

        var value: Int { count.withLock { $0 } }

        func job() -> @Sendable () -> Void {
            { [self] in
                count.withLock { $0 += 1 }
                signal.signal()
            }
        }

        /// A batch's job: one count, and one signal, for each copy it writes.
        func batch() -> PromotionQueue.BatchJob {
            { [self] positions in
                for _ in positions { job()() }
            }
        }
    }

    /// Polls until the worker goes idle (its look a delay after its pass found nothing), for at
    /// most a minute.
    func waitUntilIdle(_ queue: PromotionQueue) {
        var polls = 0
        while !queue.isIdle, polls < 60_000 {
            polls += 1
            usleep(1_000)
        }
    }

    @Test func halfTheBacklogStartsTheWorkerWithoutTheDelay() {
        // A delay no test run reaches: the jobs run because half the backlog (2 of 4) waits.
        let queue = PromotionQueue(capacity: 4, startDelay: .seconds(86_400))
        let ran = Ran()
        #expect(queue.submit("a", ran.job()))
        #expect(queue.submit("b", ran.job()))
        for _ in 0 ..< 2 { #expect(ran.signal.wait(timeout: .now() + 600) == .success) }
        #expect(ran.value == 2)
        #expect(queue.backlog == 0)
    }

    @Test func waitRunsAJobThatWouldStillBeWaitingForTheDelay() {
        let queue = PromotionQueue(capacity: 4, startDelay: .seconds(86_400))
        let ran = Ran()
        #expect(queue.submit("a", ran.job()))
        queue.wait()
        #expect(ran.value == 1)
        #expect(queue.backlog == 0)
        // The next job joins the scheduled pass (still a day away): only `wait` runs it.
        #expect(queue.submit("b", ran.job()))
        #expect(queue.backlog == 1)
        queue.wait()
        #expect(ran.value == 2)
    }

    @Test func aJobSubmittedWhileTheWorkerIsScheduledWakesNoThread() {
        let queue = PromotionQueue(capacity: 4, startDelay: .seconds(86_400))
        let ran = Ran()
        // The first job schedules the worker's pass (a day away); half the backlog adds one now.
        #expect(queue.submit("a", ran.job()))
        #expect(queue.submit("b", ran.job()))
        for _ in 0 ..< 2 { #expect(ran.signal.wait(timeout: .now() + 600) == .success) }
        // After the pass at once (`wait` runs behind it on the worker's queue), the scheduled
        // pass still waits: the next job joins it and wakes nothing.
        queue.wait()
        #expect(queue.wakeups == 2)
        #expect(!queue.isIdle)
        #expect(queue.submit("c", ran.job()))
        #expect(queue.wakeups == 2)
        #expect(queue.backlog == 1)
        // Half the backlog again: one more pass at once.
        #expect(queue.submit("d", ran.job()))
        #expect(queue.wakeups == 3)
        for _ in 0 ..< 2 { #expect(ran.signal.wait(timeout: .now() + 600) == .success) }
        #expect(ran.value == 4)
    }

    /// One job starts the worker's pass after the delay; two (half the backlog), in one batch,
    /// start it at once. Either way the pass looks again a delay later, finds nothing, and lets
    /// the worker go idle; the next job wakes it.
    @Test(arguments: [1, 2])
    func theWorkerGoesIdleWhenALookFindsNoJobAndTheNextJobWakesIt(first: Int) {
        let queue = PromotionQueue(capacity: 4, startDelay: .milliseconds(1))
        let ran = Ran()
        #expect(queue.isIdle)
        #expect(queue.submit(batch: first, ran.batch()).isEmpty)
        #expect(queue.wakeups == 1)
        for _ in 0 ..< first { #expect(ran.signal.wait(timeout: .now() + 600) == .success) }
        waitUntilIdle(queue)
        #expect(queue.isIdle)
        #expect(queue.submit("next", ran.job()))
        #expect(queue.wakeups == 2)
        #expect(ran.signal.wait(timeout: .now() + 600) == .success)
        #expect(ran.value == first + 1)
    }

    @Test func aLoneJobRunsAfterTheDelay() {
        let queue = PromotionQueue(capacity: 128, startDelay: .milliseconds(1))
        let ran = Ran()
        #expect(queue.submit("a", ran.job()))
        #expect(ran.signal.wait(timeout: .now() + 600) == .success)
        #expect(ran.value == 1)
    }

    /// The jobs run on the queue's own thread, which on Linux is a batch thread (`SCHED_BATCH`):
    /// waking it does not take the core of the reader that queued them.
    @Test func theJobsRunOnABackgroundThreadOfTheQueuesOwn() {
        let queue = PromotionQueue(capacity: 4, startDelay: .milliseconds(1))
        let ran = Ran()
        let seen = LarderMutex<(name: String?, policy: Int32)?>(nil)
        #expect(
            queue.submit("a") {
                var policy: Int32 = -1
                var parameters = sched_param()
                _ = pthread_getschedparam(pthread_self(), &policy, &parameters)
                seen.withLock { $0 = (Thread.current.name, policy) }
                ran.signal.signal()
            })
        #expect(ran.signal.wait(timeout: .now() + 600) == .success)
        let (name, policy) = seen.withLock { $0 } ?? (nil, -1)
        #expect(name == "larder.promote")
        #if os(Linux)
        #expect(policy == 3, "SCHED_BATCH")
        #endif
    }

    /// A queue let go of with a job waiting (its pass a day away) still runs it: the worker
    /// drains what waits, then ends.
    @Test func aQueueLetGoOfRunsTheJobsStillWaiting() {
        var queue: PromotionQueue? = PromotionQueue(capacity: 4, startDelay: .seconds(86_400))
        let ran = Ran()
        #expect(queue?.submit("a", ran.job()) == true)
        #expect(queue?.backlog == 1)
        queue = nil
        #expect(ran.signal.wait(timeout: .now() + 600) == .success)
        #expect(ran.value == 1)
    }

    /// The worker thread lives as long as the queue (it waits for the next jobs), and ends once
    /// the queue is let go of: a cache's release leaves no thread behind.
    @Test func theWorkerThreadEndsOnceTheQueueIsLetGoOf() {
        /// The worker, as the job that ran on it saw it.
        final class Worker: @unchecked Sendable {
            // @unchecked: `thread` is set before `ran` is signalled and read after it.
            var thread: Thread?
            let ran = DispatchSemaphore(value: 0)
        }
        var queue: PromotionQueue? = PromotionQueue(capacity: 4, startDelay: .milliseconds(1))
        let worker = Worker()
        #expect(
            queue?.submit("a") {
                worker.thread = Thread.current
                worker.ran.signal()
            } == true)
        #expect(worker.ran.wait(timeout: .now() + 600) == .success)
        guard let thread = worker.thread else {
            Issue.record("the job ran on no thread")
            return
        }
        // Its look for more jobs falls due and finds none: the worker waits, it does not end.
        waitUntilIdle(queue!)
        #expect(queue?.isIdle == true)
        #expect(!thread.isFinished, "the worker ends only with its queue")
        queue = nil
        var polls = 0
        while !thread.isFinished, polls < 60_000 {
            polls += 1
            usleep(1_000)
        }
        #expect(thread.isFinished)
    }

    /// A batch's job counts as its copies in the backlog; the copies that do not fit come back
    /// to the caller, the last ones.
    @Test func aBatchCountsAsItsCopiesAndWhatDoesNotFitIsHandedBack() {
        let queue = PromotionQueue(capacity: 4, startDelay: .seconds(86_400))
        let ran = Ran()
        // The worker held in a first job, so that the backlog only grows.
        let (started, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let hold: @Sendable () -> Void = {
            started.signal()
            release.wait()
        }
        #expect(queue.submit("held", hold))
        #expect(queue.submit("y", ran.job()))
        #expect(started.wait(timeout: .now() + 600) == .success)
        // One key twice: the later job replaces the earlier, in its place.
        #expect(queue.submit("y", ran.job()))
        #expect(queue.backlog == 1)
        #expect(queue.submit(batch: 2, ran.batch()).isEmpty)
        #expect(queue.backlog == 3)
        let refused = queue.submit(batch: 3, ran.batch())
        #expect(refused == 1 ..< 3, "the backlog holds 4: the batch's last two come back to the caller")
        #expect(queue.backlog == 4)
        #expect(!queue.submit("z", ran.job()), "the backlog is full")
        #expect(ran.value == 0)
        release.signal()
        queue.wait()
        #expect(ran.value == 1 + 2 + 1)
        #expect(queue.backlog == 0)
        #expect(queue.submit(batch: 0, ran.batch()).isEmpty)
    }
}
