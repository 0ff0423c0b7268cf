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

    /// Builds the index: from the snapshot, reconciled with a listing of the folders, or from
    /// every record's header when there is no snapshot. Runs on ``ioQueue`` at open.
    func buildIndex() {
        var events: [CacheEvent] = []
        // The base and its journal (`image.touched`: the names whose facts the commits changed).
        let image = loadIndexImage()
        let snapshot = image?.index
        // Listed a folder at a time, so that no list of every name is held: with a snapshot, each
        // name is checked off against it; without, each folder's headers are read at once.
        var loaded = snapshot ?? DiskIndex()
        var seen = [Bool](repeating: false, count: snapshot?.slots.count ?? 0)
        var suspects: Set<String> = []
        var scannedAny = false
        let listedEverything = listRecordNames(events: &events) { names, folders in
            if snapshot == nil, loaded.slots.isEmpty, !names.isEmpty {
                // Room for about as many records in every folder as in the first, so that the
                // index does not grow (copying and leaving freed buffers resident) as it fills.
                let estimate = min(names.count * folders * 5 / 4, 1 << 21)
                loaded.reserveCapacity(estimate, arenaBytes: estimate * (names[0].utf8.count == 64 ? 32 + 16 : names[0].utf8.count))
            }
            var unknown: [String] = []
            if snapshot != nil {
                for name in names {
                    if let slot = loaded.slot(of: name), Int(slot) < seen.count { seen[Int(slot)] = true } else { unknown.append(name) }
                }
            } else {
                unknown = names
            }
            let (scanned, unreadable) = scanHeaders(unknown)
            for entry in scanned where !loaded.contains(entry.name) {
                loaded.upsert(entry)
                // It may take a slot a repeated name left free: not one to drop below.
                if let slot = loaded.slot(of: entry.name), Int(slot) < seen.count { seen[Int(slot)] = true }
            }
            scannedAny = scannedAny || !scanned.isEmpty
            suspects.formUnion(unreadable)
        }
        if snapshot != nil {
            // Entries without a file go.
            for slot in seen.indices where !seen[slot] && loaded.slots[slot].flags.contains(.occupied) {
                loaded.removeSlot(Int32(slot))
            }
        }
        // Headers read: the least recently used first, by their last access.
        if scannedAny { loaded.sortByLastAccess() }
        let count = state.withLock { $0.finishBuild(loaded: loaded, suspects: suspects, listedEverything: listedEverything) }
        events.append(.indexReady(recordCount: count))
        if !options.isReadOnly, !isClosed.load(ordering: .acquiring), isOverLimits(effectiveSizeLimit(forceRefresh: true)) {
            // Reopened over its limits (smaller limits, or files added behind its back): expired
            // records go first, as in a collection, before any live one.
            var pass = CollectionPass()
            collectionGate.withLock { _ in
                removeExpired(in: &pass)
                prune(
                    sizeLimit: effectiveSizeLimit(forceRefresh: false), countLimit: options.countLimit, excluding: nil, reason: nil,
                    in: &pass)
            }
            events += pass.events
        }
        emit(events)
    }

    /// Index entries for the records `names` from their headers (in no order), and the names
    /// whose files are corrupt or unreadable: not indexed, but a load must still find them (to
    /// report and remove them), so they are not answered as misses from the index.
    func scanHeaders(_ names: [String]) -> (entries: [IndexEntry], suspects: Set<String>) {
        var scanned: [IndexEntry] = []
        var suspects: Set<String> = []
        for name in names {
            guard case .record(let contents)? = try? records.read(layout.path(for: name), readPayload: false) else {
                suspects.insert(name)
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
    func listRecordNames(events: inout [CacheEvent], _ body: (_ names: [String], _ folders: Int) -> Void) -> Bool {
        do {
            return try layout.recordNames(io: io, body)
        } catch {
            events.append(.ioError(operation: "list", path: layout.root, errno: error.rawValue))
            return false
        }
    }

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
                        _ = try records.rewriteHeader(header, at: path, sync: sync)
                    } catch {
                        events.append(.ioError(operation: "write-back", path: path, errno: error.rawValue))
                    }
                }
            }
        }
        return events
    }
}
