import Foundation

// The in-memory index: built in the background at open, and the access times it holds written
// back to the headers.
extension DiskCache {
    /// Blocks until the background index build has finished.
    func waitForIndex() {
        indexBuild.wait()
    }

    /// Whether the index holds every record yet.
    public var isIndexReady: Bool { state.withLock { $0.isIndexReady } }

    /// Builds the index: from the snapshot, reconciled with a listing of the folders whose
    /// stamps changed since it was written (``FolderStamps``), or from every record's header
    /// when there is no snapshot. Runs on ``ioQueue`` at open.
    func buildIndex() {
        var events: [CacheEvent] = []
        // The base and its journal; the folders of the names the journal's commits changed are
        // listed whatever their stamps say (the base's facts about them are stale).
        var snapshot: DiskIndex?
        var stamps = FolderStamps.none
        var mustList: Set<String> = []
        var storedPolicy: StoredPolicy?
        // A writer sharing its folder starts from the shared image, then replays the change log
        // from the image's place (`DiskCache+SharedImage.swift`).
        let shared = sharedFolder == nil ? nil : loadSharedImage()
        if let shared {
            snapshot = shared.image.index
            storedPolicy = shared.image.policy
            stamps = shared.stamps
        } else if let loaded = loadIndexImage() {
            snapshot = loaded.image.index
            storedPolicy = loaded.image.policy
            stamps = loaded.stamps
            mustList = shardFolders(of: loaded.image.touched)
        }
        if isAbandoned { return }
        // Taken, not copied: the image is released above, so the index is changed in place.
        var reconciled = reconcile(consume snapshot, stamps: stamps, mustList: mustList, events: &events)
        if isAbandoned { return }
        if !options.isReadOnly {
            // Folders vouched for: the next base stamps them as they were, unless changed since.
            let vouched = stamps.byFolder.filter { reconciled.vouchedFolders.contains($0.key) }
            snapshotGate.withLock { $0.carriedStamps.merge(vouched) { current, _ in current } }
        }
        // Headers read: the least recently used first, by their last access.
        if reconciled.scannedAny { reconciled.index.sortByLastAccess() }
        let count = state.withLock {
            $0.foldersVouchedFor = reconciled.vouchedFolders.count
            $0.buildReadHeaders = reconciled.scannedAny
            $0.imageReference = stamps.reference
            return $0.finishBuild(
                loaded: reconciled.index, policy: storedPolicy, suspects: reconciled.suspects,
                listedEverything: reconciled.listedEverything)
        }
        if let shared { followFolder(fromImageAt: shared.place) }
        events.append(.indexReady(recordCount: count))
        if !options.isReadOnly, !isClosed.isSet, hasPolicyWork || isOverLimits(effectiveSizeLimit(forceRefresh: true)) {
            // Reopened over its limits (smaller limits, or files added behind its back): expired
            // records go first, as in a collection, before any live one.
            var pass = CollectionPass()
            collectionGate.withLock { _ in
                // The close sets the flag before it takes the collection gate and releases the
                // directory after: checked again under the gate, no trim runs after the release.
                guard !isClosed.isSet else { return }
                removeExpired(in: &pass)
                prune(
                    sizeLimit: effectiveSizeLimit(forceRefresh: false), countLimit: options.countLimit, excluding: nil, reason: nil,
                    in: &pass)
            }
            events += pass.events
        }
        emit(events)
    }

    /// Whether the owner let go of the cache while the index was being built (see
    /// `State.indexBuildIsAbandoned`): the build stops, its index left incomplete.
    private var isAbandoned: Bool {
        state.withLock { $0.indexBuildIsAbandoned }
    }

    /// Index entries for the records `names` from their headers (in no order), and the names
    /// whose files are corrupt or unreadable: not indexed, but a load must still find them (to
    /// report and remove them), so they are not answered as misses from the index. Files that
    /// are not records at all (``RecordReadResult/foreign``) are neither: the cache leaves them.
    func scanHeaders(_ names: [String]) -> (entries: [IndexEntry], suspects: Set<String>) {
        var scanned: [IndexEntry] = []
        var suspects: Set<String> = []
        for name in names {
            let read = try? records.read(layout.path(for: name), readPayload: false)
            guard case .record(let contents)? = read else {
                switch read {
                case .foreign?, .missing?: break
                default: suspects.insert(name)
                }
                continue
            }
            let header = contents.header
            scanned.append(
                IndexEntry(
                    name: name, key: contents.storedKey ?? (options.keyEncoding.storesKey ? nil : name),
                    // A header scan does not vouch for the length: the first load checks it for holes.
                    diskSize: diskSize(contents.fileSize), fileSize: 0, updateTime: header.updateTimeSec,
                    lastAccessMs: header.lastAccessMilliseconds ?? header.updateTimeSec &* 1000,
                    ttl: header.ttl, lockCount: header.refCount))
        }
        return (scanned, suspects)
    }

    /// The file names of every record on disk (``DiskLayout/recordNames(io:)``), and whether the
    /// list is complete; an unreadable root is reported as an event and reads as empty, incomplete.
    func listRecordNames(events: inout [CacheEvent]) -> (names: [String], isComplete: Bool) {
        var names: [String] = []
        let isComplete = listRecordNames(events: &events) { batch, _ in names += batch }
        return (names, isComplete)
    }

    /// ``listRecordNames(events:)`` a folder at a time (``DiskLayout/recordNames(io:_:)``).
    /// - Returns: Whether the list is complete.
    func listRecordNames(
        events: inout [CacheEvent], skipping skip: (_ shard: String) -> Bool = { _ in false },
        _ body: (_ names: [String], _ folders: Int) -> Void
    ) -> Bool {
        do {
            return try layout.recordNames(io: io, skipping: skip, body)
        } catch {
            events.append(.ioError(operation: "list", path: layout.root, errno: error.rawValue))
            return false
        }
    }

    /// The most headers a writer sharing its folder writes back in one hold of the change lock.
    /// Every other writer's change waits for that hold: a header's rewrite (open, read, write,
    /// close of a file the page cache holds) costs about as much as the lock's own work (its
    /// `flock`, the check of the log's inode, the change mark's read and writes, the log's
    /// header), so 64 make the lock a small share of the write-back while a hold lasts about as
    /// long as a few stores of small records.
    static let writeBackBatch = 64
    /// ``writeBackBatch`` when each header is synced (``Durability/fsync``): a sync waits for the
    /// device, and the others wait for the lock meanwhile.
    static let syncedWriteBackBatch = 8

    /// Writes access times held only by the index back into their headers, a batch at a time.
    /// - Parameter sync: Whether to `fsync` each header written (`flush()` under ``Durability/fsync``).
    /// - Returns: Events for headers that could not be written.
    func writeBackAccessTimes(sync: Bool = false) -> [CacheEvent] {
        guard !options.isReadOnly else { return [] }
        var events: [CacheEvent] = []
        while true {
            // Take the whole queue; reads that dirty an entry meanwhile queue it again.
            let queued = state.withLock { $0.takeDirtyQueue() }
            if queued.isEmpty { break }
            if sharedFolder == nil {
                for name in queued { withKeyLock(name.string) { _writeBackAccessTime(of: name.string, sync: sync, events: &events) } }
            } else {
                writeBackSharingFolder(queued, sync: sync, events: &events)
            }
        }
        return events
    }

    /// The write-back of a writer sharing its folder: under the change lock, since another
    /// writer's store may replace a file between the header's read and its rewrite, taken once
    /// for a batch of records (``writeBackBatch``) instead of once for each.
    ///
    /// Lock order: every change takes the record's key lock, then ``SharedFolder/following`` and
    /// the change lock (``_sharingChange(_:)``), and a read holding its key lock may start one (an
    /// expired or corrupt record removed). A batch holds the latter two across many records, so
    /// it must not wait for a key lock inside them: it takes each record's key lock only when
    /// it is free (``withKeyLockIfAvailable(_:_:)``), and a record whose key lock is held is
    /// written after the batch, the way a single change is (key lock, then change lock).
    private func writeBackSharingFolder(_ queued: [RecordName], sync: Bool, events: inout [CacheEvent]) {
        let batch = sync ? Self.syncedWriteBackBatch : Self.writeBackBatch
        var busy: [String] = []
        var start = queued.startIndex
        while start < queued.endIndex {
            let end = min(start + batch, queued.endIndex)
            _sharingChange { () -> Void in
                for queuedName in queued[start ..< end] {
                    let name = queuedName.string
                    let written: Void? = withKeyLockIfAvailable(name) { _writeBackAccessTime(of: name, sync: sync, events: &events) }
                    if written == nil { busy.append(name) }
                }
            }
            start = end
        }
        for name in busy {
            withKeyLock(name) { _sharingChange { _writeBackAccessTime(of: name, sync: sync, events: &events) } }
        }
    }

    /// Writes the access times the index holds for `name` into its header, when they are later
    /// than the header's; a header that cannot be written adds an event to `events`. Expects the
    /// key lock of `name` held, and for a writer sharing its folder the change lock too: the
    /// entry is read under it, after the other writers' changes were replayed, so a record
    /// another writer replaced has a new entry, with no access time to write over its header.
    private func _writeBackAccessTime(of name: String, sync: Bool, events: inout [CacheEvent]) {
        guard let entry = state.withLock({ $0.index[name] }), entry.isAccessDirty else { return }
        defer { state.withLock { $0.markAccessClean(name) } }
        let path = layout.path(for: name)
        guard case .record(let contents)? = try? records.read(path, readPayload: false) else { return }
        var header = contents.header
        _mergeAccessTimes(into: &header, from: entry)
        guard header != contents.header else { return }
        do throws(Errno) {
            _ = try records.rewriteHeader(header, at: path, sync: sync)
        } catch {
            events.append(.ioError(operation: "write-back", path: path, errno: error.rawValue))
        }
    }
}
