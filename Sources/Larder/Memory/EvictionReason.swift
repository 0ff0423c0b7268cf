/// Why a cache dropped a value on its own, as told to an eviction handler.
///
/// Values the caller removes (``MemoryCache/removeValue(forKey:)``, ``MemoryCache/removeAll()``)
/// or replaces by a new write are not evictions, as with `NSCacheDelegate`.
public enum EvictionReason: Hashable, Sendable {
    /// The cache held more entries than its count limit.
    case countLimit
    /// The cache's entries cost more in total than its cost limit.
    case costLimit
    /// The value's time to live had passed.
    case expired
    /// The system reported memory pressure.
    case memoryPressure
    /// The caller asked for a trim (``MemoryCache/trim(toCount:)``, ``MemoryCache/trim(toCost:)``).
    case trimmed
}
