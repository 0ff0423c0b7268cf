/// How a ``MemoryCache`` chooses which entries to drop when it is over a limit, is trimmed or
/// meets memory pressure.
///
/// ```swift
/// let cache = try MemoryCache<String, Data>(countLimit: 10_000, policy: .recommended)
/// ```
///
/// - ``lru``: exact least recently used, the default of ``MemoryCache``. A read moves the entry to
///   the end of the recency order, and ``MemoryCache/keys()`` lists that order.
/// - ``tinyLFU``: frequency-aware and self-tuning, the memory tier of ``HybridCache`` by default.
///   A read writes at most a bit, a count and a time stamp in the entry, so it costs about what a
///   dictionary read costs, and on real traces it misses less than LRU (see <doc:EvictionPolicies>).
/// - ``recommended``: the policy Larder recommends for a cache whose workload is not known; today
///   ``tinyLFU``.
public struct EvictionPolicy: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline
    enum Kind: UInt8, Hashable, Sendable {
        case lru, tinyLFU
    }

    @usableFromInline let kind: Kind

    @inlinable
    init(_ kind: Kind) {
        self.kind = kind
    }

    /// Exact least recently used: when a limit is exceeded, the entries read or written longest
    /// ago go first. ``MemoryCache``'s default.
    public static let lru = EvictionPolicy(.lru)

    /// Windowed TinyLFU with a self-sizing window: a new entry enters a small recency window, and
    /// leaves it for the main area only if a frequency sketch says it is used more often than the
    /// entry it would displace. The window grows when recently refused keys come back and shrinks
    /// when recently evicted main entries do, so recency-heavy workloads get an LRU-like cache and
    /// frequency-heavy ones a frequency-guarded one; a sampled LRU run alongside holds the window
    /// up while plain LRU would miss clearly less. A read writes at most a bit, a count and (in
    /// the window) a time stamp in the entry, by which the window evicts in nearly LRU order; it
    /// never reorders a list.
    public static let tinyLFU = EvictionPolicy(.tinyLFU)

    /// The policy Larder recommends, and ``HybridCache``'s memory tier uses by default: today
    /// ``tinyLFU``. It may change in a later version as better policies are measured.
    public static let recommended = tinyLFU

    /// The policy's short name, as `larder-bench hitratio` prints it: `lru` or `tinylfu`.
    public var description: String {
        switch kind {
        case .lru: "lru"
        case .tinyLFU: "tinylfu"
        }
    }
}
