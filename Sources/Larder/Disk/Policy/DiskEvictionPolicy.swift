/// How a ``DiskCache`` chooses which records to evict when a store takes it over its size limit.
///
/// ```swift
/// var options = DiskCacheOptions(directory: folder)
/// options.sizeLimit = 500 << 20
/// options.policy = .lru  // SPTPersistentCache's order; the default is .recommended
/// ```
///
/// - ``lru``: exact least recently used, by bytes: the records read or written longest ago go
///   first. SPTPersistentCache's order, and ``DiskCacheOptions/spt(directory:)``'s.
/// - ``adaptive``: frequency- and size-aware, self-tuning; it misses fewer requests and fewer bytes
///   than LRU on image and response traces (see <doc:EvictionPolicies>).
/// - ``recommended``: the policy Larder recommends for a disk tier whose workload is not known,
///   the default of ``DiskCacheOptions`` and so of ``HybridCache``; today ``adaptive``.
///
/// Under either policy, expired records go before any other, locked records are never evicted
/// while an unlocked one could be, and the count limit and the free-space floor hold after every
/// store and collection. The policy weighs the ``DiskCacheOptions/sizeLimit``: without one, the
/// count limit and the free-space floor evict least recently used first under either policy.
public struct DiskEvictionPolicy: Hashable, Sendable, CustomStringConvertible {
    enum Kind: UInt8, Hashable, Sendable {
        case lru, adaptive
    }

    let kind: Kind

    init(_ kind: Kind) {
        self.kind = kind
    }

    /// Exact least recently used: when the cache is over a limit, the records read or written
    /// longest ago go first. The order SPTPersistentCache keeps, and ``DiskCacheOptions/spt(directory:)``'s.
    public static let lru = DiskEvictionPolicy(.lru)

    /// A recency window in front of a frequency-guarded main area, weighing sizes: a new record
    /// enters the window, and when it leaves it, it displaces records of the main area only if it
    /// was used more often than all of those whose bytes it takes, so a large record must earn
    /// the bytes of the many small ones it would displace, and a one-off scan does not flush what
    /// is used often. The window's share of the size limit climbs towards fewer misses (of
    /// requests and of bytes alike), and a sampled LRU run alongside raises it while plain LRU
    /// would miss clearly less.
    ///
    /// A store the policy does not admit still succeeds, and its record is evicted before the
    /// store returns, counted and reported as any other eviction (``CacheStatistics/evictions``
    /// and ``CacheEvent/recordEvicted(key:file:reason:)``, with ``EvictionReason/sizeLimit``): a
    /// new record that loses to the records it would displace, or one larger than the size limit. The memory tier of a ``HybridCache``
    /// still holds its value. The policy's state (its queues and frequency counts) is kept in
    /// the index image when a whole image is written (`flush()`, `close()`),
    /// so a reopened cache evicts as the closed one would have; when the image no longer matches
    /// it (or the size limit changed), a reopened cache starts it afresh from the
    /// least-recently-used order its index image records.
    public static let adaptive = DiskEvictionPolicy(.adaptive)

    /// The policy Larder recommends, and the default of ``DiskCacheOptions`` (and so of a
    /// ``HybridCache``'s disk tier): today ``adaptive``. It may change in a later version as better
    /// policies are measured.
    public static let recommended = adaptive

    /// The policy's short name: `lru` or `adaptive`.
    public var description: String {
        switch kind {
        case .lru: "lru"
        case .adaptive: "adaptive"
        }
    }
}
