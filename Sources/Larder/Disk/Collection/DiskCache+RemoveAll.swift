import Dispatch
import Foundation

extension DiskCache {
    /// Removes every record, corrupt ones too (SPT's `prune`). Files that are not records Larder
    /// or SPTPersistentCache could have written (no record magic, not a regular file, or not
    /// where the layout puts a record) stay: the cache never removes a file it did not write.
    /// With ``Durability/fsync``, the removals survive a power loss once this returns.
    /// A folder that is gone holds nothing to remove; one that cannot be listed is an error
    /// (after the records the index knows of are removed), since its records remain.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAll() throws(CacheError) {
        try checkWritable(key: nil)
        waitForIndex()
        var events: [CacheEvent] = []
        var failure: CacheError?
        var names: [String]
        do throws(Errno) {
            let listing = try layout.recordNames(io: io)
            names = listing.names
            if !listing.isComplete {
                failure = CacheError(.ioFailure, "cannot list a shard folder: the records in it remain", path: layout.root)
            }
        } catch {
            events.append(.ioError(operation: "list", path: layout.root, errno: error.rawValue))
            names = []
            if error != .noSuchFileOrDirectory {
                failure = CacheError(
                    .ioFailure, "cannot list the cache folder: records the index does not know remain", path: layout.root,
                    errno: error.rawValue)
            }
        }
        // Records the index knows of but the listing missed (an unlistable folder) go too.
        let listed = Set(names)
        names += state.withLock { s in s.index.entriesLeastRecentFirst.map(\.name) }.filter { !listed.contains($0) }
        for name in names {
            removeRecordFile(name, failure: &failure) { path in
                // A file whose header this process read or wrote is a record; any other goes only
                // if it starts as a record does (a damaged one), never if it is foreign.
                if holdsVerifiedHeader(name) { return true }
                switch try? records.read(path, readPayload: false) {
                case .foreign?, .missing?:
                    state.withLock { $0.forget(name) }
                    return false
                case nil:
                    // Unreadable, so it cannot be told from a file Larder did not write: left.
                    return false
                case .record?, .corrupt?:
                    return true
                }
            }
        }
        emit(events)
        if let failure { throw failure }
        if options.durability == .fsync { try syncFoldersAfterRemoval(recordFolders()) }
    }

    /// Removes every unlocked record (SPT's `wipeNonLockedFiles`); durably under ``Durability/fsync``.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAllUnlocked() throws(CacheError) {
        try removeAll(where: { $0 == 0 })
    }

    /// Removes every locked record (SPT's `wipeLockedFiles`); durably under ``Durability/fsync``.
    /// - Throws: ``CacheError/Code/readOnly``, ``CacheError/Code/ioFailure``.
    public func removeAllLocked() throws(CacheError) {
        try removeAll(where: { $0 > 0 })
    }

    /// Every folder that may hold records: the root and, sharded, each shard folder in it.
    /// Removals sync them all under ``Durability/fsync``: a record evicted earlier (an unsynced
    /// unlink) could otherwise come back after a power loss that follows a `removeAll`.
    func recordFolders() -> [String] {
        var folders = [layout.root]
        guard layout.folderLayout == .sharded, let entries = try? io.listDirectory(layout.root) else { return folders }
        for entry in entries where entry.isDirectory != false {
            guard let name = entry.name, !DiskLayout.isReserved(name), DiskLayout.shard(for: name) == name else { continue }
            folders.append(layout.root + "/" + name)
        }
        return folders
    }

    private func removeAll(where lockCountMatches: @escaping (UInt32) -> Bool) throws(CacheError) {
        try checkWritable(key: nil)
        waitForIndex()
        let names = state.withLock { s in
            s.index.entriesLeastRecentFirst.filter { lockCountMatches($0.lockCount) }.map(\.name)
        }
        var failure: CacheError?
        var events: [CacheEvent] = []
        for name in names {
            removeRecordFile(name, failure: &failure) { path in
                // The header is the truth for the lock count; the index may lag a snapshot.
                switch try? records.read(path, readPayload: false) {
                case .record(let contents)?:
                    return lockCountMatches(contents.header.refCount)
                case .corrupt(let reason)?:
                    events.append(_removeCorrupt(name: name, key: nil, path: path, reason: reason))
                    return false
                case .foreign?:
                    // Not a record: no longer indexed, and left where it is.
                    state.withLock { $0.forget(name) }
                    return false
                default:
                    return true
                }
            }
        }
        emit(events)
        if let failure { throw failure }
        if options.durability == .fsync { try syncFoldersAfterRemoval(recordFolders()) }
    }

    /// Removes the record file `name` as a change to it (``changingRecord(_:_:)``, under its key
    /// lock) if `mayGo`, given its path, says so there: unlinked and forgotten by the index, or
    /// the failure kept in `failure` unless one is there already (a change refused because the
    /// cache closed is one too). The one removal of the `removeAll` family.
    private func removeRecordFile(_ name: String, failure: inout CacheError?, if mayGo: (_ path: String) -> Bool) {
        let path = layout.path(for: name)
        let ran: Void? = changingRecord(name) {
            guard mayGo(path) else { return }
            do throws(Errno) {
                try io.unlink(path)
                state.withLock { $0.forget(name) }
            } catch {
                failure = failure ?? CacheError(.ioFailure, "cannot remove a record", path: path, errno: error.rawValue)
            }
        }
        if ran == nil { failure = failure ?? closedError(key: nil) }
    }
}
