/// Why a cache dropped a value on its own: the one reason type of every tier, told to a memory
/// tier's eviction handler, in a disk tier's ``CacheEvent/recordEvicted(key:file:reason:)`` and
/// ``CollectionReport``, and counted by reason in ``CacheStatistics/evictions``.
///
/// Values the caller removes (``MemoryCache/remove(forKey:)``, `DiskCache.removeAll()`, ...)
/// or replaces by a new write are not evictions, as with `NSCacheDelegate`.
public enum EvictionReason: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The cache held more entries than its count limit.
    case countLimit
    /// The memory tier's entries cost more in total than its cost limit.
    case costLimit
    /// The disk tier was over its size limit (or the volume's free-space floor).
    case sizeLimit
    /// The value's lifetime had passed.
    case expired
    /// The system reported memory pressure.
    case memoryPressure
    /// The caller asked for a trim (``MemoryCache/trim(toCount:)``, ``MemoryCache/trim(toCost:)``).
    case trimmed
    /// A store found the volume full, and the disk tier made room.
    case diskFull

    /// The reason's name, as in `sizeLimit`.
    public var description: String { rawValue }
}
