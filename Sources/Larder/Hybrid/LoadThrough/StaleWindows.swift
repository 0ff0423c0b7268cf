import Foundation

/// How long past its expiry a value may still be served by a load-through read
/// (`HybridCache.value(forKey:expiry:staleWindows:orLoad:)`): RFC 5861's `stale-while-revalidate`
/// and `stale-if-error`.
///
/// ```swift
/// var options = HybridCacheOptions(directory: cachesURL)
/// options.staleWindows = StaleWindows(whileRevalidate: 60, ifError: 24 * 3600)
/// ```
///
/// A value is stale once its disk record has expired; it is "expired less than `window` ago"
/// while `now - expirationTime < window` (``CacheRecord/expirationTime``). Locked records never
/// expire, so they are never stale.
///
/// A stale value is read from its disk record, which the disk keeps for the cache's longer
/// window (``DiskCache/staleRetention``, raised to it when the hybrid is made): a plain read
/// (`value(forKey:from:)`) of such a record is a miss that leaves it in place, and a collection
/// removes it only once it has been expired longer than the window. A removal, a store under the
/// key and `removeAll()` end it at once; the disk's limits evict it as any other record. A
/// call's own windows (`value(forKey:expiry:staleWindows:orLoad:)`) longer than the cache's read
/// only what the disk still holds: a record a read or a collection removed past the cache's
/// windows is gone. A value stored in memory only has no record, so it is never served stale.
public struct StaleWindows: Sendable, Hashable {
    /// Seconds past its expiry during which a value is returned at once while one background load
    /// refreshes it; 0 turns it off (0).
    public var whileRevalidate: TimeInterval
    /// Seconds past its expiry during which a value is returned instead of the loader's error;
    /// 0 turns it off (0).
    public var ifError: TimeInterval

    /// No stale value is ever served: an expired value is a miss.
    public static let none = StaleWindows()

    /// Creates windows, in seconds; each must be finite and not negative (0, off, by default).
    /// - Parameters:
    ///   - whileRevalidate: Serve a value expired less than this long ago while one load refreshes it.
    ///   - ifError: Serve a value expired less than this long ago when the load fails.
    public init(whileRevalidate: TimeInterval = 0, ifError: TimeInterval = 0) {
        self.whileRevalidate = whileRevalidate
        self.ifError = ifError
    }

    /// The longer of the two windows: how far back a stale record is worth reading.
    var longest: TimeInterval { max(whileRevalidate, ifError) }

    /// What is wrong with the windows, or `nil` when both are finite and not negative.
    @usableFromInline
    var problem: String? {
        for (name, value) in [("whileRevalidate", whileRevalidate), ("ifError", ifError)] where !(value.isFinite && value >= 0) {
            return "stale window \(name) must be finite and not negative, not \(value)"
        }
        return nil
    }
}
