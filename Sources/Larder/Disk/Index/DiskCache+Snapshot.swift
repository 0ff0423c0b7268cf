import Foundation

// The index image on disk: a base (`.larder-index`, ``IndexSnapshot``) and a journal of the
// changes since (`.larder-journal`, ``IndexJournal``). A collection appends a commit to the
// journal; a flush and a close write a new base (so does a background compaction, which a
// collection schedules once the journal outgrows a quarter of the base: `DiskCache+Compaction`); before any change to a record the image is withdrawn, by appending an
// `open` record, so that the image on disk is always exact or absent.
extension DiskCache {
    /// Whether the image on disk may read as exact, what this cache knows of its base and
    /// journal, and how many changes to records are under way; guarded by ``snapshotGate``.
    struct SnapshotState {
        /// Whether the image on disk may read as exact, so the next change must withdraw it
        /// first. A writer starts with `true`: the image its last close wrote stays until the
        /// background build has read it, and a store made meanwhile must not leave it behind
        /// for a crash to trust (the crash-consistency test under load checks it).
        var isOnDisk: Bool
        var changesInFlight = 0
        /// Whether the base was unlinked but the root not yet synced (``Durability/fsync``).
        var removalIsUnsynced = false
        /// Whether ``close()`` has begun: no change starts any more.
        var isClosing = false
        /// Shard folder stamps that still vouch for the index (not racy): those the open found
        /// unchanged, then those the last base recorded. The next base records them again for
        /// the folders the cache has not changed since, rather than what `stat` says then, so
        /// that a file another program adds to such a folder while the cache is open shows at
        /// the next open.
        var carriedStamps: [String: FolderStamp] = [:]
        /// Shard folders the cache changed since ``carriedStamps`` were taken (a record of
        /// theirs stored, replaced or removed): the next base stamps them as they are then.
        var changedFolders: Set<String> = []
        /// The epoch of the base on disk that the index extends: at the last commit (or at
        /// open) the index was what the base and the journal say, and the index has tracked
        /// its changes since (``DiskIndex/takeChanges()``). `nil` when there is no such base: the
        /// next image is a whole base, and a withdrawal unlinks the base.
        var epoch: UInt64?
        /// The base's length in bytes, which bounds the journal's.
        var baseLength = 0
        /// The journal's length in bytes as this cache wrote or read it (0 for none).
        var journalLength = 0
        /// Whether the journal's entry in the root is known durable (the root synced since the
        /// journal was created), so that syncing an appended record suffices (``Durability/fsync``).
        var journalIsDurable = false

        /// Whether a background compaction is scheduled and has not started yet.
        var isCompactionScheduled = false
        /// Where background compactions run: `nil` for the cache's utility queue; tests put
        /// them where they choose. Called under ``snapshotGate``: it must not run the work
        /// before it returns.
        var compactionRunner: (@Sendable (@escaping @Sendable () -> Void) -> Void)?

        /// The journal's length past which a collection schedules a background compaction (a
        /// new base): a quarter of the base, so that loading both costs about 1.25 times the
        /// base alone.
        var journalBound: Int { max(journalBoundFloor, baseLength / 4) }
        /// The least ``journalBound``: 64 KiB, so that a small cache does not compact at every
        /// collection; the power-loss tests lower it to reach compactions in a short run.
        var journalBoundFloor = 64 << 10

        /// The most the journal may hold: past it, a collection writes the new base itself, for
        /// when background compactions could not run (a change was under way each time).
        var journalLimit: Int { 2 * journalBound }
    }

    /// What became of an attempt to write the image.
    enum SnapshotWrite {
        /// The image on disk holds the index as it was.
        case written
        /// Not written: a change to records was under way, or the index was not complete yet.
        case skipped
        /// The write failed; the event says where and why.
        case failed(CacheEvent)
    }

    /// Brings the image on disk up to the index, unless a change to the records is under way
    /// (then the next collection, `flush()` or ``close()`` does): after a collection, by
    /// appending a commit to the journal; with `compacting` (a close), by writing a new base.
    func writeSnapshot(compacting: Bool = false) -> [CacheEvent] {
        if case .failed(let event) = writeSnapshot(sync: false, compacting: compacting) { return [event] }
        return []
    }

    /// Brings the image on disk up to the index, unless a change to the records is under way or
    /// the index is not complete: by appending a commit to the journal (and scheduling a
    /// background compaction once the journal outgrows ``SnapshotState/journalBound``), or, with
    /// `compacting`, when the journal would outgrow ``SnapshotState/journalLimit``, or when the
    /// index's changes cannot be replayed (no base of this cache's, an order change), by writing
    /// a new base atomically (a temporary file, then a rename) and removing the journal.
    /// - Parameters:
    ///   - sync: Whether to `fsync` a new base and the root folder once it is in place, so that
    ///     it survives a power loss (`flush()` under ``Durability/fsync``).
    ///   - compacting: Whether to write a new base whatever the journal holds (`flush()`, `close()`).
    func writeSnapshot(sync: Bool, compacting: Bool = true) -> SnapshotWrite {
        guard !options.isReadOnly else { return .skipped }
        // A writer sharing its folder writes the shared image, under the change lock, at a flush
        // or a close; a collection's commit is the change log's records themselves.
        if sharedFolder != nil { return compacting ? writeSharedImage(sync: sync) : .skipped }
        return snapshotGate.withLock { gate -> SnapshotWrite in
            // Changes register under this lock before they touch a record, so with none in
            // flight the index holds every change that reached the disk.
            guard gate.changesInFlight == 0 else { return .skipped }
            if !compacting, let epoch = gate.epoch, gate.journalLength <= gate.journalLimit {
                let taken: DiskIndex.Changes?? = state.withLock { s in s.isIndexReady ? .some(s.takeIndexChanges()) : nil }
                guard let taken else { return .skipped }
                if let changes = taken {
                    if changes.isEmpty && gate.isOnDisk { return .written }
                    let record = IndexJournal.commitRecord(epoch: epoch, changes: changes)
                    if gate.journalLength + record.count <= gate.journalLimit {
                        if appendToJournal(record, sealed: true, sync: false, &gate) {
                            gate.isOnDisk = true
                            if gate.journalLength > gate.journalBound { scheduleCompaction(&gate) }
                            return .written
                        }
                        // A record cut short leaves the image absent until the next base.
                        gate.epoch = nil
                    }
                }
            }
            return writeBase(sync: sync, &gate)
        }
    }

    /// The shard folders' stamps, for a base whose temporary file was created at
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

    /// Writes the index as a new base of a fresh epoch, then removes the journal (its records
    /// are of the old epoch, which readers skip, so a crash between the two leaves the new
    /// base exact). When the journal cannot be removed, the base stays without an epoch this
    /// cache extends: the next change unlinks it.
    private func writeBase(sync: Bool, _ gate: inout SnapshotState) -> SnapshotWrite {
        // A copy that shares the index's storage (encoded outside the cache's lock; a change
        // meanwhile copies the storage it changes), and the reference for the next commit.
        let index: DiskIndex? = state.withLock { s in s.isIndexReady ? s.indexForNewBase() : nil }
        guard let index else { return .skipped }
        let epoch = UInt64.random(in: 1 ... .max)
        var written = FolderStamps.none
        var length = 0
        do throws(Errno) {
            try io.writeFileAtomically(layout.snapshotPath) { created in
                written = folderStamps(reference: created.modification, carrying: gate)
                let bytes = IndexSnapshot.encode(index, epoch: epoch, stamps: written)
                length = bytes.count
                return bytes
            }
        } catch {
            // The changes just cleared are in no image: the next one is a whole base again.
            gate.epoch = nil
            return .failed(.ioError(operation: "snapshot", path: layout.snapshotPath, errno: error.rawValue))
        }
        // Every change is in this base: its stamps vouch from now on (the racy ones not).
        gate.carriedStamps = written.byFolder.filter { $0.value.modification < written.reference }
        gate.changedFolders = []
        gate.isOnDisk = true
        gate.baseLength = length
        gate.epoch = nil
        do throws(Errno) {
            if sync {
                // After the rename: the file's bytes, then the folder entry that names it.
                let fd = try io.openForReading(layout.snapshotPath).fd
                defer { io.close(fd) }
                try io.fsync(fd)
            }
            // The new name before the journal goes (``Durability/fsync``): else a power loss could
            // keep the removal and not the rename, and the old base alone, older than its
            // journal's commits, would read as exact.
            if sync || options.durability == .fsync { try records.syncFolder(layout.root) }
        } catch {
            return .failed(.ioError(operation: "snapshot", path: layout.snapshotPath, errno: error.rawValue))
        }
        // With the journal left, the next change unlinks the base (an old journal may end in a
        // torn record, after which no record would be read).
        guard (try? io.unlink(layout.journalPath)) != nil else { return .written }
        gate.epoch = epoch
        gate.journalLength = 0
        gate.journalIsDurable = false
        return .written
    }

    /// Appends a record to the journal (created when missing) at the length this cache knows
    /// it has: the file is first extended to its new length (`ftruncate`; with `sealed`, a
    /// commit's seal included), then the record written there. A length change is metadata,
    /// which a journaling file system keeps in order with renames and removals; appended data
    /// is not (ext4 allocates it late). So a crash that keeps a change made after an `open`
    /// record keeps the journal's new length, and the record reads whole or as zeros, never as
    /// the commit before it ending the file; and a commit whose seal survived follows every
    /// change it describes. Under `sync`, the journal is synced, and the root too while the
    /// journal's entry in it is not known durable.
    /// - Returns: Whether the record is in place; `false` when the journal is not a regular
    ///   file, holds bytes this cache did not account for (a record it failed to finish), or a
    ///   call failed.
    private func appendToJournal(_ record: [UInt8], sealed: Bool, sync: Bool, _ gate: inout SnapshotState) -> Bool {
        do throws(Errno) {
            let fd = try io.open(layout.journalPath, O_WRONLY | O_CREAT)
            defer { io.close(fd) }
            let info = try io.info(fd)
            guard info.kind == .regular, info.size == gate.journalLength else { return false }
            let length = gate.journalLength + record.count + (sealed ? IndexJournal.sealSize : 0)
            try io.ftruncate(fd, length)
            try record.withUnsafeBytes { bytes in
                Result { () throws(Errno) in try io.pwrite(fd, bytes, at: gate.journalLength) }
            }.get()
            gate.journalLength = length
            if sync {
                try io.fsync(fd)
                if !gate.journalIsDurable {
                    try io.syncFolder(layout.root)
                    gate.journalIsDurable = true
                }
            }
            return true
        } catch {
            return false
        }
    }

    /// Reads the image on disk for the index build: the base with its journal's commits
    /// applied, or `nil` when there is none or it is not exact (``IndexJournal/load(base:journal:keyEncoding:)``).
    /// A writer then withdraws it (an image is trusted once: a crash from here on must not
    /// leave a stale one), keeping the epoch of an exact one, so that its next collection only
    /// appends the changes since.
    /// - Returns: The image and the shard folder stamps its base recorded.
    func loadIndexImage() -> (image: IndexJournal.Image, stamps: FolderStamps)? {
        guard let base = try? io.readFile(layout.snapshotPath, limit: 1 << 31) else { return nil }
        let journal = try? io.readFile(layout.journalPath, limit: 1 << 31)
        let image = IndexJournal.load(base: base, journal: journal, keyEncoding: options.keyEncoding)
        if !options.isReadOnly {
            snapshotGate.withLock { gate in
                // A store that came first withdrew the image by unlinking the base: it could not
                // append an `open`, not knowing the base's epoch nor the journal's length, and
                // the image read here would then hold its change's absence as exact. Keeping the
                // base would take reading both in `init`, and reading the journal only up to that
                // length here (docs/FORMAT.md).
                // A close under way (see `finishChanges()`) owns what is on disk from here.
                guard gate.isOnDisk, !gate.isClosing else { return }
                // A writer sharing the folder withdraws the image by unlinking its base, which
                // another such writer's withdrawal cannot race with, as two appends could.
                if let image, sharedFolder == nil {
                    gate.epoch = image.epoch
                    gate.baseLength = base.count
                    gate.journalLength = journal?.count ?? 0
                }
                withdrawSnapshot(&gate)
            }
        }
        return image.map { ($0, IndexSnapshot.decodeStamps(base) ?? .none) }
    }

    /// Withdraws the image on disk before a change that would make it stale: appends an `open`
    /// record to the journal of the base this cache extends, or, when there is none or the
    /// append fails, unlinks the base. Under ``Durability/fsync`` the withdrawal is made
    /// durable (the journal synced, or the root after the unlink) before the change: else a
    /// power loss could keep the image and the synced change both, and the next open would
    /// trust sizes and lock counts that the files no longer have (the power-loss tests check
    /// it). One sync per image written, so at most one per collection. When the withdrawal
    /// fails, the image counts as still on disk, and the next change tries again.
    func withdrawSnapshot(_ gate: inout SnapshotState) {
        if let epoch = gate.epoch {
            if appendToJournal(IndexJournal.openRecord(epoch: epoch), sealed: false, sync: options.durability == .fsync, &gate) {
                gate.isOnDisk = false
                return
            }
            gate.epoch = nil
        }
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

    /// Forgets the image of a folder made again (`DiskCache+Recovery.swift`): none is on disk,
    /// and the next is a whole base.
    func forgetIndexImage() {
        snapshotGate.withLock { gate in
            gate.isOnDisk = false
            gate.epoch = nil
            gate.journalLength = 0
            gate.journalIsDurable = false
            gate.carriedStamps = [:]
        }
    }

    /// Runs a change to records (a write, a header rewrite, a removal) and the index update that
    /// goes with it. The image on disk is withdrawn before the change, so that a crash from
    /// here on cannot leave an image that misses it; it costs one journal append per collection.
    /// - Returns: What `body` returned, or `nil`, without running it, once ``close()`` has
    ///   begun: `close()` waits for the changes under way and releases the directory lock after
    ///   them, and none may start behind it (a new cache could own the folder by then).
    /// - Parameter name: The record file changed, whose folder the next base must stamp
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

    /// Refuses new changes and waits for those under way (see ``changingRecords(name:_:)``).
    func finishChanges() {
        snapshotGate.withLock { $0.isClosing = true }
        // Changes are short (one record's write or removal); a close is rare.
        while snapshotGate.withLock({ $0.changesInFlight }) > 0 { usleep(500) }
    }
}
