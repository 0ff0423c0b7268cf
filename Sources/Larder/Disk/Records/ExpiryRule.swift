/// SPTPersistentCache's expiry rule, in one place: the disk tier, the hybrid and the `larder`
/// command all ask it.
///
/// A record expires when it is unlocked and `now - anchor > threshold`, strictly, in whole
/// seconds. The threshold is the header's `ttl` when above 0, else the cache's default
/// expiration (rounded down to whole seconds). The anchor is the header's update time; for `ttl` 0
/// records it slides with every use, so the index may hold a later one than the header shows.
/// Locked records never expire.
package struct ExpiryRule: Sendable, Hashable {
    /// The cache's default expiration, in seconds (``DiskCacheOptions/defaultExpiration``).
    package var defaultExpiration: Double

    /// A rule with the given default expiration.
    package init(defaultExpiration: Double) {
        self.defaultExpiration = defaultExpiration
    }

    /// The header `ttl` that stores `expiry`: 0 for ``Expiry/default``, else the seconds rounded
    /// up (after ``Expiry/validatedSeconds(key:)`` clamped them).
    package static func headerTTL(for expiry: Expiry, key: String?) throws(CacheError) -> UInt64 {
        guard let seconds = try expiry.validatedSeconds(key: key) else { return 0 }
        return UInt64(seconds.rounded(.up))
    }

    /// How many seconds past its anchor a record of `ttl` lives.
    package func threshold(ttl: UInt64) -> Double {
        ttl > 0 ? Double(ttl) : defaultExpiration.rounded(.down)
    }

    /// The update time expiry is measured from: the header's, or for a `ttl` 0 record the later
    /// of it and the time the index holds (a use the header does not show yet).
    package func anchor(ttl: UInt64, headerUpdateTime: UInt64, indexedUpdateTime: UInt64?) -> UInt64 {
        guard ttl == 0, let indexedUpdateTime else { return headerUpdateTime }
        return max(headerUpdateTime, indexedUpdateTime)
    }

    /// Whether a record with these fields has expired at `now` (seconds since the epoch).
    package func isExpired(lockCount: UInt32, ttl: UInt64, anchor: UInt64, now: Double) -> Bool {
        guard lockCount == 0 else { return false }
        return now.rounded(.down) - Double(anchor) > threshold(ttl: ttl)
    }

    /// Whether an unlocked record with a `ttl` of its own and `deadline` (its anchor plus its
    /// `ttl`) has expired at `now`: ``isExpired(lockCount:ttl:anchor:now:)`` with the sum taken
    /// first, for the index's expiry order.
    package func isPast(deadline: UInt64, now: Double) -> Bool {
        now.rounded(.down) - Double(deadline) > 0
    }

    /// When a record with these fields expires, in seconds since the epoch; `nil` while locked.
    package func expirationTime(lockCount: UInt32, ttl: UInt64, anchor: UInt64) -> Double? {
        lockCount > 0 ? nil : Double(anchor) + threshold(ttl: ttl)
    }
}
