import Foundation

extension DiskCache {
    /// Opens (creating it, with its parents, unless read-only) the cache's folder, and checks
    /// that it is safe to write to: owned by the current user and not writable by group or
    /// others (``CacheSharing/group`` accepts another owner and group write).
    ///
    /// A read-only cache skips the ownership check: it writes nothing, and every read beneath
    /// the root is bounded, non-blocking and never follows a link, so a folder that belongs to
    /// someone else can at worst feed it records (which is what reading someone else's cache means).
    /// - Returns: The layout, and a ``FileIO`` rooted at the folder, creating files and folders
    ///   with the modes of ``DiskCacheOptions/sharing``.
    /// - Throws: ``CacheError/Code/notFound`` (read-only, no folder), ``CacheError/Code/unsafeDirectory``,
    ///   ``CacheError/Code/ioFailure``.
    static func openFolder(options: DiskCacheOptions, systemCalls: SystemCalls) throws(CacheError) -> (layout: DiskLayout, io: FileIO) {
        let layout = DiskLayout(root: options.directory.standardizedFileURL.path)
        var io = FileIO(calls: systemCalls)
        io.folderMode = options.sharing.folderMode
        io.fileMode = options.sharing.fileMode
        io.forcesModes = options.sharing == .group
        let rooted: FileIO
        do {
            rooted = try io.rooted(at: layout.root, create: !options.isReadOnly)
        } catch {
            if options.isReadOnly, error == .noSuchFileOrDirectory || error == .notADirectory {
                throw CacheError(.notFound, "the cache directory does not exist or is not a folder", path: layout.root, errno: error.rawValue)
            }
            throw CacheError(.ioFailure, "cannot create or open the cache directory", path: layout.root, errno: error.rawValue)
        }
        guard !options.isReadOnly, let info = rooted.root?.info else { return (layout, rooted) }
        if options.sharing != .group, info.ownerID != ProcessIdentity.effectiveUserID {
            throw CacheError(.unsafeDirectory, "the cache directory belongs to user \(info.ownerID), not to this user; anyone who controls it could read and change what the cache stores (set DiskCacheOptions.sharing to .group for a deliberately shared cache)", path: layout.root)
        }
        let writableByOthers = options.sharing == .group ? info.permissions & 0o002 != 0 : info.isWritableByGroupOrOthers
        if writableByOthers {
            let mode = String(info.permissions, radix: 8)
            throw CacheError(.unsafeDirectory, "the cache directory (mode \(mode)) is writable by \(options.sharing == .group ? "others" : "group or others"), who could read, replace or plant records; chmod it 700 (or set DiskCacheOptions.sharing to .group for a deliberately shared cache)", path: layout.root)
        }
        return (layout, rooted)
    }

    /// Reads (or writes, for a new directory) the metadata, and refuses a mismatched key encoding.
    static func checkMetadata(layout: DiskLayout, options: DiskCacheOptions, io: FileIO) throws(CacheError) {
        let requested = options.keyEncoding.description
        let bytes: [UInt8]?
        do {
            bytes = try io.readFile(layout.metadataPath, limit: 64 * 1024)
        } catch where error == .noSuchFileOrDirectory {
            bytes = nil
        } catch where error == .tooManySymbolicLinks || error == .notARegularFile || error == .fileTooLarge {
            throw CacheError(.unsafeDirectory, "the cache's metadata is a link, a FIFO, a folder or far too large, not the small file Larder writes", path: layout.metadataPath, errno: error.rawValue)
        } catch {
            throw CacheError(.ioFailure, "cannot read the cache's metadata", path: layout.metadataPath, errno: error.rawValue)
        }
        if let bytes {
            guard let metadata = try? JSONDecoder().decode(DirectoryMetadata.self, from: Data(bytes)) else {
                throw CacheError(.unsupportedFormat, "the cache's metadata file is not valid", path: layout.metadataPath)
            }
            guard metadata.format <= DirectoryMetadata.currentFormat else {
                throw CacheError(.unsupportedFormat, "the directory has format \(metadata.format); this Larder reads up to \(DirectoryMetadata.currentFormat)", path: layout.metadataPath)
            }
            guard metadata.keyEncoding == requested else {
                throw CacheError(.keyEncodingMismatch, "the directory was created with key encoding '\(metadata.keyEncoding)', not '\(requested)'", path: layout.root)
            }
            return
        }
        // No metadata: a new directory, or SPTPersistentCache's records (which use verbatim keys).
        let entries: [(name: String, isDirectory: Bool?)]
        do { entries = try io.listDirectory(layout.root) } catch {
            throw CacheError(.ioFailure, "cannot list the cache directory", path: layout.root, errno: error.rawValue)
        }
        let holdsRecords = entries.contains { !DiskLayout.isReserved($0.name) }
        if holdsRecords, case .verbatim = options.keyEncoding {} else if holdsRecords {
            throw CacheError(.keyEncodingMismatch, "the directory holds records without Larder metadata, which read as SPTPersistentCache records with verbatim keys, not '\(requested)'", path: layout.root)
        }
        guard !options.isReadOnly else { return }
        let metadata = DirectoryMetadata(keyEncoding: requested)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            let data = try encoder.encode(metadata)
            try io.writeFileAtomically(layout.metadataPath, Array(data))
        } catch let error as Errno {
            throw CacheError(.ioFailure, "cannot write the cache's metadata", path: layout.metadataPath, errno: error.rawValue)
        } catch {
            throw CacheError(.ioFailure, "cannot encode the cache's metadata", path: layout.metadataPath)
        }
    }

    /// Creates the temporary folder and removes what a crashed writer left in it, and the
    /// temporary files of metadata and snapshot writes it left at the root.
    static func prepareTemporaryFolder(layout: DiskLayout, io: FileIO) throws(CacheError) {
        do {
            // A link, FIFO or file planted where the folder goes is removed (a link, never its
            // target), so that temporary files cannot be written through it.
            if let info = try io.info(atPath: layout.temporaryFolder), info.kind != .directory {
                try io.unlink(layout.temporaryFolder)
            }
            try io.mkdir(layout.temporaryFolder)
            // `unlink` removes files and links only: a folder in there stays, whatever it holds.
            for entry in try io.listDirectory(layout.temporaryFolder) {
                _ = try? io.unlink(layout.temporaryFolder + "/" + entry.name)
            }
            // `FileIO.writeFileAtomically` writes `<path>.tmp-<pid>-<n>` beside its target; the
            // caller holds the directory lock, so no live writer owns one.
            for entry in try io.listDirectory(layout.root) where entry.isDirectory != true
                && (entry.name.hasPrefix(DiskLayout.metadataName + ".tmp-") || entry.name.hasPrefix(DiskLayout.snapshotName + ".tmp-")) {
                _ = try? io.unlink(layout.root + "/" + entry.name)
            }
        } catch {
            throw CacheError(.ioFailure, "cannot prepare the temporary folder", path: layout.temporaryFolder, errno: error.rawValue)
        }
    }

    /// Blocks until the background index build has finished.
    func waitForIndex() {
        indexBuild.wait()
    }

    /// Whether the index holds every record yet.
    public var isIndexReady: Bool { state.withLock { $0.isIndexReady } }

    /// Builds the index: from the snapshot, reconciled with a listing of the folders, or from
    /// every record's header when there is no snapshot. Runs on ``ioQueue`` at open.
    func buildIndex() {
        var events: [CacheEvent] = []
        var snapshot: [IndexEntry]?
        if let bytes = try? io.readFile(layout.snapshotPath, limit: 1 << 31) {
            snapshot = IndexSnapshot.decode(bytes, keyEncoding: options.keyEncoding)
            // A snapshot is only trusted once: a crash from now on must not leave a stale one.
            if !options.isReadOnly { _ = try? io.unlink(layout.snapshotPath) }
        }
        let (names, listedEverything) = listRecordNames(events: &events)
        var entries: [IndexEntry] = []
        entries.reserveCapacity(names.count)
        var unknown: [String] = []
        if let snapshot {
            var onDisk = Set(names)
            for entry in snapshot where onDisk.remove(entry.name) != nil {
                entries.append(entry)
            }
            unknown = Array(onDisk)
        } else {
            unknown = names
        }
        var scanned: [IndexEntry] = []
        var suspects: Set<String> = []
        for name in unknown {
            guard case .record(let contents)? = try? records.read(layout.path(for: name), readPayload: false) else {
                // Corrupt or unreadable: not indexed, but a load must still find it (to report
                // and remove it), so it is not answered as a miss from the index.
                suspects.insert(name)
                continue
            }
            let header = contents.header
            scanned.append(IndexEntry(
                name: name, key: contents.storedKey ?? (options.keyEncoding.storesKey ? nil : name),
                // A header scan does not vouch for the length: the first load checks it for holes.
                diskSize: diskSize(contents.fileSize), fileSize: 0, updateTime: header.updateTimeSec,
                lastAccessMs: header.lastAccessMilliseconds ?? header.updateTimeSec &* 1000,
                ttl: header.ttl, lockCount: header.refCount))
        }
        if snapshot == nil {
            entries = scanned.sorted { $0.lastAccessMs < $1.lastAccessMs }
        } else if !scanned.isEmpty {
            entries = (entries + scanned).sorted { $0.lastAccessMs < $1.lastAccessMs }
        }
        let count = state.withLock { $0.finishBuild(entries: entries, suspects: suspects, listedEverything: listedEverything) }
        events.append(.indexReady(recordCount: count))
        if !options.isReadOnly, !isClosed.load(ordering: .acquiring), isOverLimits(effectiveSizeLimit(forceRefresh: true)) {
            // Reopened over its limits (smaller limits, or files added behind its back): expired
            // records go first, as in a collection, before any live one.
            var pass = CollectionPass()
            collectionGate.withLock { _ in
                removeExpired(in: &pass)
                prune(sizeLimit: effectiveSizeLimit(forceRefresh: false), countLimit: options.countLimit, excluding: nil, reason: nil, in: &pass)
            }
            events += pass.events
        }
        emit(events)
    }

    /// The file names of every record on disk (``DiskLayout/recordNames(io:)``), and whether the
    /// list is complete; an unreadable root is reported as an event and reads as empty, incomplete.
    func listRecordNames(events: inout [CacheEvent]) -> (names: [String], isComplete: Bool) {
        do {
            return try layout.recordNames(io: io)
        } catch {
            events.append(.ioError(operation: "list", path: layout.root, errno: error.rawValue))
            return ([], false)
        }
    }

    /// Writes access times held only by the index back into their headers, a batch at a time.
    /// - Returns: Events for headers that could not be written.
    func writeBackAccessTimes() -> [CacheEvent] {
        guard !options.isReadOnly else { return [] }
        var events: [CacheEvent] = []
        while true {
            // Take the whole queue; reads that dirty an entry meanwhile queue it again.
            let queued = state.withLock { $0.takeDirtyQueue() }
            if queued.isEmpty { break }
            for name in queued {
                let path = layout.path(for: name)
                withKeyLock(name) {
                    guard let entry = state.withLock({ $0.index[name] }), entry.isAccessDirty else { return }
                    defer { state.withLock { $0.markAccessClean(name) } }
                    guard case .record(let contents)? = try? records.read(path, readPayload: false) else { return }
                    var header = contents.header
                    _mergeAccessTimes(into: &header, from: entry)
                    guard header != contents.header else { return }
                    do throws(Errno) {
                        _ = try records.rewriteHeader(header, at: path, sync: false)
                    } catch {
                        events.append(.ioError(operation: "write-back", path: path, errno: error.rawValue))
                    }
                }
            }
        }
        return events
    }

    /// Writes the index snapshot atomically, unless a change to the records is under way (then
    /// the next collection or ``close()`` writes it).
    func writeSnapshot() -> [CacheEvent] {
        guard !options.isReadOnly else { return [] }
        return snapshotGate.withLock { gate -> [CacheEvent] in
            // Changes register under this lock before they touch a record, so with none in
            // flight the index holds every change that reached the disk.
            guard gate.changesInFlight == 0 else { return [] }
            let entries: [IndexEntry]? = state.withLock { s in s.isIndexReady ? s.index.entriesLeastRecentFirst : nil }
            guard let entries else { return [] }
            do throws(Errno) {
                try io.writeFileAtomically(layout.snapshotPath, IndexSnapshot.encode(entries))
                gate.isOnDisk = true
                return []
            } catch {
                return [.ioError(operation: "snapshot", path: layout.snapshotPath, errno: error.rawValue)]
            }
        }
    }

    /// Runs a change to records (a write, a header rewrite, a removal) and the index update that
    /// goes with it. The snapshot on disk is withdrawn before the change, so that a crash from
    /// here on cannot leave a snapshot that misses it; it costs one `unlink` per collection.
    func changingRecords<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        snapshotGate.withLock { gate in
            if gate.isOnDisk {
                _ = try? io.unlink(layout.snapshotPath)
                gate.isOnDisk = false
            }
            gate.changesInFlight += 1
        }
        defer { snapshotGate.withLock { $0.changesInFlight -= 1 } }
        return try body()
    }

    /// Flushes access times and the index snapshot, stops scheduled collection, and releases the
    /// directory. Later calls throw ``CacheError/Code/closed``. Closing twice is harmless; the
    /// cache also closes when it goes away.
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
        var events: [CacheEvent] = []
        collectionGate.withLock { _ in
            events += writeBackAccessTimes()
            events += writeSnapshot()
        }
        directoryLock?.release()
        emit(events)
    }
}
