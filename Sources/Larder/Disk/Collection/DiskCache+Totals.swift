import Dispatch
import Foundation

extension DiskCache {
    /// The bytes every record occupies on disk (lengths rounded up to the block size). Waits for the index.
    public var totalSize: Int {
        waitForIndex()
        followFolder()
        return state.withLock { $0.index.totalSize }
    }

    /// The bytes locked records occupy on disk. Waits for the index.
    public var lockedSize: Int {
        waitForIndex()
        followFolder()
        return state.withLock { $0.index.lockedSize }
    }

    /// The number of records. Waits for the index.
    public var count: Int {
        waitForIndex()
        followFolder()
        return state.withLock { $0.index.count }
    }

    /// Counters since the cache opened: hits, misses, insertions (stores), expirations met by
    /// reads, evictions by reason, bytes read and written, corrupt records removed, collections.
    public var statistics: CacheStatistics { state.withLock { $0.counters.statistics } }
}
