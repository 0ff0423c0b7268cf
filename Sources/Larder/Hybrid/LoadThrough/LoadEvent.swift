import Foundation

/// Something a load-through read (`HybridCache.value(forKey:expiry:staleWindows:orLoad:)`) reports
/// to ``HybridCacheOptions/loadEventHandler``.
///
/// The handler runs on whichever thread the load ran, outside the cache's locks; it must return
/// quickly and must not wait for a load-through read of the same key.
public enum LoadEvent: Sendable {
    /// Why a stale value was served.
    public enum StaleReason: String, Sendable, Hashable {
        /// The value is being refreshed in the background (stale-while-revalidate).
        case revalidating
        /// The loader failed (stale-if-error).
        case loadFailed
    }

    /// A loader returned `byteCount` bytes for `key`, which were stored (or `storeFailed` follows
    /// first) before any caller resumed.
    case loaded(key: String, byteCount: Int)
    /// A loader threw; the error, a ``CacheError/Code/loadFailed`` whose
    /// ``CacheError/underlying`` is what it threw, reached every caller not served a stale value.
    case loadFailed(key: String, error: CacheError)
    /// A caller got a value that had expired `expiredFor` seconds earlier, instead of waiting for
    /// the load (``StaleReason/revalidating``) or instead of its error (``StaleReason/loadFailed``).
    case servedStale(key: String, expiredFor: TimeInterval, reason: StaleReason)
    /// A loaded value could not be stored; the callers got it all the same, and the next read
    /// of `key` loads again.
    case storeFailed(key: String, error: CacheError)
}
