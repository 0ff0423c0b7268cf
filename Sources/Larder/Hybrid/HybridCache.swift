import Foundation
import Synchronization

/// What an app calls: a ``MemoryCache`` in front of a ``DiskCache``, with typed values, entries
/// shipped with the app, `async` calls and SPT-style callbacks.
///
/// ```swift
/// let cache = try HybridCache(options: HybridCacheOptions(directory: cachesURL))
/// try cache.store(data, forKey: "avatar/42", expiry: .seconds(3600))
/// let hit = try cache.value(forKey: "avatar/42")           // memory, then disk
/// let profile = try cache.value(Profile.self, forKey: "me") // JSON by default
/// ```
///
/// **Consistency.** Every call that reads the disk or changes either tier holds a lock for its
/// key (one of 64 stripes, hashed by key) across both tiers, so "read disk, promote to memory"
/// never interleaves with a store or removal of the same key: once `store(_:forKey:in:expiry:locked:)`
/// or `remove(forKey:)` returns, no tier serves the older value. Memory hits take no extra
/// lock. Different keys run in parallel.
///
/// **Expiry.** Expiry and locks are the disk's (SPT's rules). An entry in memory gets a lifetime
/// equal to the time left until its disk record expires (none while locked; at most
/// ``MemoryCache/defaultExpiration``), so memory never serves what the disk considers expired.
/// Reads served from memory do **not** slide the disk expiry of ``Expiry/default`` entries: such an entry expires
/// from both tiers at the disk expiry it had when last stored or read from disk, however often
/// memory serves it. `touch(forKey:)` slides it (and drops the memory copy, which the next
/// read brings back with the new expiry).
///
/// **Disk changes made behind its back.** With ``init(options:)``, records the disk evicts (limits,
/// collection) or finds corrupt are dropped from memory too. With
/// ``init(memory:disk:coder:staleWindows:loadEventHandler:)``, calls made on ``disk`` directly are
/// not seen by the memory tier. When the disk's folder is deleted
/// (``CacheEvent/folderRecreated(path:)``), the memory tier keeps what it holds: each entry is
/// still the last value stored or read under its key, with an expiry no later than the disk's
/// was, so it is served until it expires or is evicted; the disk no longer has it (unless the
/// folder is shared with other writers, below).
///
/// **Other processes on the folder.** When the disk tier shares its folder with other writers
/// (``DiskCacheOptions/sharesFolderWithWriters``), what another process stores, removes, locks or
/// unlocks is seen at this cache's next read of the key, memory hits included: each look at
/// memory first loads the folder's change counter (an atomic load in shared memory), and
/// replaying the others' changes drops the memory copies (this cache's and its typed views')
/// of the keys they touched, or every copy when the disk tier had to build its index from the
/// folder again (another process removed everything, the folder was made again). A copy read
/// from disk or stored here is kept only if no replay touched its key since the read or store
/// began.
///
/// **Memory.** With ``init(options:)`` the memory tier is bounded (``HybridCacheOptions/memory``'s
/// `totalCostLimit`, by default a tenth of the machine's memory, at most 256 MiB) and gives memory
/// back under memory pressure (its `respondsToMemoryPressure`). It holds payloads, so typed
/// reads decode on every hit; ``typed(_:coder:countLimit:totalCostLimit:)`` gives a view whose
/// memory holds decoded values (``TypedCache``).
///
/// **Event handlers.** The disk's ``DiskCacheOptions/eventHandler`` may run while the hybrid holds
/// the lock of the key being stored or read; a handler must not call back into the same hybrid
/// cache synchronously (hand the work to another queue instead), or two keys' locks can deadlock.
public final class HybridCache: Sendable {
    /// The memory tier. Values are payloads; their cost is their byte count.
    public let memory: MemoryCache<String, Data>
    /// The disk tier.
    public let disk: DiskCache
    /// The coder used by typed calls that are not given one.
    public let coder: CacheCoder
    /// What happened to the preloaded entries at open; `nil` without ``HybridCacheOptions/preloaded``.
    public let preloadReport: PreloadReport?
    /// How long past their expiry load-through reads may serve values, unless a call says
    /// otherwise (``HybridCacheOptions/staleWindows``).
    public let staleWindows: StaleWindows

    /// The read-through preloaded directory, if any.
    let preloaded: PreloadedSource?
    /// One lock per key (striped), held across both tiers by every call that reads the disk or
    /// changes a tier. 64 stripes: `removeAll()` holds every one at once, and the thread
    /// sanitizer's deadlock detector fails past 128 locks held by one thread (CI runs it).
    let keyLocks: StripedLock
    @usableFromInline let counters: Counters
    /// The load-through reads in flight, one per key.
    let loads: LoadFlights
    /// Where load-through events go (``HybridCacheOptions/loadEventHandler``).
    let loadEventHandler: (@Sendable (LoadEvent) -> Void)?
    /// The shared remote tier (``HybridCacheOptions/remote``), if any.
    let remote: RemoteTier?
    /// The disk tier's ``DiskCache/backgroundHandle``, made once: the disk of ``backgroundHandle``
    /// and of ``remoteHitCopier``, so that neither the subscription nor a queued disk copy keeps
    /// the disk open past its owner's release.
    let backgroundDisk: DiskCache
    /// What writes the disk copies of remote hits (`nil` without a remote tier), made once: a
    /// queued copy's job holds it, and the hit, in one allocation, with one reference to count.
    let remoteHitCopier: RemoteHitCopier?
    /// The memory tiers of the typed views (`typed(_:coder:countLimit:totalCostLimit:)`), which
    /// lose a key's copy whenever this cache changes it.
    let typedMemories: TypedMemories
    /// Whether the disk tier shares its folder with other writers, whose changes each memory
    /// look replays first (`HybridCache+Folder.swift`).
    @usableFromInline let followsFolder: Bool
    /// Each key's count of changes other writers of the folder made, moved on before its memory
    /// copies are dropped: a copy made after a disk read or change is made only if the count did
    /// not move since (`nil` when the folder is this process's alone).
    let folderGenerations: KeyGenerations?
    /// Whether this is the handle the cache's owner holds, whose last release stops the remote
    /// subscription and lets go of the disk tier, rather than the one the subscription's
    /// handler holds (``backgroundHandle``).
    private let isOwner: Bool

    /// The hybrid's own counters: which tier served each read, and the stores through it.
    @usableFromInline
    final class Counters: Sendable {
        let diskHits = Atomic<Int>(0)
        let preloadedHits = Atomic<Int>(0)
        let misses = Atomic<Int>(0)
        let insertions = Atomic<Int>(0)
        let loads = Atomic<Int>(0)
        let coalescedWaits = Atomic<Int>(0)
        let staleServes = Atomic<Int>(0)
        let loaderFailures = Atomic<Int>(0)
    }

    /// Puts a memory tier in front of an already open disk tier.
    /// - Parameters:
    ///   - memory: The memory tier. Give it the disk's clock so that both tiers agree on expiry.
    ///   - disk: The disk tier.
    ///   - coder: The coder for typed values (``CacheCoder/json``).
    ///   - staleWindows: The load-through reads' default stale windows (``StaleWindows/none``);
    ///     each finite and not negative. The disk's ``DiskCache/staleRetention`` is raised to the
    ///     longer window, so that reads and collections leave what a stale read may return.
    ///   - loadEventHandler: Called with what load-through reads do (`nil`).
    /// - Throws: ``CacheError/Code/invalidOptions`` naming a stale window that is not finite and
    ///   at least 0.
    public convenience init(
        memory: MemoryCache<String, Data>, disk: DiskCache, coder: CacheCoder = .json, staleWindows: StaleWindows = .none,
        loadEventHandler: (@Sendable (LoadEvent) -> Void)? = nil
    ) throws(CacheError) {
        if let problem = staleWindows.problem { throw CacheError(.invalidOptions, problem, path: disk.options.directory.path) }
        // The disk keeps what a stale read within these windows returns.
        disk.retainStale(for: staleWindows.longest)
        self.init(
            memory: memory, disk: disk, coder: coder, preloaded: nil, report: nil, staleWindows: staleWindows,
            loadEventHandler: loadEventHandler, remote: nil, typedMemories: TypedMemories())
    }

    /// Opens the disk tier, creates the memory tier, and imports or attaches the preloaded entries.
    ///
    /// A preloaded file that cannot be used is listed in ``preloadReport`` and skipped; it never
    /// makes the open fail.
    /// - Parameter options: The tiers' settings.
    /// - Throws: What ``DiskCache/init(options:)`` throws, and ``CacheError/Code/invalidOptions``
    ///   naming the setting and its value for a negative memory limit (`memory.countLimit`), a
    ///   memory expiration that is not finite and above 0, or a stale window that is not finite
    ///   and at least 0.
    public convenience init(options: HybridCacheOptions) throws(CacheError) {
        if let problem = options.staleWindows.problem ?? options.remote?.problem {
            throw CacheError(.invalidOptions, problem, path: options.disk.directory.path)
        }
        var memoryOptions = options.memory
        // Registered below, with the monitor the options name.
        memoryOptions.respondsToMemoryPressure = false
        let memory: MemoryCache<String, Data>
        do throws(CacheError) {
            memory = try MemoryCache(options: memoryOptions, clock: options.disk.clock)
        } catch {
            throw CacheError(.invalidOptions, "memory.\(error.message)", path: options.disk.directory.path)
        }
        memory.respondToMemoryPressure(options.memory.respondsToMemoryPressure, center: options.pressureCenter)
        var diskOptions = options.disk
        // The memory tier in front keeps payloads already.
        diskOptions.maximumPayloadMemory = 0
        // The disk keeps what a stale read within the cache's windows returns.
        diskOptions.staleRetention = max(diskOptions.staleRetention, options.staleWindows.longest)
        let handler = diskOptions.eventHandler
        let typedMemories = TypedMemories()
        // Records the disk drops on its own must not live on in memory.
        diskOptions.eventHandler = { event in
            switch event {
            case .recordEvicted(let key?, _, _), .corruptRecordRemoved(let key?, _, _):
                memory.remove(forKey: key)
                typedMemories.remove(forKey: key)
            default:
                break
            }
            handler?(event)
        }
        let disk = try DiskCache(options: diskOptions)
        var report: PreloadReport?
        var source: PreloadedSource?
        if let entries = options.preloaded {
            var preloadReport = PreloadReport()
            let preloaded = PreloadedSource(entries: entries, report: &preloadReport)
            switch entries.mode {
            case .copyIfMissing: preloaded.importMissing(into: disk, report: &preloadReport)
            case .readThrough: source = preloaded
            }
            report = preloadReport
        }
        self.init(
            memory: memory, disk: disk, coder: options.coder, preloaded: source, report: report, staleWindows: options.staleWindows,
            loadEventHandler: options.loadEventHandler,
            remote: options.remote.map {
                // A read-only folder's outbox is read, then kept in memory only.
                RemoteTier(options: $0, outboxPath: disk.layout.outboxPath, io: disk.io, writesOutbox: !disk.options.isReadOnly)
            },
            typedMemories: typedMemories)
        startRemoteSubscription()
    }

    private init(
        memory: MemoryCache<String, Data>, disk: DiskCache, coder: CacheCoder, preloaded: PreloadedSource?, report: PreloadReport?,
        staleWindows: StaleWindows, loadEventHandler: (@Sendable (LoadEvent) -> Void)?, remote: RemoteTier?,
        typedMemories: TypedMemories
    ) {
        self.typedMemories = typedMemories
        self.remote = remote
        self.memory = memory
        self.disk = disk
        let backgroundDisk = disk.backgroundHandle
        self.backgroundDisk = backgroundDisk
        self.coder = coder
        self.preloaded = preloaded
        self.preloadReport = report
        self.staleWindows = staleWindows
        self.loadEventHandler = loadEventHandler
        let keyLocks = StripedLock()
        self.keyLocks = keyLocks
        // The disk tier's background handle, never the hybrid: a queued copy does not keep the
        // cache, or its folder, open past its owner's release.
        self.remoteHitCopier = remote.map {
            RemoteHitCopier(remote: $0, disk: backgroundDisk, keyLocks: keyLocks, clock: disk.options.clock)
        }
        self.counters = Counters()
        self.loads = LoadFlights()
        self.isOwner = true
        folderGenerations = Self.observeFolder(of: disk, memory: memory, typedMemories: typedMemories)
        followsFolder = folderGenerations != nil
    }

    /// A handle on `owner`'s tiers that does not own them: the same memory tier, key locks and
    /// remote tier, and the disk tier's ``DiskCache/backgroundHandle``, which does not keep the
    /// disk open.
    private init(sharingWith owner: HybridCache) {
        typedMemories = owner.typedMemories
        remote = owner.remote
        memory = owner.memory
        disk = owner.backgroundDisk
        backgroundDisk = owner.backgroundDisk
        coder = owner.coder
        preloaded = owner.preloaded
        preloadReport = owner.preloadReport
        staleWindows = owner.staleWindows
        loadEventHandler = owner.loadEventHandler
        keyLocks = owner.keyLocks
        remoteHitCopier = owner.remoteHitCopier
        counters = owner.counters
        loads = owner.loads
        folderGenerations = owner.folderGenerations
        followsFolder = owner.followsFolder
        isOwner = false
    }

    /// What the remote subscription's handler holds: the owner's last release closes the cache
    /// at once (the subscription stops, and the disk tier closes unless someone else holds it),
    /// whatever the handler is doing.
    var backgroundHandle: HybridCache {
        isOwner ? HybridCache(sharingWith: self) : self
    }

    deinit {
        // Queued copies and remote writes are not waited for: the copies find the disk tier
        // closed, the writes hold only the remote tier.
        if isOwner { remote?.cancelSubscription() }
    }

    // MARK: - Reading

    /// Returns the payload stored under `key`, from the first of `tiers` that holds it.
    ///
    /// A disk hit (or, with read-through preloaded entries, a preloaded hit, which is first
    /// stored on disk) is promoted to memory when `tiers` includes ``CacheTiers/memory``, with
    /// a cost of its byte count and a lifetime ending at its disk expiry.
    /// - Parameters:
    ///   - key: The key.
    ///   - tiers: Where to look (``CacheTiers/all``).
    /// - Returns: The payload, or `nil` when no tier asked holds a live value.
    /// - Throws: ``CacheError`` from the disk tier: ``CacheError/Code/invalidKey``,
    ///   ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``.
    @inlinable
    public func value(forKey key: String, from tiers: CacheTiers = .all) throws(CacheError) -> Data? {
        // Inlinable, so that a memory hit costs the caller no call of its own (a hit through the
        // hybrid within 1.2 x a `MemoryCache` hit).
        if tiers.contains(.memory) {
            if followsFolder { followFolder() }
            if let hit = memory.value(forKey: key, countingMiss: true, countingOwnerHit: true) { return hit }
        }
        return try valueAfterMemoryMiss(forKey: key, from: tiers)
    }

    /// The disk (read-through preloaded entries included) and remote part of ``value(forKey:from:)``,
    /// once memory has missed.
    @usableFromInline
    func valueAfterMemoryMiss(forKey key: String, from tiers: CacheTiers) throws(CacheError) -> Data? {
        let remote = tiers.contains(.remote) ? self.remote : nil
        guard tiers.contains(.disk) else {
            guard let remote else {
                counters.misses.add(1, ordering: .relaxed)
                return nil
            }
            return valueFromRemote(remote, forKey: key, into: tiers, generation: remote.generations.snapshot(key))
        }
        // The hybrid's key lock is held across the disk read and the promotion: without it, a
        // store or removal of the key could land between the two, and memory would then hold a
        // value the disk no longer has. The disk takes its own locks inside (see
        // `DiskCache.readRecord(forKey:)`): they guard against changes that do not go through
        // this cache (collections, trims, other handles of the disk tier).
        // Hashed once: the key lock here, the generation, and the promotion's key lock.
        let keyHash = StripedLock.hash(ofKey: key)
        var generation: KeyGenerations.Snapshot?
        let local = try keyLocks.withLock(forKeyHash: keyHash) { () throws(CacheError) -> Data? in
            // Another caller may have promoted it while this one waited (the first look already
            // counted the miss).
            if tiers.contains(.memory), let hit = memory.value(forKey: key, countingMiss: false, countingOwnerHit: true) {
                return hit
            }
            generation = remote?.generations.snapshot(keyHash: keyHash)
            return try _valueFromDisk(forKey: key, promoting: tiers.contains(.memory), countingMiss: remote == nil)
        }
        guard local == nil, let remote else { return local }
        return valueFromRemote(remote, forKey: key, into: tiers, generation: generation ?? remote.generations.snapshot(key))
    }

    /// The disk, then the read-through preloaded entries, for a key memory does not hold: a hit
    /// is promoted to memory when `promoting`, and counted; so is a miss, when `countingMiss`
    /// (the remote tier counts its own). Expects the key's lock held.
    func _valueFromDisk(forKey key: String, promoting: Bool, countingMiss: Bool = true) throws(CacheError) -> Data? {
        let mark = promoting ? folderMark(forKey: key) : nil
        guard let entry = try _entryFromDisk(forKey: key, countingMiss: countingMiss) else { return nil }
        if promoting { promote(entry.data, forKey: key, expiration: entry.expiration, since: mark) }
        return entry.data
    }

    /// ``_valueFromDisk(forKey:promoting:countingMiss:)`` without the promotion: the payload and
    /// when it expires on disk (`nil`: never, or locked). Expects the key's lock held.
    func _entryFromDisk(forKey key: String, countingMiss: Bool = true) throws(CacheError) -> (data: Data, expiration: Double?)? {
        if let record = try disk.record(forKey: key) {
            counters.diskHits.add(1, ordering: .relaxed)
            return (record.data, record.expirationTime)
        }
        guard let entry = preloaded?.entry(forKey: key) else {
            if countingMiss { counters.misses.add(1, ordering: .relaxed) }
            return nil
        }
        counters.preloadedHits.add(1, ordering: .relaxed)
        // Keep the preloaded hit on disk when it can; serving it does not depend on that.
        let expiration = storeExpiration(entry.expiry, locked: entry.isLocked, now: disk.options.clock.now)
        _ = try? disk.store(entry.data, forKey: key, expiry: entry.expiry, locked: entry.isLocked)
        return (entry.data, expiration)
    }

    /// Whether a live value is stored under `key` in memory or on disk. Not a use: nothing is
    /// promoted, no statistic changes. Read-through preloaded entries not yet read are not counted.
    ///
    /// It answers what `value(forKey:from:)` would: `false` for an expired value, also one the
    /// disk keeps for stale reads (``staleWindows``), which a load-through read may still serve
    /// as a stale value while it refreshes it.
    /// - Parameter key: The key.
    public func contains(_ key: String) -> Bool {
        if followsFolder { followFolder() }
        return memory.contains(key) || disk.contains(key)
    }

    /// The keys of every entry whose key starts with `prefix` (every key for "", the default):
    /// the disk's, least recently used first, then those held only in memory.
    /// - Throws: ``CacheError/Code/closed``.
    /// - Complexity: O(*n*) in the entries of both tiers.
    public func keys(withPrefix prefix: String = "") throws(CacheError) -> [String] {
        let onDisk = try disk.keys(withPrefix: prefix)
        let known = Set(onDisk)
        return onDisk + memory.keys().filter { $0.hasPrefix(prefix) && !known.contains($0) }
    }

    /// Runs one collection of both tiers: the memory tier drops its expired entries
    /// (``MemoryCache/collectGarbage()``), then the disk runs a collection
    /// (`DiskCache.collectGarbage()`), whose evictions leave memory too.
    /// - Returns: What the disk's collection removed, and why.
    /// - Throws: What `DiskCache.collectGarbage()` throws.
    /// - Complexity: O(*n*) in the memory tier's entries, plus the disk collection's cost.
    @discardableResult
    public func collectGarbage() throws(CacheError) -> CollectionReport {
        memory.collectGarbage()
        return try disk.collectGarbage()
    }

    /// The counters of both tiers, which tier served each read, and the two combined.
    public var statistics: HybridCacheStatistics {
        HybridCacheStatistics(
            memory: memory.statistics, disk: disk.statistics,
            memoryHits: memory.ownerHits, diskHits: counters.diskHits.load(ordering: .relaxed),
            preloadedHits: counters.preloadedHits.load(ordering: .relaxed), misses: counters.misses.load(ordering: .relaxed),
            insertions: counters.insertions.load(ordering: .relaxed), loads: counters.loads.load(ordering: .relaxed),
            coalescedWaits: counters.coalescedWaits.load(ordering: .relaxed), staleServes: counters.staleServes.load(ordering: .relaxed),
            loaderFailures: counters.loaderFailures.load(ordering: .relaxed), remote: remote.map(\.statistics))
    }

    // MARK: - Writing

    /// Stores `data` under `key` in `tiers`, replacing what any tier held.
    ///
    /// A tier not in `tiers` loses its copy of `key`, so that it never serves the value this store
    /// replaced: storing in ``CacheTiers/disk`` alone drops the memory copy (the next read promotes
    /// the new one); storing in ``CacheTiers/memory`` alone removes the disk record.
    /// - Parameters:
    ///   - data: The payload.
    ///   - key: The key.
    ///   - tiers: Where to store it (``CacheTiers/all``).
    ///   - expiry: When it expires: ``Expiry/default`` (the default) means the disk's default
    ///     expiration, sliding with disk reads; for a memory-only store, the memory tier's
    ///     ``MemoryCache/defaultExpiration``.
    ///   - locked: Whether it is locked against expiry (in memory: no lifetime but the memory
    ///     tier's own ``MemoryCache/defaultExpiration``).
    /// - Throws: ``CacheError/Code/invalidArgument`` for an expiry of zero, negative or
    ///   non-finite seconds, and what the disk tier throws; after a failed store both tiers keep
    ///   their previous value.
    public func store(_ data: Data, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false)
        throws(CacheError)
    {
        try store(data, forKey: key, in: tiers, expiry: expiry, locked: locked, memoryCopy: nil)
    }

    /// ``store(_:forKey:in:expiry:locked:)``, with the memory copy made by `memoryCopy` (a typed
    /// view's decoded value, given the expiration) instead of this cache's memory tier, when not `nil`.
    func store(
        _ data: Data, forKey key: String, in tiers: CacheTiers, expiry: Expiry, locked: Bool,
        memoryCopy: ((Double?, KeyGenerations.Snapshot?) -> Void)?
    ) throws(CacheError) {
        let seconds = try expiry.validatedSeconds(key: key)
        let now = disk.options.clock.now
        remote?.generations.begin(key)
        let stored: Double?
        do throws(CacheError) {
            stored = try storeLocally(
                data, forKey: key, in: tiers, expiry: expiry, seconds: seconds, locked: locked, memoryCopy: memoryCopy)
        } catch {
            remote?.generations.end(key)
            throw error
        }
        // Outside the key lock: the remote write may wait up to its command timeout.
        guard let remote else { return }
        if tiers.contains(.remote) {
            let expiration = locked ? remoteExpiration(expiry, seconds: seconds, in: tiers, now: now) : stored
            remote.store(data, forKey: key, expiration: expiration, locked: locked, now: now)
        } else {
            remote.remove(forKey: key)
        }
    }

    /// The memory and disk part of ``store(_:forKey:in:expiry:locked:)``; returns the expiration
    /// (seconds since 1970, `nil` for none).
    ///
    /// The disk record's file is written before the key lock is taken
    /// (``DiskCache/prepareStore(_:forKey:expiry:locked:)``); the lock covers its rename into
    /// place (``DiskCache/commitStore(_:)``) and the memory tiers' change, so that the two tiers
    /// change together and a read of another key of the same lock stripe never waits for a file
    /// being written. The limits are enforced after it (``DiskCache/finishStore(_:)``): an
    /// eviction takes the key locks of what it evicts.
    private func storeLocally(
        _ data: Data, forKey key: String, in tiers: CacheTiers, expiry: Expiry, seconds: Double?, locked: Bool,
        memoryCopy: ((Double?, KeyGenerations.Snapshot?) -> Void)?
    ) throws(CacheError) -> Double? {
        guard tiers.contains(.disk) else {
            return try keyLocks.withLock(forKey: key) { () throws(CacheError) -> Double? in
                let mark = folderMark(forKey: key)
                if !tiers.isEmpty { try disk.remove(forKey: key) }
                let expiration = locked ? nil : seconds.map { disk.options.clock.now + $0 }
                _storeInMemory(data, forKey: key, in: tiers, expiration: expiration, since: mark, memoryCopy: memoryCopy)
                return expiration
            }
        }
        // Read before the disk reads it, so memory's expiry is never later than the disk's.
        let now = disk.options.clock.now
        let expiration = storeExpiration(expiry, locked: locked, now: now)
        try disk.timed(.store, key) { () throws(CacheError) in
            let pending = try disk.prepareStore(data, forKey: key, expiry: expiry, locked: locked)
            let stored = try keyLocks.withLock(forKey: key) { () throws(CacheError) -> StoredRecord in
                let mark = folderMark(forKey: key)
                let stored = try disk.commitStore(pending)
                _storeInMemory(data, forKey: key, in: tiers, expiration: expiration, since: mark, memoryCopy: memoryCopy)
                return stored
            }
            try disk.finishStore(stored)
        }
        return expiration
    }

    /// The memory part of ``storeLocally(_:forKey:in:expiry:seconds:locked:memoryCopy:)``, once
    /// the disk holds the new value (or, without the disk among `tiers`, none); no copy is made
    /// when another writer of the folder changed the key since `mark`. Expects the key's lock held.
    private func _storeInMemory(
        _ data: Data, forKey key: String, in tiers: CacheTiers, expiration: Double?, since mark: KeyGenerations.Snapshot?,
        memoryCopy: ((Double?, KeyGenerations.Snapshot?) -> Void)?
    ) {
        // Each memory tier (this cache's, each typed view's) holds the current value or nothing.
        typedMemories.remove(forKey: key)
        if tiers.contains(.memory), let memoryCopy {
            memory.remove(forKey: key)
            memoryCopy(expiration, mark)
        } else if tiers.contains(.memory) {
            promote(data, forKey: key, expiration: expiration, since: mark)
        } else {
            memory.remove(forKey: key)
        }
        counters.insertions.add(1, ordering: .relaxed)
    }

    /// Removes `key` from every tier.
    ///
    /// Entries in a read-through preloaded directory are not hidden: a later miss reads them again.
    /// - Returns: Whether either tier held a live value.
    /// - Throws: ``CacheError`` from the disk tier; the memory copy is dropped even then.
    @discardableResult
    public func remove(forKey key: String) throws(CacheError) -> Bool {
        guard let remote else { return try removeLocally(forKey: key) }
        remote.generations.begin(key)
        let removed: Bool
        do throws(CacheError) {
            removed = try removeLocally(forKey: key)
        } catch {
            // The remote copy goes all the same (the memory copy went too).
            remote.remove(forKey: key)
            throw error
        }
        remote.remove(forKey: key)
        return removed
    }

    /// Removes `key` from memory and disk (what a received invalidation of it does).
    func removeLocally(forKey key: String) throws(CacheError) -> Bool {
        try keyLocks.withLock(forKey: key) { () throws(CacheError) -> Bool in
            // A copy another writer of the folder removed or replaced goes first: it does not
            // count as removed here.
            if followsFolder { followFolder() }
            let inMemory = memory.remove(forKey: key)
            let inTypedMemory = typedMemories.remove(forKey: key)
            return try disk.remove(forKey: key) || inMemory || inTypedMemory
        }
    }

    /// Removes the keys in `keys` from every tier, as `remove(forKey:)` does for each.
    /// - Returns: The keys that either tier held a live value for, in the order given.
    /// - Throws: ``CacheError`` from the disk tier (the keys before the failing one are removed).
    @discardableResult
    public func remove(forKeys keys: [String]) throws(CacheError) -> [String] {
        try KeyBatch.removing(keys) { (key: String) throws(CacheError) in try remove(forKey: key) }
    }

    /// Removes every entry from every tier. Waits for calls in progress on any key.
    /// - Throws: ``CacheError`` from the disk tier.
    /// - Complexity: O(*n*) in the entries of both tiers.
    public func removeAll() throws(CacheError) {
        guard let remote else { return try removeAllLocally() }
        remote.generations.begin(nil)
        defer { remote.removeAll() }
        try removeAllLocally()
    }

    /// Removes every entry from memory and disk (what a received invalidation of everything does).
    func removeAllLocally() throws(CacheError) {
        try keyLocks.withEveryLock { () throws(CacheError) in
            defer {
                memory.removeAll()
                typedMemories.removeAll()
            }
            try disk.removeAll()
        }
    }

    /// Records a use of `key` on disk, sliding an ``Expiry/default`` entry's expiry, and drops
    /// its memory copy, which the next read promotes again with the new expiry.
    /// - Returns: `false` when no live entry is stored on disk under `key`.
    /// - Throws: ``CacheError`` from the disk tier.
    @discardableResult
    public func touch(forKey key: String) throws(CacheError) -> Bool {
        var slid: Double??
        let touched = try keyLocks.withLock(forKey: key) { () throws(CacheError) -> Bool in
            defer {
                memory.remove(forKey: key)
                typedMemories.remove(forKey: key)
            }
            guard try disk.touch(forKey: key) else { return false }
            if remote != nil { slid = try disk.record(forKey: key).map(remoteExpiration(of:)) }
            return true
        }
        // The remote copy gets the entry's own expiry, as the disk has it now.
        if let remote, let slid { remote.touch(forKey: key, expiration: slid, now: disk.options.clock.now) }
        return touched
    }

    /// Locks the entries under `keys` against expiry in both tiers (see `DiskCache.lock(forKeys:)`).
    /// The memory copies keep their expiry until the next promotion; they are never later than the disk's.
    /// - Returns: The keys that were locked.
    /// - Throws: ``CacheError`` from the disk tier.
    @discardableResult
    public func lock(forKeys keys: [String]) throws(CacheError) -> [String] {
        try changeLocks(keys) { (keys: [String]) throws(CacheError) in try disk.lock(forKeys: keys) }
    }

    /// Unlocks the entries under `keys` (see `DiskCache.unlock(forKeys:)`), dropping their
    /// memory copies, which held no expiry while locked.
    /// - Returns: The keys whose lock count went down.
    /// - Throws: ``CacheError`` from the disk tier.
    @discardableResult
    public func unlock(forKeys keys: [String]) throws(CacheError) -> [String] {
        try changeLocks(keys) { (keys: [String]) throws(CacheError) in try disk.unlock(forKeys: keys) }
    }

    /// Writes the disk tier's access times and index snapshot now (see `DiskCache.flush()`),
    /// returning once they are written; the memory tier holds nothing that outlives the process.
    /// On Apple platforms the disk tier also flushes itself when the app moves to the background
    /// or exits (``DiskCacheOptions/flushesOnBackground``, on by default).
    /// - Returns: `true` when the snapshot was written, `false` when a change in flight made the
    ///   flush skip it.
    /// - Throws: What `DiskCache.flush()` throws.
    @discardableResult
    public func flush() throws(CacheError) -> Bool {
        try disk.flush()
    }

    /// Closes the disk tier (see ``DiskCache/close()``). The memory tier keeps serving hits.
    public func close() {
        remote?.close()
        disk.close()
    }

    // MARK: - Helpers

    /// Locks or unlocks each key on disk under its key lock; a changed key's memory copy goes,
    /// since its expiry is stale now (the next read promotes it with the new one).
    private func changeLocks(_ keys: [String], _ change: ([String]) throws(CacheError) -> [String]) throws(CacheError) -> [String] {
        var changed: [String] = []
        for key in keys {
            try keyLocks.withLock(forKey: key) { () throws(CacheError) in
                if try !change([key]).isEmpty {
                    changed.append(key)
                    memory.remove(forKey: key)
                    typedMemories.remove(forKey: key)
                }
            }
        }
        return changed
    }

    /// Puts `data` in memory with a lifetime ending at `expiration` (disk time), capped by the
    /// memory tier's default, unless another writer of the folder changed `key` since `mark`
    /// (``folderMark(forKey:)``). Expects the key's lock held.
    func promote(_ data: Data, forKey key: String, expiration: Double?, since mark: KeyGenerations.Snapshot? = nil) {
        promote(data, cost: data.count, forKey: key, expiration: expiration, into: memory, since: mark)
    }

    /// Puts `value` in `tier` (this cache's memory tier or a typed view's) with a lifetime ending
    /// at `expiration` (disk time), capped by the tier's default, unless another writer of the
    /// folder changed `key` since `mark` (``folderMark(forKey:)``). Expects the key's lock held.
    func promote<Value>(
        _ value: Value, cost: Int, forKey key: String, expiration: Double?, into tier: MemoryCache<String, Value>,
        since mark: KeyGenerations.Snapshot? = nil
    ) {
        if let mark {
            return storeCopy(value, cost: cost, forKey: key, deadline: expiration ?? .infinity, into: tier, since: mark)
        }
        var lifetime = tier.defaultExpiration
        if let expiration {
            let remaining = expiration - disk.options.clock.now
            lifetime = min(remaining, lifetime ?? .infinity)
        }
        // Nothing is left of an entry already at its expiry: memory does not take it.
        guard let seconds = lifetime else {
            try? tier.store(value, forKey: key, cost: cost)
            return
        }
        if seconds > 0 {
            try? tier.store(value, forKey: key, cost: cost, expiry: .seconds(seconds))
        } else {
            tier.remove(forKey: key)
        }
    }

    /// When a record stored at `now` with `expiry` and `locked` expires on disk, by the disk's
    /// rule (``ExpiryRule``); `nil` while locked. A lower bound: the disk reads its clock after `now`.
    func storeExpiration(_ expiry: Expiry, locked: Bool, now: Double) -> Double? {
        guard let ttl = try? ExpiryRule.headerTTL(for: expiry, key: nil) else { return nil }
        return disk.expiryRule.expirationTime(lockCount: locked ? 1 : 0, ttl: ttl, anchor: disk.expiryRule.headerSeconds(now))
    }
}
