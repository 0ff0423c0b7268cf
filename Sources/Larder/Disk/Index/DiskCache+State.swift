import Dispatch

extension DiskCache {
    /// Everything the cache's lock guards, and the bookkeeping that goes with each change.
    ///
    /// Functions that need the lock take `inout State`, which can only be had inside
    /// `state.withLock`, so the compiler proves the lock is held. Changes go through the mutating
    /// methods, which keep the build's deferrals (`touchedDuringBuild`), the unreadable files
    /// (`suspects`) and the write-back queue (`dirtyQueue`) in step with the index.
    struct State: ~Copyable {
        private(set) var index = DiskIndex()
        private(set) var isIndexReady = false
        /// Whether the build listed every folder, so that a name the index lacks has no file.
        private(set) var isIndexAuthoritative = false
        /// Files the build found corrupt or could not read: not indexed, but not known absent.
        private(set) var suspects: Set<String> = []
        /// Names stored, removed or read while the background build ran; the build defers to them.
        private var touchedDuringBuild: Set<ExactName> = []
        /// How many shard folders the index build left unlisted, their snapshot stamps unchanged
        /// (see ``FolderStamps``): for tests and diagnostics.
        var foldersVouchedFor = 0
        /// Whether the index build read any record's header (files its image did not hold, or
        /// every file without an image).
        var buildReadHeaders = false
        /// The file system's time before the index image the build loaded was written (its folder
        /// stamps' reference); zero without one. A record file whose status last changed before
        /// it is as the image describes it (see `DiskCache.removeVictim`).
        var imageReference = FileTime(seconds: 0, nanoseconds: 0)
        /// Names whose access times became newer in the index than in their header, in order; a
        /// name whose entry is gone or clean again by write-back time is skipped. Kept as a read
        /// carries them (a hashed name as its 32 bytes): the string is built by the write-back,
        /// outside this lock, not by every first read of an entry under it.
        private var dirtyQueue: [RecordName] = []
        /// The counters behind ``DiskCache/statistics``.
        var counters = StatisticsCounters()
        /// The scheduled collection's timer.
        var timer: (any DispatchSourceTimer)?
        /// Whether the index build began, or will never begin (its owner let go of the cache
        /// first).
        var indexBuildIsSettled = false
        /// Whether the owner let go of the cache while its index was being built: the build
        /// stops at its next step, and writes nothing.
        var indexBuildIsAbandoned = false
        /// The volume's size and free space when last asked, for the free-space floor.
        var freeSpace: (checkedAt: Double, volumeSize: Int, available: Int)?
        /// Seconds an expired record stays for stale reads (``DiskCache/staleRetention``): the
        /// options' value, raised by a ``HybridCache`` in front with longer stale windows.
        var staleRetention: Double = 0
        /// The adaptive policy's byte budget (the size limit) once the index is ready; 0 under
        /// LRU, or without a size limit.
        var policyCapacity = 0

        // MARK: Answers

        /// Whether a name the index lacks is known to have no file: the build listed every
        /// folder and no unreadable file is pending under it. Only a writer, which owns its
        /// directory, may rely on it.
        func isKnownAbsent(_ name: String) -> Bool {
            isIndexAuthoritative && !index.contains(name) && !suspects.contains(name)
        }

        /// Whether every key the directory holds is in the index, so a key it lacks has no file.
        var knowsEveryKey: Bool {
            isIndexAuthoritative && index.unmappedCount == 0 && suspects.isEmpty
        }

        // MARK: Changes

        /// Notes a change to `name` while the build runs, so the build does not overwrite it.
        private mutating func noteChanged(_ name: @autoclosure () -> String) {
            if !isIndexReady { touchedDuringBuild.insert(ExactName(name())) }
        }

        /// Drops a name from the index: its file is gone. `known`: the slot an earlier lookup
        /// found for it (checked again, not trusted).
        mutating func forget(_ name: String, slot known: Int32? = nil) {
            if let known, index.slot(known, holds: name) {
                index.removeSlot(known)
            } else {
                index.removeEntry(named: name)
            }
            if !suspects.isEmpty { suspects.remove(name) }
            noteChanged(name)
        }

        /// Records a store that wrote `entry`'s file, with `bytes` of payload.
        mutating func recordStore(_ entry: IndexEntry, bytes: Int) {
            index.setFlags(.headerVerified, true, atSlot: index.upsert(entry))
            noteChanged(entry.name)
            counters.insertions += 1
            counters.bytesWritten += bytes
        }

        /// Replaces an entry whose header changed without a use (a lock count), keeping its place.
        mutating func replaceKeepingPosition(_ entry: IndexEntry) {
            index.replaceKeepingPosition(entry)
            noteChanged(entry.name)
        }

        /// Takes up to `limit` entries the index's expiry order finds expired at `now`, for a
        /// collection, which removes them or queues them again (``queueForExpiry(_:)``).
        mutating func takeExpired(by rule: ExpiryRule, now: Double, limit: Int) -> [IndexEntry] {
            index.takeExpired(by: rule, now: now, limit: limit)
        }

        /// Queues entries a collection took as expired and kept (their headers said otherwise,
        /// or they could not be removed) again in the index's expiry order.
        mutating func queueForExpiry(_ names: [String]) {
            for name in names { index.queueForExpiry(name) }
        }

        /// Corrects the lock count of an entry whose header says otherwise.
        mutating func correctLockCount(of name: String, to lockCount: UInt32) {
            index.setLockCount(name, lockCount)
        }

        /// Records a use of the record `name` (a read or a touch) with the fields its header
        /// vouches for: the entry becomes the most recently used, and its new access times, kept
        /// only here, are queued for write-back once. Its file length is the one the read can
        /// vouch for (see ``RecordContents/vouchedFileSize(previous:)``). `known`: the name's slot
        /// when the caller looked it up already (`.some(nil)`: not in the index).
        mutating func recordUse(
            of name: RecordName, _ use: DiskIndex.Use, vouching vouch: FileSizeVouch, tracksAccess: Bool, slot known: Int32?? = nil
        ) {
            var becameDirty = tracksAccess
            let slot: Int32
            if let known = known ?? index.slot(of: name.string) {
                slot = known
                becameDirty = index.recordUse(
                    slot: slot, use, fileSize: { vouch.fileSize(previous: $0) }, marksAccessDirty: tracksAccess)
            } else {
                slot = index.upsert(
                    IndexEntry(
                        name: name.string, key: use.key, diskSize: use.diskSize, fileSize: vouch.fileSize(previous: 0),
                        updateTime: use.updateTime, lastAccessMs: use.lastAccessMs, ttl: use.ttl, lockCount: use.lockCount,
                        isAccessDirty: tracksAccess))
            }
            index.setFlags(.headerVerified, true, atSlot: slot)
            // Queued once per collection interval, not once per read.
            if becameDirty { dirtyQueue.append(name) }
            noteChanged(name.string)
        }

        /// The index's changes since they were last taken, for a journal commit (``DiskIndex/takeChanges()``).
        mutating func takeIndexChanges() -> DiskIndex.Changes? {
            index.takeChanges()
        }

        /// The index, made the reference of a new base (``DiskIndex/clearChanges()``).
        mutating func indexForNewBase() -> DiskIndex {
            index.clearChanges()
            return index
        }

        /// Forgets the index's changes since they were last taken: what a writer sharing its
        /// folder replayed from the change log is not its own to record.
        mutating func clearIndexChanges() {
            index.clearChanges()
        }

        /// Applies what other writers sharing the folder recorded (`tail`, read past
        /// `follower`'s cursor); when it cannot be replayed, starts the index again from
        /// `rebuild`'s scan of the folder.
        /// - Complexity: O(*c*) for the *c* changes in `tail`; a rebuild reads every header.
        mutating func follow(
            _ tail: FolderChangeLog.Tail, with follower: inout IndexFollower, keyEncoding: KeyEncoding,
            rebuild: () -> (entries: [IndexEntry], suspects: Set<String>, listedEverything: Bool)
        ) -> IndexFollower.Step {
            var scanned: (entries: [IndexEntry], suspects: Set<String>, listedEverything: Bool)?
            let step = follower.apply(tail, to: &index, keyEncoding: keyEncoding) {
                scanned = rebuild()
                return DiskIndex()
            }
            if let scanned {
                // The least recently used first, by their headers' last access.
                let entries = scanned.entries.sorted { $0.lastAccessMs < $1.lastAccessMs }
                restart(entries: entries, suspects: scanned.suspects, listedEverything: scanned.listedEverything)
            } else if case .applied(let touched, _) = step, !suspects.isEmpty {
                for name in touched { suspects.remove(name) }
            }
            return step
        }

        /// Marks an entry's access times as written to its header.
        mutating func markAccessClean(_ name: String) {
            index.setAccessDirty(name, false)
        }

        /// Takes the names queued for write-back; reads that dirty an entry meanwhile queue it again.
        mutating func takeDirtyQueue() -> [RecordName] {
            defer { dirtyQueue = [] }
            return dirtyQueue
        }

        /// Admits the records waiting for the eviction policy and takes its victims, with their
        /// names (see `DiskIndex+Policy.swift`).
        mutating func takePolicyVictims() -> [String] {
            index.admitToPolicy()
            return index.takePolicyVictims().map { index.name(atSlot: $0) }
        }

        /// Queues records the trim could not remove as the policy's victims for admission again.
        mutating func queueForAdmission(_ names: [String]) {
            for name in names { index.queueForAdmission(name) }
        }

        /// Counts a corrupt record removed (a miss too, when a load found it) and drops its name.
        mutating func recordCorruptRemoval(_ name: String, countsAsMiss: Bool) {
            if countsAsMiss { counters.misses += 1 }
            counters.corruptRecordsRemoved += 1
            forget(name)
        }

        /// Counts an eviction (an expired record's also as an expiration) and drops its name.
        mutating func recordEviction(_ name: String, slot: Int32? = nil, reason: EvictionReason) {
            forget(name, slot: slot)
            counters.countEviction(reason)
            if reason == .expired { counters.expirations += 1 }
        }

        /// Starts the index again from what a folder made again holds (`DiskCache+Recovery.swift`):
        /// the records of the deleted folder are gone with it. The counters stay.
        mutating func restart(entries: [IndexEntry], suspects found: Set<String>, listedEverything: Bool) {
            index = DiskIndex()
            index.prependOlder(entries)
            if isIndexReady, policyCapacity > 0 { index.startPolicy(capacity: policyCapacity) }
            suspects = found
            touchedDuringBuild = []
            dirtyQueue = []
            isIndexAuthoritative = listedEverything
            freeSpace = nil
            imageReference = FileTime(seconds: 0, nanoseconds: 0)
        }

        /// Merges what the background build found, deferring to names changed meanwhile, and
        /// marks the index ready.
        /// - Returns: The number of records indexed.
        mutating func finishBuild(entries: [IndexEntry], suspects found: Set<String>, listedEverything: Bool) -> Int {
            let fresh = touchedDuringBuild.isEmpty ? entries : entries.filter { !touchedDuringBuild.contains(ExactName($0.name)) }
            index.prependOlder(fresh)
            return finishBuild(suspects: found, listedEverything: listedEverything)
        }

        /// Merges an index loaded from the snapshot (and reconciled with the folders), deferring
        /// to names changed meanwhile, which stay the most recently used; marks the index ready.
        /// The eviction policy is restored from `policy`, the state the snapshot held, when it
        /// fits the merged index, else started afresh.
        /// - Returns: The number of records indexed.
        /// - Complexity: O(*m*) for the *m* names changed during the build.
        mutating func finishBuild(
            loaded: consuming DiskIndex, policy: StoredPolicy? = nil, suspects found: Set<String>, listedEverything: Bool
        ) -> Int {
            var merged = loaded
            for name in touchedDuringBuild { merged.remove(name.string) }
            index.forEachLeastRecentFirst { entry in
                merged.upsert(entry)
                return true
            }
            index = merged
            return finishBuild(suspects: found, listedEverything: listedEverything, policy: policy)
        }

        private mutating func finishBuild(suspects found: Set<String>, listedEverything: Bool, policy: StoredPolicy? = nil) -> Int {
            suspects = touchedDuringBuild.isEmpty ? found : found.filter { !touchedDuringBuild.contains(ExactName($0)) }
            touchedDuringBuild = []
            isIndexReady = true
            if policyCapacity > 0, !(policy.map { index.restorePolicy($0, capacity: policyCapacity) } ?? false) {
                index.startPolicy(capacity: policyCapacity)
            }
            isIndexAuthoritative = listedEverything
            return index.count
        }
    }

    /// What the index says of a key before a load touches the disk.
    enum IndexLookup {
        case indexed(name: RecordName, fileSize: Int, slot: DiskIndex.SlotMark)
        case absent
        case unknown
    }
}
