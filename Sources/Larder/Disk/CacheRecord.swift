import Foundation

/// A record loaded from a ``DiskCache``: the payload and what its header says.
public struct CacheRecord: Sendable, Hashable {
    /// The key it was stored under.
    public var key: String
    /// The payload.
    public var data: Data
    /// The lifetime it was stored with: ``Expiry/default`` (the cache's default expiration,
    /// sliding with each use) or ``Expiry/seconds(_:)``.
    public var expiry: Expiry
    /// How many times it is locked against expiry.
    public var lockCount: Int
    /// Whether ``lockCount`` is above 0.
    public var isLocked: Bool { lockCount > 0 }
    /// The last update (a store, or for ``Expiry/default`` records also a read or touch), seconds since the epoch.
    public var updateTime: Double
    /// The last use (store, load or touch), seconds since the epoch.
    public var lastAccessTime: Double
    /// When it expires, seconds since the epoch; `nil` while locked.
    public var expirationTime: Double?

    /// Creates a record value.
    public init(
        key: String, data: Data, expiry: Expiry, lockCount: Int, updateTime: Double,
        lastAccessTime: Double, expirationTime: Double?
    ) {
        self.key = key
        self.data = data
        self.expiry = expiry
        self.lockCount = lockCount
        self.updateTime = updateTime
        self.lastAccessTime = lastAccessTime
        self.expirationTime = expirationTime
    }
}

/// Something a ``DiskCache`` reports to its ``DiskCacheOptions/eventHandler``.
public enum CacheEvent: Sendable, Hashable {
    /// The cache opened its folder: its ``DiskCacheOptions/name``, the folder's layout, and
    /// whether that layout was detected from the files of a folder without metadata (an
    /// SPTPersistentCache folder) rather than read from the metadata or taken from the options.
    case opened(name: String, layout: FolderLayout, layoutWasDetected: Bool)
    /// A record failed validation; its file was removed (unless the cache is read-only) and the
    /// load was a miss. `key` is the requested key, `file` the record's path.
    case corruptRecordRemoved(key: String?, file: String, reason: CorruptionReason)
    /// A record was removed by collection or a limit.
    case recordEvicted(key: String?, file: String, reason: EvictionReason)
    /// A collection finished.
    case collectionFinished(CollectionReport)
    /// The background index build finished, with the number of records found.
    case indexReady(recordCount: Int)
    /// A file-system call failed where the cache could carry on (write-back of access times,
    /// snapshot writes, leftover temporary files).
    case ioError(operation: String, path: String, errno: Int32)
    /// The cache's folder was deleted behind its back (iOS empties an app's `Caches` folder
    /// when the device runs short of space; a user's `rm -rf`), and the cache made it again at
    /// `path`, with its metadata, temporary folder and lock file, on the next store, collection
    /// or flush. The records were gone with it: the index starts again from what the folder
    /// holds (nothing, unless someone put records there). See the DocC article "Lifecycle".
    case folderRecreated(path: String)
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
        public var reason: EvictionReason
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
    /// Whether the pass was skipped because another collection of the folder was running (in
    /// another process, or another cache of this one) when it began: one collection runs at a
    /// time across the writers that share a folder (``DiskCacheOptions/sharesFolderWithWriters``),
    /// and the one that finds another under way does not wait for it (`false`). A skipped pass
    /// removed nothing; ``remainingCount`` and ``remainingSize`` are the cache's totals when it
    /// was skipped.
    public var wasSkipped: Bool = false

    /// The number of records removed for `reason`.
    public func count(for reason: EvictionReason) -> Int { removed.count { $0.reason == reason } }
}
