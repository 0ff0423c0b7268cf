import Foundation

/// A record loaded from a ``DiskCache``: the payload and what its header says.
public struct CacheRecord: Sendable, Hashable {
    /// The key it was stored under.
    public var key: String
    /// The payload.
    public var data: Data
    /// Time to live in seconds; 0 means the cache's default expiration, sliding with each read.
    public var ttl: TimeInterval
    /// How many times it is locked against expiry.
    public var lockCount: Int
    /// Whether ``lockCount`` is above 0.
    public var isLocked: Bool { lockCount > 0 }
    /// The last update (store, or for `ttl` 0 records also a read or touch), seconds since the epoch.
    public var updateTime: Double
    /// The last use (store, load or touch), seconds since the epoch.
    public var lastAccessTime: Double
    /// When it expires, seconds since the epoch; `nil` while locked.
    public var expirationTime: Double?

    /// Creates a record value.
    public init(
        key: String, data: Data, ttl: TimeInterval, lockCount: Int, updateTime: Double,
        lastAccessTime: Double, expirationTime: Double?
    ) {
        self.key = key
        self.data = data
        self.ttl = ttl
        self.lockCount = lockCount
        self.updateTime = updateTime
        self.lastAccessTime = lastAccessTime
        self.expirationTime = expirationTime
    }
}

/// Something a ``DiskCache`` reports to its ``DiskCacheOptions/eventHandler``.
public enum CacheEvent: Sendable, Hashable {
    /// A record failed validation; its file was removed (unless the cache is read-only) and the
    /// load was a miss. `key` is the requested key, `file` the record's path.
    case corruptRecordRemoved(key: String?, file: String, reason: CorruptionReason)
    /// A record was removed by collection or a limit.
    case recordEvicted(key: String?, file: String, reason: EvictionCause)
    /// A collection finished.
    case collectionFinished(CollectionReport)
    /// The background index build finished, with the number of records found.
    case indexReady(recordCount: Int)
    /// A file-system call failed where the cache could carry on (write-back of access times,
    /// snapshot writes, leftover temporary files).
    case ioError(operation: String, path: String, errno: Int32)
}

/// Why a record left the cache without being asked to.
public enum EvictionCause: String, Sendable, Hashable, CaseIterable {
    /// It had expired.
    case expired
    /// The cache was over its size limit (or the volume's free-space floor).
    case sizeLimit
    /// The cache was over its count limit.
    case countLimit
    /// A store failed with a full volume and room was made.
    case diskFull
}

/// What one collection removed, and why.
public struct CollectionReport: Sendable, Hashable {
    /// One removed record.
    public struct Removal: Sendable, Hashable {
        /// The record's key, when known.
        public var key: String?
        /// The record's file name.
        public var file: String
        /// Bytes it occupied on disk.
        public var size: Int
        /// Why it went.
        public var reason: EvictionCause
        /// Whether it was locked (only the size limit removes locked records, and only past it).
        public var wasLocked: Bool
    }
    /// Every record removed, in the order removed.
    public var removed: [Removal] = []
    /// Bytes freed on disk.
    public var bytesFreed: Int { removed.reduce(0) { $0 + $1.size } }
    /// Records that remained after the pass.
    public var remainingCount: Int = 0
    /// Bytes that remained after the pass.
    public var remainingSize: Int = 0
    /// The size limit in force for the pass (after the free-space floor), 0 for none.
    public var effectiveSizeLimit: Int = 0

    /// The number of records removed for `reason`.
    public func count(for reason: EvictionCause) -> Int { removed.count { $0.reason == reason } }
}

/// Counters kept by a ``DiskCache`` since it opened.
public struct DiskCacheStatistics: Sendable, Hashable {
    /// Loads that returned a record.
    public var hits = 0
    /// Loads that returned nothing (absent, expired or corrupt).
    public var misses = 0
    /// Loads that found an expired record.
    public var expirations = 0
    /// Corrupt records found and removed.
    public var corruptRecordsRemoved = 0
    /// Records removed by collection or limits, by cause.
    public var evictions: [EvictionCause: Int] = [:]
    /// Payload bytes written by stores.
    public var bytesWritten = 0
    /// Payload bytes returned by loads.
    public var bytesRead = 0
    /// Collections run.
    public var collections = 0
    /// Successful stores.
    public var stores = 0

    /// Creates zeroed counters.
    public init() {}

    /// Every eviction, whatever the cause.
    public var totalEvictions: Int { evictions.values.reduce(0, +) }
}
