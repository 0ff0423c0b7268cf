#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// A source of the current time, shared by every tier so that tests can control expiry.
///
/// Time is measured in seconds since the Unix epoch (1970-01-01 00:00:00 UTC), as a `Double`.
public protocol CacheClock: Sendable {
    /// The current time, in seconds since the Unix epoch.
    var now: Double { get }
}

/// The wall clock: `Date().timeIntervalSince1970`.
public struct SystemClock: CacheClock {
    /// Creates the wall clock.
    public init() {}

    /// The current wall-clock time, in seconds since the Unix epoch.
    public var now: Double { Date().timeIntervalSince1970 }

    /// Whether the wall clock has reached `deadline` (seconds since the Unix epoch): the same
    /// answer as `now >= deadline`, cheaper when the deadline is more than two seconds away.
    ///
    /// A memory hit on an entry with a lifetime (every entry a ``HybridCache`` promotes: the disk
    /// gives each one) asks this. Reading the precise time costs about half of such a hit
    /// (`larder-bench hybrid`); on Linux the kernel's coarse clock
    /// (`CLOCK_REALTIME_COARSE`, the same clock updated once per tick, read from the vDSO without
    /// reading the time stamp counter) answers first. It lags the precise clock by at most one
    /// tick (1 to 10 ms), so a deadline more than two seconds past its whole second has surely not been reached;
    /// closer deadlines, and other platforms, read the precise time.
    @usableFromInline
    static func hasReached(_ deadline: Double) -> Bool {
        #if os(Linux)
        var coarse = timespec()
        if clock_gettime(CLOCK_REALTIME_COARSE, &coarse) == 0, Double(coarse.tv_sec) + 2 < deadline {
            return false
        }
        #endif
        return Date().timeIntervalSince1970 >= deadline
    }
}

/// A clock that only moves when told to: for tests and simulations.
///
/// ```swift
/// let clock = ManualClock(now: 1_700_000_000)
/// let cache = try MemoryCache<String, Int>(defaultExpiration: 60, clock: clock)
/// clock.advance(by: 61)
/// ```
public final class ManualClock: CacheClock {
    private let storage: LarderMutex<Double>

    /// Creates a clock that reads `now` until it is moved.
    /// - Parameter now: The starting time, in seconds since the Unix epoch.
    public init(now: Double = 1_700_000_000) {
        storage = LarderMutex(now)
    }

    /// The clock's current time, in seconds since the Unix epoch.
    public var now: Double {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    /// Moves the clock forward (or, with a negative interval, backward).
    /// - Parameter seconds: How far to move, in seconds.
    public func advance(by seconds: Double) {
        storage.withLock { $0 += seconds }
    }
}
