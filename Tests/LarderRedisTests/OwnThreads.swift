import Dispatch
import Foundation
import Synchronization
import Testing

/// A task executor that runs jobs on threads of its own, so that tasks preferring it make
/// progress when the shared cooperative pool is busy (a parallel test run full of blocking
/// tests), and a test's waits measure the code under test, not the pool.
final class ThreadExecutor: TaskExecutor, Sendable {
    private let jobs = Mutex<(queue: [UnownedJob], stopped: Bool)>(([], false))
    private let available = DispatchSemaphore(value: 0)
    private let threadCount: Int

    /// Starts `threads` threads that wait for jobs.
    init(threads: Int) {
        threadCount = threads
        for index in 0 ..< threads {
            let thread = Thread { [self] in work() }
            thread.name = "larder.test.executor.\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.queue.append(job) }
        available.signal()
    }

    /// Lets the threads end once the jobs queued now have run.
    func stop() {
        jobs.withLock { $0.stopped = true }
        for _ in 0 ..< threadCount { available.signal() }
    }

    private func work() {
        while true {
            available.wait()
            let job = jobs.withLock { state -> UnownedJob? in
                state.queue.isEmpty ? nil : state.queue.removeFirst()
            }
            guard let job else {
                if jobs.withLock({ $0.stopped && $0.queue.isEmpty }) { return }
                continue
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body`, and every child task it starts, on a ``ThreadExecutor`` of its own.
func onOwnThreads<T: Sendable>(threads: Int = 4, _ body: () async throws -> T) async throws -> T {
    let executor = ThreadExecutor(threads: threads)
    defer { executor.stop() }
    return try await withTaskExecutorPreference(executor, operation: body)
}

/// Polls `condition` every 10 ms, suspended in between, for up to ten minutes (a loaded
/// machine); records an issue if it never holds. Not a timing assertion: only that it happens.
func eventually(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) async {
    let deadline = Date().addingTimeInterval(600)
    while Date() < deadline {
        if condition() { return }
        try? await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("never happened: \(what)", sourceLocation: sourceLocation)
}
