import Foundation

// Closing: flushing what the index holds, stopping collection, releasing the directory.
extension DiskCache {
    /// Flushes access times and the index snapshot, stops scheduled collection, and releases the
    /// directory. Changes under way on other threads finish first (so that no other cache can own
    /// the directory while they run); calls that would change a record after that throw
    /// ``CacheError/Code/closed``, as do later calls. Closing twice is harmless; the cache also
    /// closes when it goes away.
    public func close() {
        closeNow()
    }

    func closeNow() {
        // The first caller closes; later ones (and `deinit` after `close()`) return at once.
        // The flag is set before the timer is taken, so a concurrent schedule either sees it or
        // installs a timer that is taken here.
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let timer: (any DispatchSourceTimer)? = state.withLock { s in
            defer { s.timer = nil }
            return s.timer
        }
        timer?.cancel()
        waitForIndex()
        // Changes begun on other threads before the flag was set finish before the directory
        // lock goes; later ones are refused. Else a new cache could open the folder meanwhile,
        // clear their temporary files (the store failed with ENOENT) and be changed behind its
        // back (found by `larder-stress soak`, which reopens its disk cache under load).
        finishChanges()
        var events: [CacheEvent] = []
        collectionGate.withLock { _ in
            events += writeBackAccessTimes()
            events += writeSnapshot()
        }
        directoryLock?.release()
        emit(events)
    }
}
