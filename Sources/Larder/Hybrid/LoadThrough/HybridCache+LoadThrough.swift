import Dispatch
import Foundation
import Synchronization

// Load-through reads: a hit is returned as by `value(forKey:from:)`; on a miss, one loader call
// per key however many callers ask at once (`LoadFlights`), the value stored before they resume,
// and stale values served while a refresh runs or when it fails (`StaleWindows`).
//
// A miss runs as a flight: one task per key reads the disk under the key's lock (a fresh hit ends
// it; a stale record within the longest window of the call that started it is offered to the
// waiters), calls the loader, stores what it returns (on the disk's queue, under the key's lock),
// and only then answers every waiter and leaves the map; a caller arriving after that finds the
// value in memory or on disk.
extension HybridCache {
    /// Returns the payload stored under `key`, or on a miss loads it once, stores it with `expiry`
    /// and returns it: one loader call per key in this process, whatever the number of callers
    /// waiting for it.
    ///
    /// ```swift
    /// let cover = try await cache.value(forKey: "cover/42", expiry: .seconds(3600)) {
    ///     try await session.data(from: coverURL).0
    /// }
    /// ```
    ///
    /// - A hit (memory, else disk, else read-through preloaded entries) is returned as
    ///   `value(forKey:from:)` returns it; the loader is not called.
    /// - On a miss, the first caller starts a load and every caller that misses while it runs
    ///   joins it: all get the same bytes, which are stored in both tiers with `expiry` before any
    ///   of them resumes. A loader error reaches every waiting caller as
    ///   ``CacheError/Code/loadFailed`` (its ``CacheError/underlying`` is what the loader threw)
    ///   and is not cached: the next call loads again. When the store fails, the callers still
    ///   get the bytes, and ``LoadEvent/storeFailed(key:error:)`` says so.
    /// - A caller whose task is cancelled stops waiting at once, with ``CacheError/Code/cancelled``;
    ///   the load itself is cancelled (and nothing stored) only when every caller waiting on it
    ///   has gone.
    /// - Stale values (``StaleWindows``): when the disk holds a value that expired less than
    ///   `whileRevalidate` seconds ago, it is returned at once and one background load refreshes
    ///   it; callers arriving meanwhile get the same stale value. When the load fails, callers
    ///   get a value that expired less than `ifError` seconds ago instead of the error. Either way
    ///   ``LoadEvent/servedStale(key:expiredFor:reason:)`` reports it. Locked records never
    ///   expire, so they are never stale. The call that starts a load decides how far back a
    ///   stale record is read (its longer window). The disk keeps expired records for the
    ///   cache's longer window (``DiskCache/staleRetention``): a plain read or a collection
    ///   within it leaves them. A call's windows longer than the cache's find only what the disk
    ///   still holds.
    ///
    /// Statistics: ``HybridCacheStatistics/loads``, ``HybridCacheStatistics/coalescedWaits``,
    /// ``HybridCacheStatistics/staleServes``, ``HybridCacheStatistics/loaderFailures``.
    /// - Parameters:
    ///   - key: The key.
    ///   - expiry: The loaded value's expiry, as in `store(_:forKey:in:expiry:locked:)`
    ///     (``Expiry/default``: the disk's default expiration).
    ///   - staleWindows: This call's stale windows; `nil` (the default) means the cache's
    ///     ``staleWindows``.
    ///   - loader: Fetches the value on a miss. It runs in a task of its own, not the caller's;
    ///     it is cancelled when every waiting caller has been cancelled.
    /// - Returns: The stored, loaded or stale payload.
    /// - Throws: ``CacheError/Code/loadFailed``, ``CacheError/Code/cancelled``,
    ///   ``CacheError/Code/invalidArgument`` for an expiry of zero, negative or non-finite
    ///   seconds or a stale window that is not finite and at least 0, and what the disk read
    ///   throws (``CacheError/Code/invalidKey``, ``CacheError/Code/ioFailure``, ``CacheError/Code/closed``).
    @inlinable
    public func value(
        forKey key: String, expiry: Expiry = .default, staleWindows: StaleWindows? = nil,
        orLoad loader: @escaping @Sendable () async throws -> Data
    ) async throws(CacheError) -> Data {
        // Inlinable so that a hit costs the caller what a plain read does: out of line, the caller
        // allocated the loader's closure context on every call, hit or miss (1.26-1.49 x a plain
        // async hit in `larder-bench loadthrough`); inlined, the allocation moves to the miss path
        // (0.87-0.94 x, BENCHMARKS.md).
        _ = try expiry.validatedSeconds(key: key)
        if let staleWindows, let problem = staleWindows.problem { throw CacheError(.invalidArgument, problem, key: key) }
        if followsFolder { followFolder() }
        if let hit = memory.value(forKey: key, countingMiss: true, countingOwnerHit: true) {
            return hit
        }
        return try await loadAfterMemoryMiss(key: key, expiry: expiry, windows: staleWindows ?? self.staleWindows, loader: loader)
    }

    /// Returns the value stored under `key`, decoded, or on a miss loads it once, stores it
    /// encoded with `expiry` and returns it; see `value(forKey:expiry:staleWindows:orLoad:)`.
    ///
    /// Every caller decodes the bytes itself, on a hit too: the hybrid's memory tier holds bytes.
    /// For hits that decode nothing, load through a ``TypedCache``
    /// (``TypedCache/value(forKey:expiry:staleWindows:orLoad:)``), whose memory tier holds
    /// decoded values. A value the coder cannot encode fails the load
    /// (``CacheError/Code/loadFailed``, with the ``CacheError/Code/encodingFailed`` error as its
    /// ``CacheError/underlying``).
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - key: The key.
    ///   - expiry: The loaded value's expiry (``Expiry/default``).
    ///   - staleWindows: This call's stale windows; `nil` means the cache's ``staleWindows``.
    ///   - coder: How to turn the value into bytes and back; `nil` (the default) means the cache's ``coder``.
    ///   - loader: Fetches the value on a miss.
    /// - Returns: The stored, loaded or stale value.
    /// - Throws: ``CacheError/Code/decodingFailed`` when stored bytes do not decode, or what
    ///   `value(forKey:expiry:staleWindows:orLoad:)` throws.
    public func value<T: Codable & Sendable>(
        _ type: T.Type, forKey key: String, expiry: Expiry = .default, staleWindows: StaleWindows? = nil, coder: CacheCoder? = nil,
        orLoad loader: @escaping @Sendable () async throws -> T
    ) async throws(CacheError) -> T {
        let coder = coder ?? self.coder
        let data = try await value(forKey: key, expiry: expiry, staleWindows: staleWindows) {
            try coder.encoded(await loader(), key: key)
        }
        return try coder.decoded(type, from: data, key: key)
    }

    /// Reads `key` through `loader` in a task of its own, then reports `.success(data)` or
    /// `.failure` on `queue`; see `value(forKey:expiry:staleWindows:orLoad:)`.
    public func value(
        forKey key: String, expiry: Expiry = .default, staleWindows: StaleWindows? = nil,
        orLoad loader: @escaping @Sendable () async throws -> Data, queue: DispatchQueue = .main,
        completion: @escaping CacheCompletion<Data>
    ) {
        deliver(on: queue, completion) { () async throws(CacheError) in
            try await self.value(forKey: key, expiry: expiry, staleWindows: staleWindows, orLoad: loader)
        }
    }

    /// Reads the value under `key` through `loader` in a task of its own, then reports
    /// `.success(value)` or `.failure` on `queue`; see `value(_:forKey:expiry:staleWindows:coder:orLoad:)`.
    public func value<T: Codable & Sendable>(
        _ type: T.Type, forKey key: String, expiry: Expiry = .default, staleWindows: StaleWindows? = nil, coder: CacheCoder? = nil,
        orLoad loader: @escaping @Sendable () async throws -> T, queue: DispatchQueue = .main, completion: @escaping CacheCompletion<T>
    ) {
        deliver(on: queue, completion) { () async throws(CacheError) in
            try await self.value(type, forKey: key, expiry: expiry, staleWindows: staleWindows, coder: coder, orLoad: loader)
        }
    }

    /// Runs `work` in a task and hands its outcome to `completion` on `queue`.
    private func deliver<T: Sendable>(
        on queue: DispatchQueue, _ completion: @escaping CacheCompletion<T>, _ work: @escaping @Sendable () async throws(CacheError) -> T
    ) {
        Task {
            let response: CacheResponse<T>
            do throws(CacheError) {
                response = .success(try await work())
            } catch {
                response = .failure(error)
            }
            queue.async { completion(response) }
        }
    }

    // MARK: - The flight

    /// What the disk says of a key a load-through read missed in memory.
    enum LoadLookup: Sendable {
        case fresh(Data)
        case stale(LoadFlights.StaleCopy)
        case miss
    }

    /// A load-through read that missed memory: takes a stale copy of a flight in progress, or
    /// joins it, or starts it. Not inlined: the miss path of the inlinable read.
    @usableFromInline
    func loadAfterMemoryMiss(
        key: String, expiry: Expiry, windows: StaleWindows, loader: @escaping @Sendable () async throws -> Data
    ) async throws(CacheError) -> Data {
        if Task.isCancelled { throw CacheError(.cancelled, "the task was cancelled before the load-through read started", key: key) }
        switch loads.enter(key: key, windows: windows, now: disk.options.clock.now) {
        case .stale(let data, let expiredFor):
            counters.staleServes.add(1, ordering: .relaxed)
            report(.servedStale(key: key, expiredFor: expiredFor, reason: .revalidating))
            return data
        case .waiting(let ticket, let flight):
            if let flight {
                let task = Task { await self.runFlight(flight, key: key, expiry: expiry, staleWithin: windows.longest, loader: loader) }
                loads.attach(task, flight: flight, key: key)
            } else {
                counters.coalescedWaits.add(1, ordering: .relaxed)
            }
            return try await loads.wait(ticket: ticket, key: key).get()
        }
    }

    /// One flight: look on disk, load, store, answer the waiters.
    private func runFlight(
        _ flight: UInt64, key: String, expiry: Expiry, staleWithin window: Double, loader: @escaping @Sendable () async throws -> Data
    ) async {
        let lookup: LoadLookup
        do {
            lookup = try await disk.ioQueue.runBlocking(key: key) { () throws(CacheError) in try self.lookUp(key, staleWithin: window) }
        } catch {
            finish(flight, key: key, outcome: .failure(error))
            return
        }
        switch lookup {
        case .fresh(let data):
            finish(flight, key: key, outcome: .success(data))
            return
        case .stale(let copy):
            let served = loads.offerStale(copy, flight: flight, key: key, now: disk.options.clock.now)
            reportStale(served, key: key, reason: .revalidating)
        case .miss:
            break
        }
        // Every waiter left (and no stale serve made this a background refresh): nobody to answer.
        if Task.isCancelled { return }
        // With a remote tier, another instance may hold the value, or be loading it.
        var holdsLoadLock = false
        if case .miss = lookup, let remote {
            switch await planRemoteLoad(remote, key: key) {
            case .value(let data):
                finish(flight, key: key, outcome: .success(data))
                return
            case .load(let holdingLock):
                holdsLoadLock = holdingLock
            }
        }
        let releasesLock = holdsLoadLock
        defer { if releasesLock, let remote { disk.ioQueue.async(.write) { remote.releaseLoadLock(forKey: key) } } }
        if Task.isCancelled { return }
        counters.loads.add(1, ordering: .relaxed)
        let data: Data
        do {
            data = try await loader()
        } catch {
            if Task.isCancelled { return }
            counters.loaderFailures.add(1, ordering: .relaxed)
            let failure = CacheError(.loadFailed, "the loader failed: \(error)", key: key, underlying: error)
            report(.loadFailed(key: key, error: failure))
            finish(flight, key: key, outcome: .failure(failure))
            return
        }
        // A load abandoned by all its callers changes nothing.
        if Task.isCancelled { return }
        do {
            try await disk.ioQueue.runBlocking(key: key) { () throws(CacheError) in try self.store(data, forKey: key, expiry: expiry) }
        } catch {
            report(.storeFailed(key: key, error: error))
        }
        report(.loaded(key: key, byteCount: data.count))
        finish(flight, key: key, outcome: .success(data))
    }

    /// Ends a flight, counting and reporting the waiters given the stale copy instead of an error.
    private func finish(_ flight: UInt64, key: String, outcome: LoadFlights.Outcome) {
        let served = loads.finish(flight: flight, key: key, outcome: outcome, now: disk.options.clock.now)
        reportStale(served, key: key, reason: .loadFailed)
    }

    /// Memory (another caller may have just filled it), then a stale disk record expired less than
    /// `window` ago, then the disk and preloaded entries as `value(forKey:from:)` reads them.
    /// Runs under the key's lock; a stale record counts as a miss.
    private func lookUp(_ key: String, staleWithin window: Double) throws(CacheError) -> LoadLookup {
        try keyLocks.withLock(forKey: key) { () throws(CacheError) -> LoadLookup in
            if let hit = memory.value(forKey: key, countingMiss: false, countingOwnerHit: true) {
                return .fresh(hit)
            }
            if let record = try disk.staleRecord(forKey: key, within: window), let expiration = record.expirationTime {
                counters.misses.add(1, ordering: .relaxed)
                return .stale(LoadFlights.StaleCopy(data: record.data, expirationTime: expiration))
            }
            return try _valueFromDisk(forKey: key, promoting: true, countingMiss: remote == nil).map(LoadLookup.fresh) ?? .miss
        }
    }

    /// What a load-through miss does with a remote tier.
    private enum RemoteLoadPlan {
        /// The remote tier had it (promoted).
        case value(Data)
        /// Load it here; `holdingLock` when this instance took the key's load lock.
        case load(holdingLock: Bool)
    }

    /// Reads the remote tier; on a miss takes the key's load lock (`SET NX PX`), or, when another
    /// instance holds it, polls the remote tier until its value appears or
    /// ``RemoteTierOptions/loadLockWait`` passes. Blocking calls run on the disk's queue.
    private func planRemoteLoad(_ remote: RemoteTier, key: String) async -> RemoteLoadPlan {
        let ioQueue = disk.ioQueue
        let read = { @Sendable () async -> Data? in
            try? await ioQueue.runBlocking(key: key) { () throws(CacheError) -> Data? in
                let generation = remote.generations.snapshot(key)
                let now = self.disk.options.clock.now
                guard let (data, lifetime) = remote.value(forKey: key, now: now) else { return nil }
                self.promoteRemoteHit(data, forKey: key, lifetime: lifetime, into: .all, generation: generation, now: now)
                return data
            }
        }
        if let data = await read() { return .value(data) }
        counters.misses.add(1, ordering: .relaxed)
        let acquired = (try? await ioQueue.runBlocking(key: key) { () throws(CacheError) in remote.acquireLoadLock(forKey: key) }) ?? true
        if acquired { return .load(holdingLock: true) }
        let deadline = ContinuousClock.now + .milliseconds(Int64(remote.options.loadLockWait * 1000))
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
            if Task.isCancelled { break }
            if let data = await read() { return .value(data) }
        }
        return .load(holdingLock: false)
    }

    private func reportStale(_ served: [LoadFlights.StaleServe], key: String, reason: LoadEvent.StaleReason) {
        guard !served.isEmpty else { return }
        counters.staleServes.add(served.count, ordering: .relaxed)
        for serve in served { report(.servedStale(key: key, expiredFor: serve.expiredFor, reason: reason)) }
    }

    private func report(_ event: LoadEvent) {
        loadEventHandler?(event)
    }
}
