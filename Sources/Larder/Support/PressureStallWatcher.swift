// The C side of the memory pressure monitor on Linux lives here, beside the other C calls, so
// that `Memory/` reads Swift names only.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Foundation

#if !canImport(Darwin)
/// A memory pressure-stall (PSI) event: which trigger fired.
enum PressureStall: Sendable {
    /// Some tasks stalled on memory past the ``PressureStallWatcher/warningTriggers`` threshold.
    case some
    /// All tasks stalled on memory past the ``PressureStallWatcher/criticalTriggers`` threshold.
    case full
}

/// PSI trigger descriptors polled for `POLLPRI` by a dedicated thread, and a pipe whose other end
/// wakes the thread to stop: the Linux source of ``MemoryPressureMonitor``'s events.
final class PressureStallWatcher: Sendable {
    private struct State {
        /// The pipe's write end, or -1 once the thread has exited and closed it.
        var wakeFD: Int32
        var stopRequested = false
        /// The watching thread, once it has started.
        var thread: pthread_t?
    }

    private let state: LarderMutex<State>
    /// The system calls the watcher makes (the seam tests may replace).
    private let calls: SystemCalls
    /// Signalled once when the thread exits (and re-signalled by each waiter, so `stop()` can repeat).
    private let exited = DispatchSemaphore(value: 0)

    private init(wakeFD: Int32, calls: SystemCalls) {
        state = LarderMutex(State(wakeFD: wakeFD))
        self.calls = calls
    }

    /// Whether the thread is still watching.
    var isRunning: Bool {
        state.withLock { $0.wakeFD >= 0 && !$0.stopRequested }
    }

    /// The ``PressureStall/some`` triggers to try in turn: 150 ms of "some" stall per 1 s window, then the
    /// two-second form that unprivileged processes may use.
    static let warningTriggers = ["some 150000 1000000", "some 300000 2000000"]
    /// The ``PressureStall/full`` triggers to try in turn: 500 ms of "full" stall per 1 s window, then the
    /// two-second form.
    static let criticalTriggers = ["full 500000 1000000", "full 1000000 2000000"]

    /// Installs the triggers and starts the thread; `nil` when no path accepts a trigger.
    static func start(
        paths: [String], calls: SystemCalls = .live, handler: @escaping @Sendable (PressureStall) -> Void
    ) -> PressureStallWatcher? {
        for path in paths {
            guard let warningFD = openTrigger(path: path, triggers: warningTriggers, calls: calls) else { continue }
            let criticalFD = openTrigger(path: path, triggers: criticalTriggers, calls: calls) ?? -1
            var pipeFDs: [Int32] = [-1, -1]
            guard calls.pipe(&pipeFDs) == 0 else {
                _ = calls.close(warningFD)
                if criticalFD >= 0 { _ = calls.close(criticalFD) }
                return nil
            }
            let watcher = PressureStallWatcher(wakeFD: pipeFDs[1], calls: calls)
            let readFD = pipeFDs[0]
            let thread = Thread {
                watcher.run(warningFD: warningFD, criticalFD: criticalFD, wakeReadFD: readFD, handler: handler)
            }
            thread.name = "Larder memory pressure"
            thread.start()
            return watcher
        }
        return nil
    }

    /// Opens `path` and writes the first trigger the kernel accepts; `nil` when none is accepted
    /// (no such file, no permission, no PSI support).
    private static func openTrigger(path: String, triggers: [String], calls: SystemCalls) -> Int32? {
        for trigger in triggers {
            let fd = calls.openat(SystemCalls.atCurrentDirectory, path, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0)
            guard fd >= 0 else { return nil }
            // The kernel expects the terminating NUL to be written too.
            let bytes = Array(trigger.utf8) + [0]
            let written = bytes.withUnsafeBytes { calls.write(fd, $0.baseAddress!, $0.count) }
            if written > 0 { return fd }
            _ = calls.close(fd)
        }
        return nil
    }

    /// The thread's body: waits for trigger events or the wake pipe, then closes every descriptor.
    private func run(
        warningFD: Int32, criticalFD: Int32, wakeReadFD: Int32,
        handler: @Sendable (PressureStall) -> Void
    ) {
        state.withLock { $0.thread = pthread_self() }
        var fds = [
            pollfd(fd: wakeReadFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: warningFD, events: Int16(POLLPRI), revents: 0),
            // A negative descriptor is ignored by poll(), which covers a missing critical trigger.
            pollfd(fd: criticalFD, events: Int16(POLLPRI), revents: 0),
        ]
        watching: while true {
            let ready = calls.poll(&fds, fds.count, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break watching
            }
            if fds[0].revents != 0 { break watching }
            // POLLERR means the trigger is gone (for example, its cgroup was removed).
            if (fds[1].revents | fds[2].revents) & Int16(POLLERR | POLLNVAL) != 0 { break watching }
            if fds[2].revents & Int16(POLLPRI) != 0 {
                handler(.full)
            } else if fds[1].revents & Int16(POLLPRI) != 0 {
                handler(.some)
            }
        }
        _ = calls.close(warningFD)
        if criticalFD >= 0 { _ = calls.close(criticalFD) }
        _ = calls.close(wakeReadFD)
        state.withLock { state in
            // Closed under the lock, so `stop()` never writes to a closed or reused descriptor.
            _ = calls.close(state.wakeFD)
            state.wakeFD = -1
        }
        exited.signal()
    }

    /// Wakes the thread to exit and, unless called on that thread, waits until it has.
    func stop() {
        let onWatcherThread = state.withLock { state -> Bool in
            if !state.stopRequested && state.wakeFD >= 0 {
                var byte: UInt8 = 1
                _ = calls.write(state.wakeFD, &byte, 1)
            }
            state.stopRequested = true
            guard let thread = state.thread else { return false }
            return pthread_equal(thread, pthread_self()) != 0
        }
        guard !onWatcherThread else { return }
        exited.wait()
        exited.signal()
    }
}
#endif
