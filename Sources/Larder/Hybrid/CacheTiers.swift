/// Which tiers of a ``HybridCache`` a call reads or writes: CacheHandler's per-call
/// `[.memory, .disk]` choice.
///
/// ```swift
/// let fast = try cache.value(forKey: "feed", from: .memory)   // never touches the disk
/// try cache.store(thumbnail, forKey: "thumb/1", in: .disk)   // kept out of memory
/// ```
public struct CacheTiers: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates a set of tiers from its raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The in-memory tier (a ``MemoryCache``).
    public static let memory = CacheTiers(rawValue: 1 << 0)
    /// The persistent tier (a ``DiskCache``), together with read-through preloaded entries.
    public static let disk = CacheTiers(rawValue: 1 << 1)
    /// The shared remote tier (``HybridCacheOptions/remote``), consulted after memory and disk.
    /// Ignored by a cache without one.
    public static let remote = CacheTiers(rawValue: 1 << 2)
    /// Memory in front of disk, in front of the remote tier when there is one. The default.
    public static let all: CacheTiers = [.memory, .disk, .remote]
}
