import Foundation

// The cache's folder deleted behind its back: iOS empties an app's `Caches` folder when the device
// runs short of space, and a user may `rm -rf` it. The descriptor of the root (`CacheRoot`) then
// names a deleted folder, so every path beneath it fails with `ENOENT`: loads miss, removals,
// touches and locks find nothing, and nothing throws. The next store (which fails to create its
// temporary file), collection or flush notices, makes the folder again with the checks of an
// open, moves the cache to it and starts the index again from what it holds.
extension DiskCache {
    /// What became of an attempt to make the cache's deleted folder again.
    enum FolderRecovery {
        /// The folder is where the cache left it (or the cache is read-only or closed): nothing done.
        case notRemoved
        /// The cache is in a live folder again, made by this call (its event is given) or by
        /// another one meanwhile (no event).
        case recovered([CacheEvent])
        /// The folder could not be made again, or what is at its path is not safe to use; the
        /// cache stays on the deleted folder, and the next store tries again.
        case failed(CacheError)
    }

    /// When the cache's folder was deleted (or moved, or replaced by another), makes a folder at
    /// its path again and moves the cache to it:
    ///
    /// 1. the folder is created with its missing parents (or the one someone made there is
    ///    opened) and checked as at open (owner, permissions: ``checkRootIsSafe(_:options:path:)``);
    /// 2. its lock file is created and locked, so a second writer is still refused (a writer
    ///    sharing the folder takes it shared, and opens the new folder's change log and sharing
    ///    file, so that the others sharing the deleted folder move to the new one with it);
    /// 3. its metadata is checked (a folder holding another cache's records is refused) and
    ///    written, and its temporary folder made;
    /// 4. holding every key lock, the root's descriptor is swapped (``CacheRoot/adopt(_:)``; the
    ///    old one stays open, since a call may still be using it) and the index restarted from
    ///    the records the folder holds (none, unless someone put them there);
    /// 5. the old lock is released.
    ///
    /// A thread that finds the root gone while another recovers waits for it, then answers
    /// ``FolderRecovery/recovered(_:)`` without an event.
    func recoverRemovedFolder() -> FolderRecovery {
        guard !options.isReadOnly, let root = io.root else { return .notRemoved }
        let seen = root.fd
        // The directory lock's mutex serialises recoveries (and `close`, which releases the lock).
        // It is held across file-system calls on purpose: nothing else waits for it, and the
        // event is rare.
        return directoryLock.withLock { (lock: inout DirectoryLock?) -> FolderRecovery in
            if root.fd != seen { return .recovered([]) }
            guard lock != nil, !isClosed.isSet, root.isRemoved else { return .notRemoved }
            let fresh: FileIO
            do throws(Errno) {
                fresh = try io.rooted(at: root.path, create: true)
            } catch {
                return .failed(
                    CacheError(
                        .ioFailure, "the cache directory was deleted and cannot be made again", path: root.path, errno: error.rawValue))
            }
            guard let freshRoot = fresh.root else { return .notRemoved }
            let newLock: DirectoryLock
            // A writer sharing the folder takes the new folder's lock shared, as at open, so
            // that the others sharing the deleted one move to the new one too, and lets go once
            // it is registered there.
            let shares = sharedFolder != nil
            do throws(CacheError) {
                try Self.checkRootIsSafe(freshRoot.info, options: options, path: root.path)
                newLock = try DirectoryLock(
                    path: layout.lockPath, io: fresh, sharedWithGroup: options.sharing == .group, shared: shares,
                    sharingWriter: { SharedWriterTable.runningWriter(root: layout.root, io: fresh) })
            } catch {
                return .failed(error)
            }
            var sharingFD: Int32?
            do throws(CacheError) {
                // A new folder gets this cache's layout, which may be one detected at open rather
                // than the options'.
                var folderOptions = options
                folderOptions.layout = layout.folderLayout
                let facts = try Self.checkMetadata(layout: layout, options: folderOptions, io: fresh)
                guard facts.layout == layout.folderLayout else {
                    throw CacheError(
                        .unsupportedFormat,
                        "the cache directory was replaced by one with the \(facts.layout) layout, not \(layout.folderLayout); open the cache again",
                        path: root.path)
                }
                try Self.prepareTemporaryFolder(layout: layout, io: fresh, sharedWithWriters: shares)
                if shares {
                    sharingFD = try SharedFolder.openSharingFile(root: layout.root, io: fresh, sharedWithGroup: options.sharing == .group)
                }
                // The index is rebuilt from the headers: an image found there is not this cache's.
                _ = try? fresh.unlink(layout.snapshotPath)
                _ = try? fresh.unlink(layout.journalPath)
            } catch {
                newLock.release()
                return .failed(error)
            }
            waitForIndex()
            // No read or change of a record is under way while the root moves and the index
            // restarts, so no entry of the deleted folder lands in the new index, and none of the
            // new folder's is lost.
            withEveryKeyLock {
                // Kept descriptors are of the deleted folder's files.
                records.descriptors?.retireAll()
                root.adopt(freshRoot)
                // The place in the new folder's log before its records are read, so that what
                // the others record meanwhile is replayed on top.
                if let sharedFolder, let sharingFD {
                    let sharingPath = layout.root + "/" + SharedFolder.sharingFileName
                    sharedFolder.following.withLock { sharedFolder.moveToRemadeFolder(sharingFD: sharingFD, sharingPath: sharingPath, &$0) }
                    newLock.letGoOfSharedHold()
                }
                var ignored: [CacheEvent] = []
                let (names, listedEverything) = listRecordNames(events: &ignored)
                let (entries, suspects) = scanHeaders(names)
                let ordered = entries.sorted { $0.lastAccessMs < $1.lastAccessMs }
                state.withLock { $0.restart(entries: ordered, suspects: suspects, listedEverything: listedEverything) }
                forgetIndexImage()
            }
            lock?.release()
            lock = newLock
            return .recovered([.folderRecreated(path: root.path)])
        }
    }

    /// ``recoverRemovedFolder()`` for calls that do not throw for it (collections): the event on
    /// success, an ``CacheEvent/ioError(operation:path:errno:)`` (operation `"recreate"`) on failure.
    func recoverRemovedFolderReportingEvents() -> [CacheEvent] {
        switch recoverRemovedFolder() {
        case .notRemoved: return []
        case .recovered(let events): return events
        case .failed(let error): return [.ioError(operation: "recreate", path: error.path ?? layout.root, errno: error.errno ?? 0)]
        }
    }
}
