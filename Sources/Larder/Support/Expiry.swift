import Foundation

/// When a stored value expires: the same two spellings, with the same rules, on every tier.
///
/// ```swift
/// try memory.store(avatar, forKey: "avatar", expiry: .seconds(300))
/// try disk.store(data, forKey: "feed")                          // .default: the disk's sliding default
/// try hybrid.store(data, forKey: "token", expiry: .seconds(3600))
/// ```
///
/// - ``default`` is the tier's default: ``MemoryCache/defaultExpiration`` in memory (never, when
///   it is `nil`); ``DiskCacheOptions/defaultExpiration`` on disk, measured from the last store,
///   read or touch (SPTPersistentCache's `ttl` 0). A ``HybridCache`` applies the disk's rule to
///   both tiers.
/// - ``seconds(_:)`` is a fixed lifetime, counted from the store whatever the reads. The value
///   must be finite and above zero: every tier rejects zero, negative and non-finite values with
///   ``CacheError/Code/invalidArgument`` and keeps the previous entry. Values above
///   ``maximumSeconds`` are clamped to it.
///
/// Locked disk records never expire, whatever their expiry (see `DiskCache.lock(forKeys:)`).
public enum Expiry: Sendable, Hashable, CustomStringConvertible {
    /// The tier's default expiry.
    case `default`
    /// This many seconds after the store.
    case seconds(TimeInterval)

    /// The longest lifetime a value can be given: 100 years of 365.25 days (3,155,760,000 s).
    /// Longer lifetimes (an HTTP `max-age` of 1e30, say) are clamped to it.
    public static let maximumSeconds: TimeInterval = 3_155_760_000

    /// `default`, or the number of seconds, as in `300 s`.
    public var description: String {
        switch self {
        case .default: "default"
        case .seconds(let seconds): "\(seconds) s"
        }
    }

    /// The lifetime in seconds, clamped to ``maximumSeconds``; `nil` for ``default``.
    /// - Throws: ``CacheError/Code/invalidArgument`` naming `key` for zero, negative or
    ///   non-finite seconds.
    /// - Parameter key: Evaluated only for the error, so that a hot path pays nothing for it.
    @inlinable
    package func validatedSeconds(key: @autoclosure () -> String?) throws(CacheError) -> TimeInterval? {
        guard case .seconds(let seconds) = self else { return nil }
        guard seconds.isFinite, seconds > 0 else {
            throw CacheError(
                .invalidArgument, "an expiry must be a finite number of seconds above 0 (or .default), not \(seconds)", key: key())
        }
        return min(seconds, Self.maximumSeconds)
    }
}
