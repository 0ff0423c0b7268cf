import Foundation

// The index image of a folder that writers share: a base (`.larder-shared-index`, an
// ``IndexSnapshot`` with its own epoch) written under the change lock, and a record of the
// change log naming that epoch (``IndexFollower/imageKind``), appended in the same hold of the
// lock. The record is the place in the log where the base is exact: an opener loads the base,
// reconciles it with the folders whose stamps changed, and replays the log's records after that
// place, instead of reading every record's header.
// - A new generation of the log (a log grown past its bound, a writer that died mid-change, a
//   change that could not be recorded) holds no such record: the base it names is then unused.
// - A base whose record is missing (a crash between the two, a failed append) is unused; a
//   record whose base was replaced by a later one that has no record yet names another epoch.
// - A writer that holds the folder alone changes records without recording them in the log: it
//   removes the shared base when it opens (``DiskCache/withdrawSharedImage(layout:io:sync:)``).

extension DiskLayout {
    /// The shared image's file name (see `DiskCache+SharedImage.swift`).
    package static let sharedImageName = ".larder-shared-index"
    /// The shared image's path.
    package var sharedImagePath: String { root + "/" + Self.sharedImageName }
}

extension IndexFollower {
    /// The record kind that names a shared image: its payload is the base's epoch (8 bytes,
    /// little-endian). Replays skip it.
    static let imageKind: UInt8 = 2

    /// The payload of an image record for a base of `epoch`.
    static func imagePayload(epoch: UInt64) -> [UInt8] {
        withUnsafeBytes(of: epoch.littleEndian) { Array($0) }
    }
}

extension DiskCache {
    /// A shared image read at open: the base, its folder stamps, and the place in the log past
    /// its record, from which the log is replayed on top of it.
    struct SharedImage {
        var image: IndexJournal.Image
        var stamps: FolderStamps
        var place: FolderChangeLog.Cursor
    }

    /// Writes the index as the folder's shared image and records it in the change log, holding
    /// the change lock: after replaying what the others recorded, so that the index is the
    /// folder's as of the record's place. Skipped while this cache has a change under way, while
    /// a change is marked begun and not recorded (the folder may hold a change the log does not),
    /// and before the index is built.
    /// - Parameter sync: Whether the base, the folder and the log are synced.
    func writeSharedImage(sync: Bool) -> SnapshotWrite {
        guard let sharedFolder else { return .skipped }
        let log = sharedFolder.log
        return sharedFolder.following.withLock { following -> SnapshotWrite in
            do throws(CacheError) {
                var changeCount: UInt64?
                defer { sharedFolder.noteFollowed(following.follower.cursor, changeCount: changeCount) }
                return try log.withChangeLock(sync: sync, committed: { changeCount = $0 }) { appender -> SnapshotWrite in
                    _follow(log.changes(after: following.follower.cursor), &following)
                    guard !following.mustReset, !sharedFolder.isChangeMarkedBegun, snapshotGate.withLock({ $0.changesInFlight }) == 0
                    else { return .skipped }
                    // The changes this writer replayed are recorded already.
                    let index: DiskIndex? = state.withLock { s in s.isIndexReady ? s.indexForNewBase() : nil }
                    guard let index else { return .skipped }
                    let epoch = UInt64.random(in: 1 ... .max)
                    do throws(Errno) {
                        try io.writeFileAtomically(layout.sharedImagePath, sync: sync) { created in
                            // No change is under way anywhere (the change lock is held), so each
                            // folder holds what the index says of it.
                            let stamps = folderStamps(reference: created.modification, carrying: SnapshotState(isOnDisk: false))
                            return IndexSnapshot.encode(index, epoch: epoch, stamps: stamps)
                        }
                        // The base's name before its record, so that a record never outlives it.
                        if sync { try records.syncFolder(layout.root) }
                    } catch {
                        return .failed(.ioError(operation: "snapshot", path: layout.sharedImagePath, errno: error.rawValue))
                    }
                    appender.append(kind: IndexFollower.imageKind, payload: IndexFollower.imagePayload(epoch: epoch))
                    following.follower.move(to: appender.cursor)
                    return .written
                }
            } catch {
                // The follower's place is past the log's end now: the next look rebuilds.
                following.mustReset = true
                return .failed(.ioError(operation: "snapshot", path: log.path, errno: error.errno ?? EIO))
            }
        }
    }

    /// The folder's shared image, when its base is whole and the log's current generation
    /// records it; `nil` otherwise (the opener then reads the folder).
    func loadSharedImage() -> SharedImage? {
        guard let sharedFolder, let base = try? io.readFile(layout.sharedImagePath, limit: 1 << 31),
            let image = IndexJournal.load(base: base, journal: nil, keyEncoding: options.keyEncoding),
            let place = sharedFolder.log.placeAfter(kind: IndexFollower.imageKind, payload: IndexFollower.imagePayload(epoch: image.epoch))
        else { return nil }
        return SharedImage(image: image, stamps: IndexSnapshot.decodeStamps(base) ?? .none, place: place)
    }

    /// Takes `place`, where a shared image loaded at open is exact, as the place to replay from,
    /// then replays what was recorded since.
    func followFolder(fromImageAt place: FolderChangeLog.Cursor) {
        guard let sharedFolder else { return }
        sharedFolder.following.withLock { following in
            following.follower.move(to: place)
            sharedFolder.noteFollowed(place, changeCount: nil)
        }
        followFolder()
    }

    /// Removes the shared image before a writer that holds the folder alone changes anything:
    /// its changes are recorded in no log, so the image and the log would not hold them.
    /// - Throws: ``CacheError/Code/ioFailure`` when the image is there and cannot be removed.
    static func withdrawSharedImage(layout: DiskLayout, io: FileIO, sync: Bool) throws(CacheError) {
        do throws(Errno) {
            if try io.unlink(layout.sharedImagePath), sync { try io.syncFolder(layout.root) }
        } catch {
            throw CacheError(.ioFailure, "cannot remove the shared index image", path: layout.sharedImagePath, errno: error.rawValue)
        }
    }
}
