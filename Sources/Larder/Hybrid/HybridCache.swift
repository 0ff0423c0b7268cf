import Foundation
import Synchronization

/// What an app calls: a ``MemoryCache`` in front of a ``DiskCache``, with typed values, entries
/// shipped with the app, `async` calls and SPT-style callbacks.
///
/// ```swift
/// let cache = try HybridCache(options: HybridCacheOptions(directory: cachesURL))
/// try cache.store(data, forKey: "avatar/42", ttl: 3600)
/// let hit = try cache.data(forKey: "avatar/42")            // memory, then disk
/// let profile = try cache.value(Profile.self, forKey: "me") // JSON by default
/// ```
///
/// **Consistency.** Every call that reads the disk or changes either tier holds a lock for its
/// key (one of 64 stripes, hashed by key) across both tiers, so "read disk, promote to memory"
/// never interleaves with a store or removal of the same key: once ``store(_:forKey:in:ttl:locked:)``
/// or ``remove(forKey:)`` returns, no tier serves the older value. Memory hits take no extra
/// lock. Different keys run in parallel.
///
/// **Expiry.** TTLs and locks are the disk's (SPT's rules). An entry in memory gets a time to
/// live equal to the time left until its disk record expires (none while locked; at most
/// ``MemoryCache/defaultTTL``), so memory never serves what the disk considers expired. Reads
/// served from memory do **not** slide the disk expiry of `ttl` 0 entries: such an entry expires
/// from both tiers at the disk expiry it had when last stored or read from disk, however often
/// memory serves it. ``touch(forKey:)`` slides it (and drops the memory copy, which the next
/// read brings back with the new expiry).
///
/// **Disk changes made behind its back.** With ``init(options:)``, records the disk evicts (limits,
/// collection) or finds corrupt are dropped from memory too. With ``init(memory:disk:)``, calls
/// made on ``disk`` directly are not seen by the memory tier.
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

    /// The read-through preloaded directory, if any.
    let preloaded: PreloadedSource?
    private let stripes: [KeyStripe]

    /// A lock serialising the hybrid's operations on the keys that hash to it.
    private final class KeyStripe: Sendable {
        let mutex = LarderMutex(())
    }

    /// Puts a memory tier in front of an already open disk tier.
    /// - Parameters:
    ///   - memory: The memory tier. Give it the disk's clock so that both tiers agree on expiry.
    ///   - disk: The disk tier.
    ///   - coder: The coder for typed values (``CacheCoder/json``).
    public convenience init(memory: MemoryCache<String, Data>, disk: DiskCache, coder: CacheCoder = .json) {
        self.init(memory: memory, disk: disk, coder: coder, preloaded: nil, report: nil)
    }

    /// Opens the disk tier, creates the memory tier, and imports or attaches the preloaded entries.
    ///
    /// A preloaded file that cannot be used is listed in ``preloadReport`` and skipped; it never
    /// makes the open fail.
    /// - Parameter options: The tiers' settings.
    /// - Throws: What ``DiskCache/init(options:)`` throws, and ``CacheError/Code/invalidOptions``
    ///   for negative memory limits.
    public convenience init(options: HybridCacheOptions) throws {
        guard options.countLimit >= 0, options.totalCostLimit >= 0 else {
            throw CacheError(.invalidOptions, "countLimit and totalCostLimit must be 0 (no limit) or positive", path: options.disk.directory.path)
        }
        let memory = MemoryCache<String, Data>(
            countLimit: options.countLimit, totalCostLimit: options.totalCostLimit,
            defaultTTL: options.defaultTTL, clock: options.disk.clock)
        var diskOptions = options.disk
        let handler = diskOptions.eventHandler
        // Records the disk drops on its own must not live on in memory.
        diskOptions.eventHandler = { event in
            switch event {
            case .recordEvicted(let key?, _, _), .corruptRecordRemoved(let key?, _, _):
                memory.removeValue(forKey: key)
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
        self.init(memory: memory, disk: disk, coder: options.coder, preloaded: source, report: report)
    }

    private init(memory: MemoryCache<String, Data>, disk: DiskCache, coder: CacheCoder, preloaded: PreloadedSource?, report: PreloadReport?) {
        self.memory = memory
        self.disk = disk
        self.coder = coder
        self.preloaded = preloaded
        self.preloadReport = report
        self.stripes = (0 ..< 64).map { _ in KeyStripe() }
    }

    // MARK: - Reading

    /// Returns the payload stored under `key`, from the first of `tiers` that holds it.
    ///
    /// A disk hit (or, with read-through preloaded entries, a preloaded hit, which is first
    /// stored on disk) is promoted to memory when `tiers` includes ``CacheTiers/memory``, with
    /// a cost of its byte count and a time to live ending at its disk expiry.
    /// - Parameters:
    ///   - key: The key.
    ///   - tiers: Where to look (``CacheTiers/all``).
    /// - Returns: The payload, or `nil` when no tier asked holds a live value.
    /// - Throws: ``CacheError`` from the disk tier: ``CacheError/Code/invalidKey``,
    ///   ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``.
    public func data(forKey key: String, from tiers: CacheTiers = .all) throws -> Data? {
        if tiers.contains(.memory), let hit = memory.value(forKey: key) { return hit }
        return try dataAfterMemoryMiss(forKey: key, from: tiers)
    }

    /// The disk (and read-through) part of ``data(forKey:from:)``, once memory has missed.
    func dataAfterMemoryMiss(forKey key: String, from tiers: CacheTiers) throws -> Data? {
        guard tiers.contains(.disk) else { return nil }
        return try withStripe(key) { () throws -> Data? in
            // Another caller may have promoted it while this one waited (the first look already
            // counted the miss).
            if tiers.contains(.memory), let hit = memory.value(forKey: key, countingMiss: false) { return hit }
            if let record = try disk.load(forKey: key) {
                if tiers.contains(.memory) { promote(record.data, forKey: key, expiration: record.expirationTime) }
                return record.data
            }
            guard let entry = preloaded?.entry(forKey: key) else { return nil }
            // Keep the preloaded hit on disk when it can; serving it does not depend on that.
            let expiration = storeExpiration(ttl: entry.ttl, locked: entry.isLocked, now: disk.options.clock.now)
            _ = try? disk.store(entry.data, forKey: key, ttl: entry.ttl, locked: entry.isLocked)
            if tiers.contains(.memory) { promote(entry.data, forKey: key, expiration: expiration) }
            return entry.data
        }
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
    ///   - ttl: Seconds until it expires; 0 (the default) means the disk's default expiration,
    ///     sliding with disk reads. For a memory-only store, 0 means ``MemoryCache/defaultTTL``.
    ///   - locked: Whether it is locked against expiry (in memory: no time to live but the memory
    ///     tier's own ``MemoryCache/defaultTTL``).
    /// - Throws: ``CacheError`` from the disk tier; after a failed disk write both tiers keep
    ///   their previous value.
    public func store(_ data: Data, forKey key: String, in tiers: CacheTiers = .all, ttl: TimeInterval = 0, locked: Bool = false) throws {
        guard ttl.isFinite, ttl >= 0 else {
            throw CacheError(.invalidOptions, "ttl must be 0 (the default expiration) or a positive number of seconds, not \(ttl)", key: key)
        }
        try withStripe(key) { () throws in
            let expiration: Double?
            if tiers.contains(.disk) {
                // Read before the disk reads it, so memory's expiry is never later than the disk's.
                let now = disk.options.clock.now
                try disk.store(data, forKey: key, ttl: ttl, locked: locked)
                expiration = storeExpiration(ttl: ttl, locked: locked, now: now)
            } else {
                if !tiers.isEmpty { try disk.remove(forKeys: [key]) }
                expiration = locked || ttl == 0 ? nil : disk.options.clock.now + ttl
            }
            if tiers.contains(.memory) {
                promote(data, forKey: key, expiration: expiration)
            } else {
                memory.removeValue(forKey: key)
            }
        }
    }

    /// Removes `key` from every tier.
    ///
    /// Entries in a read-through preloaded directory are not hidden: a later miss reads them again.
    /// - Throws: ``CacheError`` from the disk tier; the memory copy is dropped even then.
    public func remove(forKey key: String) throws {
        try withStripe(key) { () throws in
            defer { memory.removeValue(forKey: key) }
            try disk.remove(forKeys: [key])
        }
    }

    /// Removes every entry from every tier. Waits for calls in progress on any key.
    /// - Throws: ``CacheError`` from the disk tier.
    /// - Complexity: O(*n*) in the entries of both tiers.
    public func removeAll() throws {
        try withEveryStripe { () throws in
            defer { memory.removeAll() }
            try disk.removeAll()
        }
    }

    /// Records a use of `key` on disk, sliding a `ttl` 0 entry's expiry, and drops its memory
    /// copy, which the next read promotes again with the new expiry.
    /// - Returns: `false` when no live entry is stored on disk under `key`.
    /// - Throws: ``CacheError`` from the disk tier.
    @discardableResult
    public func touch(forKey key: String) throws -> Bool {
        try withStripe(key) { () throws -> Bool in
            defer { memory.removeValue(forKey: key) }
            return try disk.touch(forKey: key)
        }
    }

    /// Locks the entries under `keys` against expiry in both tiers (see ``DiskCache/lock(forKeys:)``).
    /// The memory copies keep their expiry until the next promotion; they are never later than the disk's.
    /// - Returns: The keys that were locked.
    /// - Throws: ``CacheError`` from the disk tier.
    @discardableResult
    public func lock(forKeys keys: [String]) throws -> [String] {
        var locked: [String] = []
        for key in keys {
            try withStripe(key) { () throws in
                if try !disk.lock(forKeys: [key]).isEmpty {
                    locked.append(key)
                    // The copy's expiry is stale now; the next read promotes it without one.
                    memory.removeValue(forKey: key)
                }
            }
        }
        return locked
    }

    /// Unlocks the entries under `keys` (see ``DiskCache/unlock(forKeys:)``), dropping their
    /// memory copies, which held no expiry while locked.
    /// - Returns: The keys whose lock count went down.
    /// - Throws: ``CacheError`` from the disk tier.
    @discardableResult
    public func unlock(forKeys keys: [String]) throws -> [String] {
        var unlocked: [String] = []
        for key in keys {
            try withStripe(key) { () throws in
                if try !disk.unlock(forKeys: [key]).isEmpty {
                    unlocked.append(key)
                    memory.removeValue(forKey: key)
                }
            }
        }
        return unlocked
    }

    /// Closes the disk tier (see ``DiskCache/close()``). The memory tier keeps serving hits.
    public func close() {
        disk.close()
    }

    // MARK: - Helpers

    /// Puts `data` in memory with a time to live ending at `expiration` (disk time), capped by the
    /// memory tier's default. Expects the key's stripe held.
    private func promote(_ data: Data, forKey key: String, expiration: Double?) {
        var ttl = memory.defaultTTL
        if let expiration {
            let remaining = max(0, expiration - disk.options.clock.now)
            ttl = min(remaining, ttl ?? .infinity)
        }
        memory.setValue(data, forKey: key, cost: data.count, ttl: ttl)
    }

    /// When a record stored at `now` with `ttl` and `locked` expires on disk, by SPT's rule
    /// (whole seconds; `nil` while locked). A lower bound: the disk reads its clock after `now`.
    private func storeExpiration(ttl: TimeInterval, locked: Bool, now: Double) -> Double? {
        guard !locked else { return nil }
        let threshold = ttl > 0 ? ttl.rounded(.up) : disk.options.defaultExpiration.rounded(.down)
        return now.rounded(.down) + threshold
    }

    private func withStripe<T>(_ key: String, _ body: () throws -> T) throws -> T {
        var hasher = Hasher()
        hasher.combine(key)
        let stripe = stripes[Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes.count))]
        return try stripe.mutex.withLock { (_: inout Void) throws -> T in try body() }
    }

    /// Runs `body` holding every stripe, taken in order (per-key calls take one, so no deadlock).
    private func withEveryStripe(from index: Int = 0, _ body: () throws -> Void) throws {
        guard index < stripes.count else { return try body() }
        try stripes[index].mutex.withLock { (_: inout Void) throws in
            try withEveryStripe(from: index + 1, body)
        }
    }
}
