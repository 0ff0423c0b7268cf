// Darwin-only branch: the `#if canImport(Darwin)` parts of `MemoryPressureMonitor` (Dispatch's
// memory pressure source) are written for Apple platforms and not compiled by `.ci/run`, which
// runs on Linux only; keep them this small. Linux's side is `Support/PressureStallWatcher.swift`.
import Dispatch
import Synchronization

/// How severe a memory pressure event is.
public enum MemoryPressureLevel: Hashable, Sendable {
    /// Memory is getting short: caches should give back some of what they hold.
    case warning
    /// Memory is critically short: caches should give back everything they can.
    case critical
}

/// Delivers the system's memory pressure events to a handler, on a background thread or queue.
///
/// On Apple platforms the events come from Dispatch's memory pressure source. On Linux they come
/// from pressure-stall (PSI) triggers on `/proc/pressure/memory`, or the cgroup v2
/// `/sys/fs/cgroup/memory.pressure` file, watched by one dedicated thread per monitor:
/// `.warning` when tasks stalled on memory for 150 ms within one second ("some"), `.critical` when
/// all tasks stalled for 500 ms within one second ("full"). Where the kernel refuses one-second
/// windows (unprivileged processes may only use multiples of two seconds), the window and
/// threshold double. Where the kernel offers neither file, or refuses the triggers, the monitor
/// is silently inactive (``isActive`` is `false`) and never calls the handler.
///
/// The monitor stops when ``stop()`` is called or when it is freed.
///
/// Caches do not each make one: every ``MemoryCache`` with ``MemoryCache/respondsToMemoryPressure``
/// set (and so every ``HybridCache`` by default) shares the process's single monitor, which
/// starts with the first such cache and stops with the last. Make your own only to react to
/// pressure yourself.
public final class MemoryPressureMonitor: Sendable {
    #if canImport(Darwin)
    private let source: LarderMutex<(any DispatchSourceMemoryPressure)?>
    #else
    private let watcher: PressureStallWatcher?
    #endif

    /// Starts watching for memory pressure.
    /// - Parameter handler: Called with each event, on a background thread (never concurrently
    ///   with itself).
    public convenience init(handler: @escaping @Sendable (MemoryPressureLevel) -> Void) {
        self.init(paths: ["/proc/pressure/memory", "/sys/fs/cgroup/memory.pressure"], handler: handler)
    }

    /// Starts watching the first of `paths` that accepts PSI triggers (Linux); Apple platforms
    /// ignore `paths`. Tests pass paths that do not exist to get an inactive monitor.
    init(paths: [String], handler: @escaping @Sendable (MemoryPressureLevel) -> Void) {
        #if canImport(Darwin)
        let source = DispatchSource.makeMemoryPressureSource(eventMask: [.warning, .critical], queue: .global(qos: .utility))
        source.setEventHandler { [unowned source] in
            let event = source.data
            if event.contains(.critical) {
                handler(.critical)
            } else if event.contains(.warning) {
                handler(.warning)
            }
        }
        source.activate()
        self.source = LarderMutex(source)
        #else
        watcher = PressureStallWatcher.start(paths: paths) { stall in
            switch stall {
            case .some: handler(.warning)
            case .full: handler(.critical)
            }
        }
        #endif
    }

    deinit {
        stop()
    }

    /// Whether the monitor is running and the platform delivers events to it.
    public var isActive: Bool {
        #if canImport(Darwin)
        source.withLock { $0 != nil }
        #else
        watcher?.isRunning ?? false
        #endif
    }

    /// Stops delivering events. When called from another thread than the handler's, returns once
    /// the handler will no longer be called. Calling it again does nothing.
    public func stop() {
        #if canImport(Darwin)
        let source = source.withLock { source in
            defer { source = nil }
            return source
        }
        source?.cancel()
        #else
        watcher?.stop()
        #endif
    }
}
