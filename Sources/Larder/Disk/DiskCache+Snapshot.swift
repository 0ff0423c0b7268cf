import Foundation

// The index snapshot on disk: written after a collection, by a flush and at close, withdrawn before any
// change to a record, so that a snapshot on disk is always exact.
extension DiskCache {
    /// Whether a snapshot may be on disk, and how many changes to records are under way; guarded
    /// by ``snapshotGate``.
    struct SnapshotState {
        /// Whether a snapshot may be on disk, so the next change must withdraw it first. A
        /// writer starts with `true`: the snapshot its last close wrote stays until the
        /// background build has read it, and a store made meanwhile must not leave it behind
        /// for a crash to trust (found by the crash-consistency test under load).
        var isOnDisk: Bool
        var changesInFlight = 0
        /// Whether the snapshot was unlinked but the root not yet synced (``Durability/fsync``).
        var removalIsUnsynced = false
        /// Whether ``close()`` has begun: no change starts any more.
        var isClosing = false
        /// Shard folder stamps that still vouch for the index (not racy): those the open found
        /// unchanged, then those the last snapshot recorded. The next snapshot records them again
        /// for the folders the cache has not changed since, rather than what `stat` says then,
        /// so that a file another program adds to such a folder while the cache is open shows
        /// at the next open.
        var carriedStamps: [String: FolderStamp] = [:]
        /// Shard folders the cache changed since ``carriedStamps`` were taken (a record of
        /// theirs stored, replaced or removed): the next snapshot stamps them as they are then.
        var changedFolders: Set<String> = []
    }

    /// What became of an attempt to write the snapshot.
    enum SnapshotWrite {
        /// The snapshot on disk holds the index as it was.
        case written
        /// Not written: a change to records was under way, or the index was not complete yet.
        case skipped
        /// The write failed; the event says where and why.
        case failed(CacheEvent)
    }

    /// Writes the index snapshot atomically, unless a change to the records is under way (then
    /// the next collection, `flush()` or ``close()`` writes it).
    func writeSnapshot() -> [CacheEvent] {
        if case .failed(let event) = writeSnapshot(sync: false) { return [event] }
        return []
    }

    /// Writes the index snapshot atomically (a temporary file, then a rename), unless a change to
    /// the records is under way or the index is not complete.
    /// - Parameter sync: Whether to `fsync` the snapshot and the root folder once it is in
    ///   place, so that it survives a power loss (`flush()` under ``Durability/fsync``).
    func writeSnapshot(sync: Bool) -> SnapshotWrite {
        guard !options.isReadOnly else { return .skipped }
        return snapshotGate.withLock { gate -> SnapshotWrite in
            // Changes register under this lock before they touch a record, so with none in
            // flight the index holds every change that reached the disk.
            guard gate.changesInFlight == 0 else { return .skipped }
            // A copy that shares the index's storage (encoded outside the cache's lock; a change
            // meanwhile copies the storage it changes).
            let index: DiskIndex? = state.withLock { s in s.isIndexReady ? s.index : nil }
            guard let index else { return .skipped }
            do throws(Errno) {
                var written = FolderStamps.none
                try io.writeFileAtomically(layout.snapshotPath) { created in
                    written = folderStamps(reference: .modification(created), carrying: gate)
                    return IndexSnapshot.encode(index, stamps: written)
                }
                // Every change is in this snapshot: its stamps vouch from now on (the racy ones not).
                gate.carriedStamps = written.byFolder.filter { $0.value.modification < written.reference }
                gate.changedFolders = []
                gate.isOnDisk = true
                if sync {
                    // After the rename: the file's bytes, then the folder entry that names it.
                    let fd = try io.openForReading(layout.snapshotPath).fd
                    defer { io.close(fd) }
                    try io.fsync(fd)
                    try records.syncFolder(layout.root)
                }
                return .written
            } catch {
                return .failed(.ioError(operation: "snapshot", path: layout.snapshotPath, errno: error.rawValue))
            }
        }
    }

    /// The shard folders' stamps, for a snapshot whose temporary file was created at
    /// `reference` (on the file system's clock, before the first stamp is taken); none when the
    /// root cannot be listed. No change to records is under way (the caller holds
    /// ``snapshotGate`` with none in flight), so each folder holds what the index says of it.
    /// The stamps of the folders the cache did not change since `gate`'s carried stamps were
    /// taken are those stamps (see ``SnapshotState/carriedStamps``).
    func folderStamps(reference: FileTime, carrying gate: SnapshotState) -> FolderStamps {
        guard var stamps = try? layout.shardStamps(io: io) else { return .none }
        for (folder, carried) in gate.carriedStamps where stamps[folder] != nil && !gate.changedFolders.contains(folder) {
            stamps[folder] = carried
        }
        return FolderStamps(reference: reference, byFolder: stamps)
    }

    /// Removes the snapshot from disk. Under ``Durability/fsync`` the removal is made durable
    /// (the root is synced) before any change that would make the snapshot stale: else a power
    /// loss could keep the snapshot and the synced change both, and the next open would trust
    /// sizes and lock counts that the files no longer have (found by the power-loss tests).
    /// One sync per snapshot written, so at most one per collection. When the unlink or the
    /// sync fails, the snapshot counts as still on disk, and the next change tries again.
    func withdrawSnapshot(_ gate: inout SnapshotState) {
        do throws(Errno) {
            if try io.unlink(layout.snapshotPath), options.durability == .fsync { gate.removalIsUnsynced = true }
        } catch {
            return
        }
        if gate.removalIsUnsynced {
            guard (try? io.syncFolder(layout.root)) != nil else { return }
            gate.removalIsUnsynced = false
        }
        gate.isOnDisk = false
    }

    /// Runs a change to records (a write, a header rewrite, a removal) and the index update that
    /// goes with it. The snapshot on disk is withdrawn before the change, so that a crash from
    /// here on cannot leave a snapshot that misses it; it costs one `unlink` per collection.
    /// - Returns: What `body` returned, or `nil`, without running it, once ``close()`` has
    ///   begun: `close()` waits for the changes under way and releases the directory lock after
    ///   them, and none may start behind it (a new cache could own the folder by then).
    /// - Parameter name: The record file changed, whose folder the next snapshot must stamp
    ///   afresh; `nil` for a change that may touch any folder.
    @discardableResult
    func changingRecords<T, E: Error>(name: String?, _ body: () throws(E) -> T) throws(E) -> T? {
        let admitted = snapshotGate.withLock { gate -> Bool in
            guard !gate.isClosing else { return false }
            if gate.isOnDisk { withdrawSnapshot(&gate) }
            if let name {
                if let shard = layout.shard(for: name) { gate.changedFolders.insert(shard) }
            } else {
                gate.carriedStamps = [:]
            }
            gate.changesInFlight += 1
            return true
        }
        guard admitted else { return nil }
        defer { snapshotGate.withLock { $0.changesInFlight -= 1 } }
        return try body()
    }

    /// Refuses new changes and waits for those under way (see ``changingRecords(_:)``).
    func finishChanges() {
        snapshotGate.withLock { $0.isClosing = true }
        // Changes are short (one record's write or removal); a close is rare.
        while snapshotGate.withLock({ $0.changesInFlight }) > 0 { usleep(500) }
    }
}
