import Foundation
import Synchronization
@testable import Larder

/// Two caches on one new folder with one manual clock, the first opened by `openA` and the
/// second by `openB`: each has its own open of the folder's lock files, so their `flock`s
/// exclude one another as two processes' would. Both are closed (by `close`), and the folder
/// removed, after `body`.
func withTwoSharingCaches<Cache>(
    _ name: String, openA: (TemporaryDirectory, ManualClock) throws -> Cache, openB: (TemporaryDirectory, ManualClock) throws -> Cache,
    close: (Cache) -> Void, _ body: (TemporaryDirectory, ManualClock, Cache, Cache) throws -> Void
) throws {
    let dir = TemporaryDirectory(name)
    defer { dir.remove() }
    let clock = ManualClock(now: 1_700_000_000)
    let a = try openA(dir, clock)
    let b = try openB(dir, clock)
    defer {
        close(a)
        close(b)
    }
    try body(dir, clock, a, b)
}

/// Counts the files opened (`openBeneath` and `openat`) through the system calls it wraps, while
/// it is on.
final class OpenCounter: Sendable {
    /// Whether opens are counted now.
    let isCounting = Atomic<Bool>(false)
    /// The opens counted.
    let count = Atomic<Int>(0)

    /// `calls` with both opens counted while ``isCounting`` is set, when `counts` says so of the
    /// open's flags.
    func counting(_ calls: SystemCalls, where counts: @escaping @Sendable (Int32) -> Bool = { _ in true }) -> SystemCalls {
        var calls = calls
        let openBeneath = calls.openBeneath
        let openat = calls.openat
        calls.openBeneath = { [self] directory, path, flags, mode in
            if isCounting.load(ordering: .relaxed), counts(flags) { count.add(1, ordering: .relaxed) }
            return openBeneath(directory, path, flags, mode)
        }
        calls.openat = { [self] directory, path, flags, mode in
            if isCounting.load(ordering: .relaxed), counts(flags) { count.add(1, ordering: .relaxed) }
            return openat(directory, path, flags, mode)
        }
        return calls
    }
}

/// Something to run at a writer's next change lock, once armed: what another writer or thread
/// does just as a change lock is taken.
final class ChangeLockHook: Sendable {
    private let armed = LarderMutex<(@Sendable () -> Void)?>(nil)

    /// Runs `action` at the next `flock(LOCK_EX)` of the system calls ``wrapping(_:)`` made, once.
    func arm(_ action: @escaping @Sendable () -> Void) {
        armed.withLock { $0 = action }
    }

    /// `calls` whose `flock(LOCK_EX)` (the change lock: a writer takes the folder's and the
    /// collection lock without waiting) first runs what is armed, if anything.
    func wrapping(_ calls: SystemCalls) -> SystemCalls {
        var calls = calls
        let flock = calls.flock
        calls.flock = { [self] fd, operation in
            if operation == LOCK_EX, let run = armed.withLock({ armed in armed.take() }) { run() }
            return flock(fd, operation)
        }
        return calls
    }
}
