@testable import Larder

/// Background compactions a test holds and runs when it chooses (``DiskCache/SnapshotState/compactionRunner``).
final class HeldCompactions: Sendable {
    private let jobs = LarderMutex<[@Sendable () -> Void]>([])

    init(_ cache: DiskCache) {
        cache.snapshotGate.withLock { gate in
            gate.compactionRunner = { [self] work in jobs.withLock { $0.append(work) } }
        }
    }

    /// Compactions scheduled and not run.
    var count: Int { jobs.withLock { $0.count } }

    /// Runs the held compactions on this thread; how many there were.
    @discardableResult
    func runAll() -> Int {
        let taken = jobs.withLock { jobs in
            defer { jobs = [] }
            return jobs
        }
        for job in taken { job() }
        return taken.count
    }
}
