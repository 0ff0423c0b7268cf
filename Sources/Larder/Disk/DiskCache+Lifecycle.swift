import Foundation

// Flushing what the index holds, and closing: stopping collection, releasing the directory.
extension DiskCache {
    /// Writes what the cache holds only in memory to its folder now: the access times the index
    /// keeps for the records read since the last collection (batched into their headers), and
    /// the index snapshot (every record with its size, lock count, expiry and place in the
    /// least-recently-used order), so that a process killed from here on (an app suspended, then
    /// terminated by the system) reopens with the same order and totals. Records themselves are
    /// written by their stores, not here. Returns once the writes are done.
    ///
    /// What "written" means depends on ``DiskCacheOptions/durability``:
    /// - ``Durability/atomicRename``: the headers and the snapshot are in the operating system's
    ///   page cache, which survives the process being killed but not a power loss.
    /// - ``Durability/fsync``: each header rewritten and the snapshot are also `fsync`ed, and then
    ///   the folder that names the snapshot, so they survive a power loss as well.
    ///
    /// A change to a record running on another thread when the snapshot would be written (a
    /// store, a removal, a lock) makes the flush skip the snapshot and return `false`: a
    /// snapshot must hold every change that reached the disk, and that one has not finished. The
    /// access times are written all the same; the next flush, collection or ``close()`` writes
    /// the snapshot. A read-only cache writes nothing and returns `true`.
    ///
    /// When the cache's folder was deleted behind its back, the flush makes it again first (see
    /// ``CacheEvent/folderRecreated(path:)``).
    ///
    /// On Apple platforms the cache also flushes itself when the app moves to the background or
    /// exits, unless ``DiskCacheOptions/flushesOnBackground`` is turned off.
    /// - Returns: `true` when the snapshot was written, `false` when a change in flight made the
    ///   flush skip it.
    /// - Throws: ``CacheError/Code/closed``; ``CacheError/Code/ioFailure`` when the snapshot
    ///   cannot be written (a header that cannot be written is reported as
    ///   ``CacheEvent/ioError(operation:path:errno:)`` instead, and the flush goes on); what
    ///   making a deleted folder again throws (``CacheError/Code/unsafeDirectory``,
    ///   ``CacheError/Code/directoryInUse``, ``CacheError/Code/ioFailure``).
    /// - Complexity: O(*n*) in the records for the snapshot, plus one header write per record
    ///   read since the last write-back.
    @discardableResult
    public func flush() throws(CacheError) -> Bool {
        try checkOpen(key: nil)
        guard !options.isReadOnly else { return true }
        waitForIndex()
        var events: [CacheEvent] = []
        defer { emit(events) }
        switch recoverRemovedFolder() {
        case .notRemoved: break
        case .recovered(let recreated): events += recreated
        case .failed(let error): throw error
        }
        let sync = options.durability == .fsync
        var outcome = SnapshotWrite.skipped
        collectionGate.withLock { _ in
            events += writeBackAccessTimes(sync: sync)
            outcome = writeSnapshot(sync: sync)
        }
        switch outcome {
        case .written:
            return true
        case .skipped:
            return false
        case .failed(let event):
            events.append(event)
            var errno: Int32?
            if case .ioError(_, _, let code) = event { errno = code }
            throw CacheError(.ioFailure, "cannot write the index snapshot", path: layout.snapshotPath, errno: errno)
        }
    }

    /// Flushes access times and the index snapshot, stops scheduled collection, and releases the
    /// directory. Changes under way on other threads finish first (so that no other cache can own
    /// the directory while they run); calls that would change a record after that throw
    /// ``CacheError/Code/closed``, as do later calls. Closing twice is harmless.
    ///
    /// The cache also closes when its owner lets go of it: the last release of the `DiskCache`
    /// returned by ``init(options:)`` closes it on the releasing thread, before the release
    /// returns, so its folder can be opened again at once (see <doc:Lifecycle>). The cache's own
    /// work in progress (the index build every open starts, a scheduled collection, a
    /// compaction) does not keep it open: it finds the cache closed and stops.
    public func close() {
        closeNow(waitingForIndexBuild: true)
    }

    /// Closes the cache: for ``close()``, after an index build under way ends (so that the
    /// snapshot written holds every record, and the next open starts from it); for the owner's
    /// release, at once, the build abandoned (the next open lists the folder again).
    func closeNow(waitingForIndexBuild: Bool) {
        // The first caller closes; later ones (and `deinit` after `close()`) return at once.
        // The flag is set before the timer is taken, so a concurrent schedule either sees it or
        // installs a timer that is taken here.
        guard !isClosed.set() else { return }
        lifecycle.stop()
        let timer: (any DispatchSourceTimer)? = state.withLock { s in
            defer { s.timer = nil }
            return s.timer
        }
        timer?.cancel()
        // The index build runs to its end for `close()`, begun or not. For the owner's release, a
        // build that has not begun never will (it checks under the same lock), and one under way
        // is abandoned: it then changes nothing on disk (its withdrawal of the snapshot and its
        // trim check the close under the locks the close takes below), and an index not complete
        // writes no snapshot.
        if waitingForIndexBuild {
            waitForIndex()
        } else {
            state.withLock { s in
                s.indexBuildIsSettled = true
                s.indexBuildIsAbandoned = true
            }
        }
        // Changes begun on other threads before the flag was set finish before the directory
        // lock goes; later ones are refused. Else a new cache could open the folder meanwhile,
        // clear their temporary files (the store failed with ENOENT) and be changed behind its back.
        finishChanges()
        // Reads still under way close what they use when they give it back.
        records.descriptors?.retireAll(closing: true)
        var events: [CacheEvent] = []
        collectionGate.withLock { _ in
            events += writeBackAccessTimes()
            events += writeSnapshot(compacting: true)
        }
        let lock = directoryLock.withLock { lock in
            defer { lock = nil }
            return lock
        }
        sharedFolder?.withdraw()
        lock?.release()
        emit(events)
    }
}
