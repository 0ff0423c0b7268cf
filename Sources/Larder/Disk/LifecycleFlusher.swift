// DARWIN-ONLY IN EFFECT, UNVERIFIED HERE. The only place Larder reacts to an app's lifecycle:
// `DiskCacheOptions.flushesOnBackground`. The observing (Foundation's `NotificationCenter`) is
// platform-neutral and tested on Linux through a private center and made-up names
// (`LifecycleFlushTests`); what only Apple platforms run (the UIKit and AppKit notification
// names, and the expiring activity that keeps the app alive while it flushes) sits below under
// `#if canImport(UIKit)` / `#if canImport(AppKit)`, written from Apple's documentation and never
// compiled on the Linux machines that run `.ci/run` (no Apple SDK). `.github/workflows/apple.yml`
// builds it and runs the Apple-only test that checks the names against UIKit's and AppKit's.
// On Linux and watchOS no name is observed and the option does nothing.
//
// The names are spelled as strings rather than imported from UIKit or AppKit so that Larder
// links neither: a command-line tool or a server on macOS that uses Larder must not load AppKit.
import Foundation

/// Flushes a ``DiskCache`` when the app moves to the background or is about to exit.
final class LifecycleFlusher: Sendable {
    /// When an app may be killed without running more of its code.
    enum Moment: Sendable {
        /// It moved to the background and will be suspended (then perhaps killed unseen).
        case background
        /// It is about to exit.
        case termination
    }

    /// The notifications the platform posts at each moment: none where Larder knows of none.
    static var platformNotifications: [(name: Notification.Name, moment: Moment)] {
        #if canImport(UIKit) && !os(watchOS)
        // `UIApplication.didEnterBackgroundNotification`, `UIApplication.willTerminateNotification`.
        [
            (Notification.Name("UIApplicationDidEnterBackgroundNotification"), .background),
            (Notification.Name("UIApplicationWillTerminateNotification"), .termination),
        ]
        #elseif canImport(AppKit) && os(macOS)
        // `NSApplication.willTerminateNotification`. A Mac app is not suspended in the background.
        [(Notification.Name("NSApplicationWillTerminateNotification"), .termination)]
        #else
        []
        #endif
    }

    /// The center observed and the observers' tokens, while observing. Not `Sendable` values,
    /// only ever touched under the lock.
    private let observation = LarderMutex<(center: NotificationCenter, tokens: [any NSObjectProtocol])?>(nil)

    init() {}

    /// Starts flushing `cache` at each moment `notifications` name, posted on `center`. A cache
    /// starts it at open when ``DiskCacheOptions/flushesOnBackground`` is set; tests pass a
    /// private center and names of their own. Starting twice is harmless.
    func start(
        flushing cache: DiskCache, center: NotificationCenter = .default,
        notifications: [(name: Notification.Name, moment: Moment)] = LifecycleFlusher.platformNotifications
    ) {
        guard !notifications.isEmpty else { return }
        observation.withLock { observation in
            guard observation == nil else { return }
            var tokens: [any NSObjectProtocol] = []
            for (name, moment) in notifications {
                // Weak: the observer must not keep the cache open; `close` removes it.
                tokens.append(
                    center.addObserver(forName: name, object: nil, queue: nil) { [weak cache] _ in
                        guard let cache else { return }
                        Self.flush(cache, at: moment)
                    })
            }
            observation = (center, tokens)
        }
    }

    /// Stops observing. Harmless when not observing.
    func stop() {
        observation.withLock { observation in
            guard let (center, tokens) = observation else { return }
            for token in tokens { center.removeObserver(token) }
            observation = nil
        }
    }

    /// Whether it is observing notifications.
    var isObserving: Bool { observation.withLock { $0 != nil } }

    /// Flushes `cache`, on the posting thread. A failure is the cache's events' business: there
    /// is no caller to throw to.
    private static func flush(_ cache: DiskCache, at moment: Moment) {
        #if canImport(UIKit) && !os(watchOS)
        if moment == .background {
            // Off the main thread, with the system keeping the app running until the flush ends
            // (or until it must suspend the app: then `expired` is `true` and nothing starts).
            ProcessInfo.processInfo.performExpiringActivity(withReason: "Larder: writing the cache's index") { expired in
                guard !expired else { return }
                _ = try? cache.flush()
            }
            return
        }
        #endif
        // About to exit (or a test's made-up name): the flush must end before the handler returns.
        _ = try? cache.flush()
    }
}
