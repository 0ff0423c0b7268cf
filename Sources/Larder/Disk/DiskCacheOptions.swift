import Dispatch
import Foundation

/// How hard a ``DiskCache`` works to keep a stored record across a crash.
public enum Durability: Sendable, Hashable {
    /// Write a temporary file and rename it into place: a process crash leaves the old record or
    /// the new one, never a mix. A power loss may lose recent stores, removals and lock changes,
    /// and may leave a record torn, which a load detects (checksums) and removes as corrupt;
    /// loads never return bytes that were not stored under their key. The default.
    case atomicRename
    /// Also `fsync` the file before the rename and its folder after, so that once a store
    /// returns the record survives power loss; a removal or a lock count change likewise once
    /// it returns, and the folders the cache creates are synced into their parents
    /// (`docs/RELIABILITY.md` has the crash states this was checked on).
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
    /// throws ``CacheError/Code/unsafeDirectory``. The folders and files beneath it are held to
    /// the same rule: a shard folder that fails is never written through (a store into it throws
    /// ``CacheError/Code/unsafeDirectory``, naming it) and the records in it are misses; a writer
    /// with such a temporary folder (`.larder-tmp`) does not open; a record file that fails is a
    /// miss. A read-only cache also trusts the root's owner. The default.
    case ownerOnly
    /// Others may read, only the owner writes: folders 0755, files 0644 (Larder's behaviour
    /// before 0.1). The root is checked as for ``ownerOnly``.
    case readableByOthers
    /// A cache shared by the members of a group (for example, several service accounts): folders
    /// 0770 and files 0660, set with `fchmod` whatever the umask (give the root the group, and
    /// the setgid bit, yourself). The root, the lock file and records may belong to another user
    /// and the root may be writable by its group; a root writable by others is still refused, and
    /// so is a folder or file beneath it that others may write.
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
///
/// The defaults are Larder's, chosen for an app's cache of fetched data: keys hashed (any key
/// works), records kept 30 days after their last use, files readable by their owner only.
/// ``spt(directory:)`` gives SPTPersistentCache's defaults instead, for a folder shared with it or
/// migrated from it.
public struct DiskCacheOptions: Sendable {
    /// The cache's folder; created, with its parents, when missing.
    public var directory: URL
    /// A name for the cache (SPTPersistentCache's `cacheIdentifier`): it labels the cache's
    /// queues (as seen in a debugger or a crash report), is recorded in the folder's metadata for
    /// `larder stats`, and comes with each ``OperationTiming`` and the ``CacheEvent/opened(name:layout:layoutWasDetected:)``
    /// event (`"larder"`).
    public var name: String = "larder"
    /// How a new folder arranges its records (``FolderLayout/sharded``). An existing folder keeps
    /// its own: the one its metadata records or, without metadata, the one its files show.
    public var layout: FolderLayout = .sharded
    /// Expiry, in seconds, for records stored with ``Expiry/default``, measured from their last
    /// update or read (30 days, Larder's default; SPTPersistentCache's is 10 minutes). Raised to
    /// ``minimumExpiration`` when below it.
    public var defaultExpiration: TimeInterval = 30 * 24 * 60 * 60
    /// The floor of ``defaultExpiration`` (0: none; SPTPersistentCache's is 60 s,
    /// `SPTPersistentCacheMinimumExpirationLimit`).
    public var minimumExpiration: TimeInterval = 0
    /// Seconds an expired, unlocked record stays on disk for stale reads (0: none).
    ///
    /// A read of an expired record is a miss either way. With 0, the read also removes the
    /// record, as SPTPersistentCache does; with a retention, a record that expired less than this
    /// long ago stays where it is (the miss counts in ``CacheStatistics/misses``, not in
    /// ``CacheStatistics/expirations``, since nothing was dropped), and a collection removes an
    /// expired record only once it has been expired this long. A ``HybridCache`` serves such a
    /// record as a stale value (``StaleWindows``), and raises its disk's retention to its longest
    /// window. A removal, a store under the key and `removeAll()` still end the record at once,
    /// and the size, count and free-space limits evict it as any other record (least recently
    /// used first); `contains(_:)` and `keys(withPrefix:)` count it as expired, since a plain
    /// read misses it. Must be finite and not negative; ``spt(directory:)`` keeps 0.
    public var staleRetention: TimeInterval = 0
    /// How keys become file names (``KeyEncoding/sha256``).
    public var keyEncoding: KeyEncoding = .sha256
    /// Whether loads check each payload against its CRC-32 (`true`).
    public var verifiesPayloadChecksum: Bool = true
    /// Whether stores only rename or also `fsync` (``Durability/atomicRename``).
    public var durability: Durability = .atomicRename
    /// Whether the cache flushes (`DiskCache.flush()`: access times and the index snapshot)
    /// when the app moves to the background or is about to exit, so that an app suspended and
    /// then killed keeps its least-recently-used order (`true`). On iOS, iPadOS, tvOS, visionOS
    /// and Mac Catalyst: `UIApplication`'s did-enter-background and will-terminate notifications;
    /// on macOS: `NSApplication`'s will-terminate notification. Elsewhere (Linux, watchOS) it does
    /// nothing. A read-only cache never flushes. Set on the disk tier, which holds what a flush
    /// writes, so a ``DiskCache`` used alone gets it too; a ``HybridCache`` gets it through
    /// ``HybridCacheOptions/disk``.
    public var flushesOnBackground: Bool = true
    /// Open without the write lock: reads work while another process writes; changes throw
    /// ``CacheError/Code/readOnly`` (`false`).
    public var isReadOnly: Bool = false
    /// How long, in seconds, a writable open waits for another writer (in any process) to let go
    /// of the folder before it throws ``CacheError/Code/directoryInUse`` (`0`: it is refused at
    /// once).
    ///
    /// A writer that holds the folder alone (the default) has it to itself, so writers that take
    /// turns on one folder (scripts, jobs that open, change and close) set a wait, as SQLite's
    /// busy timeout does, so that each waits its turn instead of failing. A writer that keeps the
    /// folder open alone keeps the others waiting for as long: processes that change one folder
    /// at once set ``sharesFolderWithWriters`` instead (the `larder` tool's changing commands do,
    /// and wait 30 seconds, `--wait`, only for a writer that holds the folder alone). The
    /// holder's lock dies with it: a writer killed while it holds the folder lets the next one in
    /// at once. The open blocks its thread while it waits (open off the main thread when the wait
    /// may be long).
    /// Ignored when ``isReadOnly``; must be 0 or a positive, finite number.
    public var writerWaitTimeout: TimeInterval = 0
    /// Whether this writer shares the folder with other writers open at once, in this process or
    /// others (`false`: it holds the folder alone).
    ///
    /// Set it in every process that opens the folder (an app and its extensions in an app group's
    /// container, parallel scripts, prefork workers): each keeps its own index and keeps it in
    /// step with the others' through the folder's change log, so a store, removal, lock or
    /// collection in one process is a hit, a miss or a lock in another at its next operation on
    /// that key, the size and count limits hold for the folder as a whole, one collection runs
    /// at a time, and a process killed at any point blocks no one. A writer that does not set it
    /// holds the folder alone: it waits ``writerWaitTimeout`` for the sharing writers to close,
    /// and they wait as long for it. Between its calls a writer that shares the folder holds no
    /// file lock, so an app extension may be suspended with its cache open. The guarantees are in
    /// the Lifecycle article ("Several processes on one folder"). A ``HybridCache`` in front drops
    /// its memory copies of what the others change before it answers from memory. Ignored when
    /// ``isReadOnly``.
    ///
    /// Sharing has a cost even for a writer that is alone on the folder: every read, miss and
    /// listing (and a ``HybridCache``'s memory hit) first loads the change log's counter, mapped
    /// in shared memory (`.larder-changes-shm`; when that file cannot be trusted or mapped, a
    /// read of the log's header, one system call), and every change takes the change lock and
    /// appends to the log. That is why a writer holds its folder alone unless it says otherwise.
    public var sharesFolderWithWriters: Bool = false
    /// Whether a writable open accepts a folder that holds files but is not a cache (`false`).
    ///
    /// A folder with files in it is opened for writing only when it is a Larder cache (it has
    /// Larder's metadata, `.larder`) or an SPTPersistentCache folder (at least one file is a
    /// valid SPT record where the flat or sharded layout puts one); any other folder is refused
    /// with ``CacheError/Code/notACache``, so that a cache pointed at the wrong folder (a home
    /// folder, `Caches/` itself, a folder of documents) changes nothing in it. An empty or missing
    /// folder is always accepted. Set this to make a cache in a folder that already holds other
    /// files on purpose: those files are foreign, and the cache still never removes them (only
    /// files it could have written: records, and its own `.larder` files). A read-only cache
    /// opens any folder (it changes nothing) and sees only its records.
    public var adoptsForeignFolder: Bool = false
    /// Called with structured events (SPTPersistentCache's `debugOutput`), on the calling thread,
    /// outside the cache's locks (`nil`).
    public var eventHandler: (@Sendable (CacheEvent) -> Void)?
    /// Called after each operation on a record with its key, what it was, how long it waited for
    /// the cache's queue and how long it ran (SPTPersistentCache's `timingCallback`), on the
    /// thread that ran it, outside the cache's locks (`nil`: nothing is timed).
    public var timingHandler: (@Sendable (OperationTiming) -> Void)?
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
    /// How to choose what to evict when a store takes the cache over its ``sizeLimit``
    /// (``DiskEvictionPolicy/recommended``; ``DiskEvictionPolicy/lru`` in ``spt(directory:)``);
    /// see <doc:EvictionPolicies>.
    public var policy: DiskEvictionPolicy = .recommended
    /// Space to leave free on the volume (``MinimumFreeSpace/zero``; SPTPersistentCache keeps
    /// 10 % free once it has a size limit).
    public var minimumFreeDiskSpace: MinimumFreeSpace = .zero
    /// Seconds between scheduled collections (363, as SPTPersistentCache's
    /// `SPTPersistentCacheDefaultGCIntervalSec`). Raised to ``minimumGarbageCollectionInterval``
    /// when below it.
    public var garbageCollectionInterval: TimeInterval = 363
    /// The floor of ``garbageCollectionInterval`` (0: none; SPTPersistentCache's is 60 s,
    /// `SPTPersistentCacheMinimumGCIntervalLimit`).
    public var minimumGarbageCollectionInterval: TimeInterval = 0

    /// The quality of service of each kind of work the cache does on its own threads: the
    /// `async` and callback forms of reads, writes and removals, and scheduled collections
    /// (SPTPersistentCache's per-kind priorities).
    public var workQualityOfService = WorkQualityOfService()
    /// The most operations the cache runs at once on its own threads (the `async` and callback
    /// forms, collections); more wait in line, in the order they came (0: no limit of the
    /// cache's own, as SPTPersistentCache's `maxConcurrentOperations` default). Synchronous
    /// calls run on the caller's thread and are not counted.
    public var maximumConcurrentOperations: Int = 0
    /// The most record files the cache keeps open between reads, so that a hit on a recently read
    /// record costs one `fstat` and one `pread` instead of an open, a read and a close (0: every
    /// read opens and closes its file). A record's file is kept from its second read lately, and
    /// past the bound only in place of a kept file read less often (TinyLFU's admission: the
    /// most read records hold the descriptors, and records read once, or loops over more records
    /// than the bound, cost a counter update, not an open file each).
    ///
    /// The default, ``defaultMaximumOpenFiles``, is an eighth of the process's descriptor limit
    /// (`RLIMIT_NOFILE`'s soft limit), at most 4,096, so that a cache never takes much of what
    /// the application may open. A kept file costs its descriptor and a little memory, the
    /// kernel's and the cache's; what each bound buys in hits is on the benchmarks page
    /// (`larder-bench disk`). Should opens fail with `EMFILE` or `ENFILE` all the same, the cache closes the descriptors it keeps, halves its bound (growing it back
    /// slowly) and opens again, so that a full descriptor table never fails a call the cache
    /// would otherwise answer.
    ///
    /// The cache owns its folder: every store, removal, collection, import or wipe of a record
    /// retires its descriptor before it returns, so that no read sees a file it replaced. A hit
    /// through a kept file makes one `pread`, which also proves the file's length unchanged; a
    /// record removed or replaced behind the cache's back is noticed (its kept file has no name
    /// any more) by the first read at least ``keptFileRecheckInterval`` after the file was last
    /// checked, and read afresh, unless the record itself is kept in memory
    /// (``maximumPayloadMemory``). A read-only cache keeps no file open, since another process
    /// changes its folder.
    public var maximumOpenFiles: Int = DiskCacheOptions.defaultMaximumOpenFiles

    /// How long, in seconds, a kept file (``maximumOpenFiles``) is read through its descriptor
    /// before a read checks again (`fstat`) that the file still has a name: 1 by default; 0
    /// checks on every read.
    ///
    /// The check guards against changes behind a writable cache's back only: its own stores,
    /// removals and collections retire the descriptor before they return, and its directory
    /// lock keeps other Larder instances out. A file removed or renamed over by something else
    /// (the system purging a caches folder, a tool ignoring the lock) is thus read as it was
    /// for at most this long after its last check, and its disk space is held that long. On a
    /// 4 KiB record the check costs about what the read costs (`larder-bench disk`,
    /// `load-4k-zipf`), so a hit that skips it makes one system call instead of two. Must be 0
    /// or a positive number of seconds.
    public var keptFileRecheckInterval: Double = 1

    /// The most bytes of recently read small records the cache keeps in memory beside their kept
    /// files (``maximumOpenFiles``), so that a hit on one of its most read records makes no
    /// system call. 0 keeps none; so does a cache that keeps no files (`maximumOpenFiles` 0, or
    /// read-only). ``HybridCache`` sets it to 0 for its disk tier, whose memory tier keeps
    /// payloads already. The default (``defaultMaximumPayloadMemory``) says why it is what it is.
    ///
    /// A record is kept from a read through its kept file (its third read lately at the
    /// earliest), when it is at most an eighth of this bound and at most 64 KiB long (its file:
    /// header, key and payload, which is what it costs), and, once the bound is reached, only
    /// in place of kept records read less often (the same admission as kept files'), so that
    /// records read once or twice never take its room. A hit returns the kept `Data` itself,
    /// without copying it.
    ///
    /// The cache owns its folder, and a writable cache is its only writer (its directory lock:
    /// a second writable opener, in any process, waits or gets ``CacheError/Code/directoryInUse``,
    /// see ``writerWaitTimeout``). Every
    /// store, removal, collection, import or wipe of a record drops its kept record with its
    /// kept file before it returns, so no read sees a record the cache replaced or removed, and
    /// a hit on a kept record checks nothing on disk. A record changed, replaced or removed
    /// behind a writable cache's back (which breaks that contract) may therefore be served as
    /// it was read until the cache itself changes or drops it (a store, removal, collection,
    /// eviction of the kept record or its file, or `close()`); a purge of the folder by the
    /// system then only costs the memory those records hold. Hits through a kept file without
    /// a kept record still `fstat` it (see ``maximumOpenFiles``).
    public var maximumPayloadMemory: Int = DiskCacheOptions.defaultMaximumPayloadMemory

    /// The default of ``maximumPayloadMemory``: 4 MiB (4,194,304 bytes), about twice SQLite's
    /// default page cache (2,000 KiB per connection), because the admission (a record is kept
    /// only in place of ones read less often, from its third read lately) keeps one-off reads
    /// out, so the bound holds hot records only. ``HybridCache`` sets 0 for its disk tier. The
    /// benchmarks page (`larder-bench disk`, `load-4k-zipf`) shows what the bound buys.
    public static let defaultMaximumPayloadMemory = 4 << 20

    /// The most ``defaultMaximumOpenFiles`` gives: 4,096.
    public static let defaultMaximumOpenFilesCap = 4_096

    /// The default of ``maximumOpenFiles``: `RLIMIT_NOFILE`'s soft limit divided by 8, at most
    /// ``defaultMaximumOpenFilesCap`` (and 256 when the limit is unlimited or cannot be read).
    public static var defaultMaximumOpenFiles: Int {
        guard let soft = FileIO.descriptorLimit() else { return 256 }
        return min(defaultMaximumOpenFilesCap, soft / 8)
    }

    /// Creates options for a cache in `directory`, every other setting at its default.
    public init(directory: URL) {
        self.directory = directory
    }

    /// Options with SPTPersistentCache's defaults (`SPTPersistentCacheOptions`, version 1.2),
    /// for a folder shared with it or migrated from it: verbatim keys (file name = key), shard
    /// folders, 10 minutes' default expiration, a collection every 363 s, 60 s floors on both,
    /// 10 % of the volume kept free once a ``sizeLimit`` is set, least-recently-used eviction
    /// (``DiskEvictionPolicy/lru``), the name `persistent.cache`,
    /// and SPT's time rules: the current time rounded to the nearest second
    /// (``roundsTimeToNearestSecond``), and no lock taken on a record whose time has run out
    /// (``refusesLockingElapsedRecords``). Files stay owner-only (``CacheSharing/ownerOnly``)
    /// unless you say otherwise.
    public static func spt(directory: URL) -> DiskCacheOptions {
        var options = DiskCacheOptions(directory: directory)
        options.name = "persistent.cache"
        options.keyEncoding = .verbatim
        options.layout = .sharded
        options.defaultExpiration = 600
        options.minimumExpiration = 60
        options.garbageCollectionInterval = 363
        options.minimumGarbageCollectionInterval = 60
        options.minimumFreeDiskSpace = .fraction(0.1)
        options.minimumFreeSpaceNeedsSizeLimit = true
        options.roundsTimeToNearestSecond = true
        options.refusesLockingElapsedRecords = true
        options.policy = .lru
        return options
    }

    /// Whether the current time is rounded to the nearest second (halves to even, as C's
    /// `llrint` rounds) for the update times a store or use writes and for expiry checks,
    /// rather than down, as SPTPersistentCache rounds it (`false`; `true` in ``spt(directory:)``).
    ///
    /// Stored at 1000.4 and checked at 1600.6 with a 600 s expiration, a record has expired when
    /// rounding to the nearest second (1601 - 1000 > 600) and not when rounding down
    /// (1600 - 1000). Both rules measure whole seconds; they differ by at most one.
    public var roundsTimeToNearestSecond: Bool = false

    /// Whether locking a record whose time has run out is refused even while it is locked
    /// (`false`; `true` in ``spt(directory:)``).
    ///
    /// A locked record never expires, so by default a lock on a locked record is taken whatever
    /// its age. SPTPersistentCache checks the record's age alone before it locks, and refuses
    /// (`NotFound`) once the time has run out, locked or not; this follows it. Loads and
    /// collections are unchanged: a locked record is still served and kept.
    public var refusesLockingElapsedRecords: Bool = false

    /// Whether ``minimumFreeDiskSpace`` applies only once a ``sizeLimit`` is set, as in
    /// SPTPersistentCache (set by ``spt(directory:)``; `false`).
    public var minimumFreeSpaceNeedsSizeLimit: Bool = false

    /// ``defaultExpiration`` raised to ``minimumExpiration``: the expiry the cache applies.
    public var effectiveDefaultExpiration: TimeInterval { max(defaultExpiration, minimumExpiration) }

    /// ``garbageCollectionInterval`` raised to ``minimumGarbageCollectionInterval``: the interval
    /// the cache applies.
    public var effectiveGarbageCollectionInterval: TimeInterval {
        max(garbageCollectionInterval, minimumGarbageCollectionInterval)
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
        guard minimumExpiration.isFinite, minimumExpiration >= 0 else {
            throw fail("minimumExpiration must be 0 or a positive number of seconds, not \(minimumExpiration)")
        }
        guard staleRetention.isFinite, staleRetention >= 0 else {
            throw fail("staleRetention must be 0 or a positive number of seconds, not \(staleRetention)")
        }
        guard minimumGarbageCollectionInterval.isFinite, minimumGarbageCollectionInterval >= 0 else {
            throw fail(
                "minimumGarbageCollectionInterval must be 0 or a positive number of seconds, not \(minimumGarbageCollectionInterval)")
        }
        guard writerWaitTimeout.isFinite, writerWaitTimeout >= 0 else {
            throw fail("writerWaitTimeout must be 0 or a positive number of seconds, not \(writerWaitTimeout)")
        }
        guard maximumConcurrentOperations >= 0 else {
            throw fail("maximumConcurrentOperations must be 0 (no limit) or positive, not \(maximumConcurrentOperations)")
        }
        guard maximumOpenFiles >= 0 else { throw fail("maximumOpenFiles must be 0 (none) or positive, not \(maximumOpenFiles)") }
        guard keptFileRecheckInterval.isFinite, keptFileRecheckInterval >= 0 else {
            throw fail("keptFileRecheckInterval must be 0 or a positive number of seconds, not \(keptFileRecheckInterval)")
        }
        guard maximumPayloadMemory >= 0 else {
            throw fail("maximumPayloadMemory must be 0 (none) or a positive number of bytes, not \(maximumPayloadMemory)")
        }
        guard !name.isEmpty, !name.utf8.contains(0) else { throw fail("name must be a non-empty string without NUL bytes") }
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
