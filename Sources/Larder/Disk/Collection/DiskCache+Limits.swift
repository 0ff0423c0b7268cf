import Dispatch
import Foundation

extension DiskCache {
    /// Trims the cache to its limits after a store, when it is over them; the record just stored
    /// stays. Does nothing before the index is complete (the build enforces them when it ends).
    ///
    /// Under ``DiskEvictionPolicy/adaptive``, the records waiting for the policy (the one just
    /// stored among them) are admitted first; when they would take it over its budget, or the
    /// cache is over a limit, the expired records are removed before any live one.
    func enforceLimits(excluding name: String?) -> [CacheEvent] {
        guard options.sizeLimit > 0 || options.countLimit > 0 || keepsFreeSpace else { return [] }
        // The totals of a folder shared with other writers are the folder's once replayed.
        followFolder()
        let limit = effectiveSizeLimit(forceRefresh: false)
        let isOver = isOverLimits(limit)
        guard isOver || hasPolicyWork else { return [] }
        var pass = CollectionPass()
        collectionGate.withLock { _ in
            // One trim at a time across the writers sharing the folder: while another process
            // trims, this one's totals come down with the removals it replays.
            _ = withCollectionTurn { () -> Void in
                let expiredFirst = state.withLock { s in
                    s.isIndexReady && s.index.policy != nil && (isOver || s.index.admissionNeedsRoom)
                }
                if expiredFirst { removeExpired(in: &pass) }
                prune(sizeLimit: limit, countLimit: options.countLimit, excluding: name, reason: nil, in: &pass)
            }
        }
        return pass.events
    }

    /// Whether the index is complete and the adaptive policy has records to admit or victims to remove.
    var hasPolicyWork: Bool {
        state.withLock { s in s.isIndexReady && s.index.hasPolicyWork }
    }

    /// Whether the index is complete and over `sizeLimit` or the count limit.
    func isOverLimits(_ sizeLimit: Int) -> Bool {
        state.withLock { s in
            s.isIndexReady && (s.index.totalSize > sizeLimit || (options.countLimit > 0 && s.index.count > options.countLimit))
        }
    }

    /// Frees at least `bytes` by removing least recently used records, unlocked first, after a
    /// store failed with a full volume.
    func makeRoom(bytes: Int, excluding name: String) -> [CacheEvent] {
        var pass = CollectionPass()
        collectionGate.withLock { _ in
            let target = max(0, state.withLock { $0.index.totalSize } - bytes)
            prune(sizeLimit: target, countLimit: 0, excluding: name, reason: .diskFull, in: &pass)
        }
        return pass.events
    }

    /// Whether the cache keeps ``DiskCacheOptions/minimumFreeDiskSpace`` free: it asks for some
    /// and, under ``DiskCacheOptions/minimumFreeSpaceNeedsSizeLimit``, has a size limit.
    var keepsFreeSpace: Bool {
        options.minimumFreeDiskSpace != .zero && (!options.minimumFreeSpaceNeedsSizeLimit || options.sizeLimit > 0)
    }

    /// The size limit in force: ``DiskCacheOptions/sizeLimit`` (`Int.max` for none), lowered so
    /// that the volume keeps ``DiskCacheOptions/minimumFreeDiskSpace`` free. The volume is asked
    /// at most once a second unless `forceRefresh`.
    func effectiveSizeLimit(forceRefresh: Bool) -> Int {
        var limit = options.sizeLimit > 0 ? options.sizeLimit : Int.max
        guard keepsFreeSpace else { return limit }
        let required: (Int) -> Int
        switch options.minimumFreeDiskSpace {
        case .zero: return limit
        case .fraction(let x): required = { Int(Double($0) * x) }
        case .bytes(let n): required = { _ in n }
        }
        let now = options.clock.now
        let cached = state.withLock { $0.freeSpace }
        var volume: (checkedAt: Double, volumeSize: Int, available: Int)
        if let cached, !forceRefresh, abs(now - cached.checkedAt) < 1 {
            volume = cached
        } else {
            guard let info = try? io.volumeInfo(layout.root) else { return limit }
            volume = (now, info.size, info.available)
            state.withLock { $0.freeSpace = volume }
        }
        let deficit = required(volume.volumeSize) - volume.available
        if deficit > 0 {
            let total = state.withLock { $0.index.totalSize }
            limit = min(limit, max(0, total - deficit))
        }
        return limit
    }
}
