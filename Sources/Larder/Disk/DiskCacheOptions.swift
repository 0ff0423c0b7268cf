import Foundation

/// How hard a ``DiskCache`` works to keep a stored record across a crash.
public enum Durability: Sendable, Hashable {
    /// Write a temporary file and rename it into place: a process crash leaves the old record or
    /// the new one, never a mix. A power loss may lose recent stores. The default.
    case atomicRename
    /// Also `fsync` the file before the rename and its folder after, so the record survives power loss.
    case fsync
}

/// How much of the volume a ``DiskCache`` leaves free; its effective size limit shrinks to keep it.
public enum MinimumFreeSpace: Sendable, Hashable {
    /// No floor: the volume may fill up. The default.
    case zero
    /// A fraction of the volume's size, from 0 to 1 (SPTPersistentCache hard-codes 0.1).
    case fraction(Double)
    /// A number of bytes.
    case bytes(Int)
}

/// Who besides its owner may use a cache folder, and so which permissions its files get and
/// which existing folders a cache accepts.
public enum CacheSharing: Sendable, Hashable {
    /// The current user only: folders are created 0700 and files 0600; an existing root must
    /// belong to the current user and must not be writable by group or others, else opening it
    /// throws ``CacheError/Code/unsafeDirectory``. The default.
    case ownerOnly
    /// Others may read, only the owner writes: folders 0755, files 0644 (Larder's behaviour
    /// before 0.1). The root is checked as for ``ownerOnly``.
    case readableByOthers
    /// A cache shared by the members of a group (for example, several service accounts): folders
    /// 0770 and files 0660, set with `fchmod` whatever the umask (give the root the group, and
    /// the setgid bit, yourself). The root, the lock file and records may belong to another user
    /// and the root may be writable by its group; a root writable by others is still refused.
    case group

    /// The mode of folders created under this sharing.
    var folderMode: UInt16 {
        switch self {
        case .ownerOnly: 0o700
        case .readableByOthers: 0o755
        case .group: 0o770
        }
    }

    /// The mode of files created under this sharing.
    var fileMode: UInt16 {
        switch self {
        case .ownerOnly: 0o600
        case .readableByOthers: 0o644
        case .group: 0o660
        }
    }
}

/// Settings for a ``DiskCache``. Defaults are in parentheses.
public struct DiskCacheOptions: Sendable {
    /// The cache's folder; created, with its parents, when missing.
    public var directory: URL
    /// Expiry, in seconds, for records stored with `ttl` 0, measured from their last update or
    /// read (30 days, SPTPersistentCache's `defaultExpirationPeriod`).
    public var defaultExpiration: TimeInterval = 30 * 24 * 60 * 60
    /// How keys become file names (``KeyEncoding/sha256``).
    public var keyEncoding: KeyEncoding = .sha256
    /// Whether loads check each payload against its CRC-32 (`true`).
    public var verifiesPayloadChecksum: Bool = true
    /// Whether stores only rename or also `fsync` (``Durability/atomicRename``).
    public var durability: Durability = .atomicRename
    /// Open without the write lock: reads work while another process writes; changes throw
    /// ``CacheError/Code/readOnly`` (`false`).
    public var isReadOnly: Bool = false
    /// Called with structured events (SPTPersistentCache's `debugOutput`), on the calling thread,
    /// outside the cache's locks (`nil`).
    public var eventHandler: (@Sendable (CacheEvent) -> Void)?
    /// The time source (``SystemClock``).
    public var clock: any CacheClock = SystemClock()
    /// Who besides the owner may use the folder: permissions of what the cache creates, and which
    /// existing folders it accepts (``CacheSharing/ownerOnly``).
    public var sharing: CacheSharing = .ownerOnly
    /// The largest payload, in bytes, a record may carry (1 GiB, 1 << 30). A load materialises the
    /// whole payload in memory, so this bounds what one load may allocate, whatever a file in the
    /// folder claims: a larger record on disk is reported as corrupt
    /// (``CorruptionReason/tooLarge``) without being read (a writable cache removes it), and
    /// storing a larger payload throws ``CacheError/Code/invalidArgument``.
    public var maximumRecordSize: Int = 1 << 30

    /// The most bytes the records may occupy on disk, 0 for no limit (0; SPT's `sizeConstraintBytes`).
    public var sizeLimit: Int = 0
    /// The most records, 0 for no limit (0).
    public var countLimit: Int = 0
    /// Space to leave free on the volume (``MinimumFreeSpace/zero``).
    public var minimumFreeDiskSpace: MinimumFreeSpace = .zero
    /// Seconds between scheduled collections (363, SPTPersistentCache's `garbageCollectionInterval`).
    public var garbageCollectionInterval: TimeInterval = 363

    /// Creates options for a cache in `directory`, every other setting at its default.
    public init(directory: URL) {
        self.directory = directory
    }

    /// Checks every value's range.
    /// - Throws: ``CacheError/Code/invalidOptions`` naming the first setting out of range.
    public func validate() throws(CacheError) {
        func fail(_ message: String) -> CacheError {
            CacheError(.invalidOptions, message, path: directory.path)
        }
        guard directory.isFileURL else { throw fail("directory must be a file URL, not \(directory)") }
        guard defaultExpiration.isFinite, defaultExpiration > 0 else {
            throw fail("defaultExpiration must be a positive number of seconds, not \(defaultExpiration)")
        }
        guard sizeLimit >= 0 else { throw fail("sizeLimit must be 0 (no limit) or positive, not \(sizeLimit)") }
        guard countLimit >= 0 else { throw fail("countLimit must be 0 (no limit) or positive, not \(countLimit)") }
        guard maximumRecordSize >= 0 else { throw fail("maximumRecordSize must not be negative, not \(maximumRecordSize)") }
        guard garbageCollectionInterval.isFinite, garbageCollectionInterval > 0 else {
            throw fail("garbageCollectionInterval must be a positive number of seconds, not \(garbageCollectionInterval)")
        }
        switch minimumFreeDiskSpace {
        case .zero: break
        case .fraction(let x):
            guard x.isFinite, x >= 0, x <= 1 else { throw fail("minimumFreeDiskSpace fraction must be between 0 and 1, not \(x)") }
        case .bytes(let n):
            guard n >= 0 else { throw fail("minimumFreeDiskSpace bytes must not be negative, not \(n)") }
        }
    }
}
