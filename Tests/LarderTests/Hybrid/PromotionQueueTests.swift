import Dispatch
import Testing
@testable import Larder

/// When the promotion worker starts: at half the backlog at once, else after the start delay;
/// `wait()` runs whatever waits without the delay.
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
        // The next job after a drain starts a batch of its own.
        #expect(queue.submit("b", ran.job()))
        #expect(queue.backlog == 1)
        queue.wait()
        #expect(ran.value == 2)
    }

    @Test func aLoneJobRunsAfterTheDelay() {
        let queue = PromotionQueue(capacity: 128, startDelay: .milliseconds(1))
        let ran = Ran()
        #expect(queue.submit("a", ran.job()))
        #expect(ran.signal.wait(timeout: .now() + 600) == .success)
        #expect(ran.value == 1)
    }
}
