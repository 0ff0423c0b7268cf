/// A cache that gives memory back when the system runs short of it.
protocol MemoryPressureResponder: AnyObject, Sendable {
    /// Frees memory as `level` asks.
    func handleMemoryPressure(_ level: MemoryPressureLevel)
}

/// The process's one memory pressure monitor and the caches it serves.
///
/// One ``MemoryPressureMonitor`` (one thread on Linux, one Dispatch source on Apple platforms)
/// for every cache, however many there are: it starts when the first cache registers and stops
/// when the last one leaves. Caches are held weakly and unregister when freed, so registering
/// never keeps a cache alive. Each event reaches every registered cache, one after the other, on
/// the monitor's thread.
///
/// ``shared`` is the center caches use; tests make their own with a monitor they drive.
final class MemoryPressureCenter: Sendable {
    /// The center every cache uses unless told otherwise.
    static let shared = MemoryPressureCenter { handler in MemoryPressureMonitor(handler: handler) }

    /// What the center hands a registering cache, to give back when it leaves.
    struct Registration: Sendable, Hashable {
        fileprivate let token: Int
    }

    /// A registered cache, held weakly.
    private struct Subscriber {
        weak var responder: (any MemoryPressureResponder)?
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextToken = 0
        var monitor: MemoryPressureMonitor?
        /// Monitors started so far (tests check there is one per run of registrations).
        var monitorsStarted = 0
    }

    private let state = LarderMutex(State())
    /// Starts a monitor that calls the handler with each event.
    private let startMonitor: @Sendable (@escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureMonitor

    /// Creates a center whose monitor `startMonitor` makes, when the first cache registers.
    init(startMonitor: @escaping @Sendable (@escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureMonitor) {
        self.startMonitor = startMonitor
    }

    /// Adds `responder` to the caches each event reaches, starting the monitor if it is the first.
    func register(_ responder: any MemoryPressureResponder) -> Registration {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.subscribers[token] = Subscriber(responder: responder)
            if state.monitor == nil {
                // Weak: the shared center lives forever, but a test's center must be freed.
                // Starting under the lock is short (a thread or source is created, not waited for).
                state.monitor = startMonitor { [weak self] level in self?.deliver(level) }
                state.monitorsStarted += 1
            }
            return Registration(token: token)
        }
    }

    /// Removes a cache; the monitor stops when it was the last. Removing twice does nothing.
    func unregister(_ registration: Registration) {
        let idle = state.withLock { state -> MemoryPressureMonitor? in
            state.subscribers[registration.token] = nil
            guard state.subscribers.isEmpty else { return nil }
            defer { state.monitor = nil }
            return state.monitor
        }
        // Outside the lock: stopping waits for the monitor's thread, which may be delivering.
        idle?.stop()
    }

    /// Hands `level` to every registered cache still alive, outside the lock.
    func deliver(_ level: MemoryPressureLevel) {
        let responders = state.withLock { state in state.subscribers.values.compactMap(\.responder) }
        for responder in responders { responder.handleMemoryPressure(level) }
    }

    /// The caches registered and still alive.
    var registeredCount: Int {
        state.withLock { state in state.subscribers.values.count { $0.responder != nil } }
    }

    /// The monitor running now, if any.
    var monitor: MemoryPressureMonitor? {
        state.withLock { $0.monitor }
    }

    /// How many monitors the center has started.
    var monitorsStarted: Int {
        state.withLock { $0.monitorsStarted }
    }
}
