import Foundation

// The index build's reconciliation of a snapshot with the files: the folders whose stamps
// changed since the snapshot was written are listed, the others trusted.
extension DiskCache {
    /// What ``reconcile(_:stamps:mustList:events:)`` made of the snapshot and the folders.
    struct Reconciled {
        /// The index: the snapshot's entries whose files are there, and the records found
        /// without one (read from their headers).
        var index: DiskIndex
        /// Names whose files could not be read: not indexed, but not answered as misses either.
        var suspects: Set<String>
        /// Whether every folder was listed or vouched for.
        var listedEverything: Bool
        /// Whether any header was read (the index then needs sorting by last access).
        var scannedAny: Bool
        /// The shard folders left unlisted, their stamps unchanged.
        var vouchedFolders: Set<String>
    }

    /// Reconciles a snapshot with the files (or, without one, reads every record's header), a
    /// folder at a time, so that no list of every name is held.
    ///
    /// A shard folder whose stamp is the one `stamps` recorded, not racy, and not in
    /// `mustList` is not listed: the snapshot's entries for it are kept as they are. Every other
    /// folder, and the root, is listed: each name is checked
    /// off against the snapshot, files without an entry have their header read (unreadable
    /// ones become suspects), and entries without a file are dropped.
    /// - Parameters:
    ///   - snapshot: The decoded snapshot, if any.
    ///   - stamps: The folder stamps it recorded (``FolderStamps/none`` to list every folder).
    ///   - mustList: Shard folders to list whatever their stamps say: those of records changed
    ///     after the snapshot's stamps were taken (an index journal's commits). Ignored
    ///     without a snapshot, when every folder is listed anyway.
    /// - Complexity: One `stat` per shard folder with a stamp, one listing per other folder, one
    ///   header read per file the snapshot does not know.
    func reconcile(
        _ snapshot: consuming DiskIndex?, stamps: FolderStamps, mustList: Set<String>, events: inout [CacheEvent]
    ) -> Reconciled {
        let hasSnapshot = snapshot != nil
        var seen = [Bool](repeating: false, count: snapshot?.slots.count ?? 0)
        // Taken, not copied: the loaded index is changed in place.
        var loaded = snapshot ?? DiskIndex()
        snapshot = nil
        var suspects: Set<String> = []
        var scannedAny = false
        var trusted: Set<String> = []
        let trusts = hasSnapshot && !stamps.byFolder.isEmpty
        func vouchedFor(_ shard: String) -> Bool {
            guard trusts, !mustList.contains(shard), stamps.byFolder[shard] != nil,
                let current = layout.stamp(ofShard: shard, io: io), stamps.vouches(for: shard, current: current)
            else { return false }
            trusted.insert(shard)
            return true
        }
        let listedEverything = listRecordNames(events: &events, skipping: vouchedFor) { names, folders in
            if !hasSnapshot, loaded.slots.isEmpty, !names.isEmpty {
                // Room for about as many records in every folder as in the first, so that the
                // index does not grow (copying and leaving freed buffers resident) as it fills.
                let estimate = min(names.count * folders * 5 / 4, 1 << 21)
                loaded.reserveCapacity(estimate, arenaBytes: estimate * (names[0].utf8.count == 64 ? 32 + 16 : names[0].utf8.count))
            }
            var unknown: [String] = []
            if hasSnapshot {
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
        if hasSnapshot {
            // Entries without a file go; those in a folder the stamps vouched for stay unlisted.
            let inTrustedFolder = TrustedFolders(trusted, layout: layout)
            for slot in seen.indices where !seen[slot] && loaded.slots[slot].flags.contains(.occupied) {
                if !trusted.isEmpty, inTrustedFolder.contains(slot: loaded.slots[slot], in: loaded.arena) { continue }
                loaded.removeSlot(Int32(slot))
            }
        }
        return Reconciled(
            index: loaded, suspects: suspects, listedEverything: listedEverything, scannedAny: scannedAny,
            vouchedFolders: trusted)
    }

    /// The shard folders of some record names (those at the root have none): the folders
    /// ``reconcile(_:stamps:mustList:events:)`` must list for names changed after a snapshot.
    func shardFolders(of names: some Sequence<String>) -> Set<String> {
        Set(names.lazy.compactMap { self.layout.shard(for: $0) })
    }
}

/// A set of shard folders, asked of index slots: a 64-hex-digit name kept as 32 bytes is in the
/// folder its first byte spells, without making its name.
private struct TrustedFolders {
    let folders: Set<String>
    let layout: DiskLayout
    var byFirstByte = [Bool](repeating: false, count: 256)

    init(_ folders: Set<String>, layout: DiskLayout) {
        self.folders = folders
        self.layout = layout
        let digits = Array("0123456789abcdef".utf8)
        for byte in 0 ..< 256 {
            let name = String(decoding: [digits[byte >> 4], digits[byte & 15]], as: UTF8.self)
            byFirstByte[byte] = folders.contains(name)
        }
    }

    func contains(slot s: DiskIndex.Slot, in arena: [UInt8]) -> Bool {
        if s.flags.contains(.hexName) { return layout.folderLayout == .sharded && byFirstByte[Int(arena[s.arenaOffset])] }
        guard let shard = layout.shard(for: DiskIndex.name(s, in: arena)) else { return false }
        return folders.contains(shard)
    }
}
