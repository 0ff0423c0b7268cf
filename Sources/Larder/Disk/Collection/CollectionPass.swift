import Dispatch
import Foundation

/// One collection pass's outcome as it accumulates: what it removed, and the events to emit
/// once the pass has released its locks.
struct CollectionPass {
    /// What the pass removed, and why.
    var report = CollectionReport()
    /// Events for the cache's handler.
    var events: [CacheEvent] = []
    /// The shard folders the pass removes files from, one set a lane (see
    /// ``DiskCache/lane(of:)``), each opened on its lane's first removal from it.
    var folders: [CollectionFolders?] = [nil, nil]

    /// The folders of `lane`, made on first use, each lane with half the bound of open folders.
    mutating func folders(lane: Int, io: FileIO, layout: DiskLayout) -> CollectionFolders {
        if let folders = folders[lane] { return folders }
        let made = CollectionFolders(io: io, layout: layout, limit: max(1, CollectionFolders.defaultLimit / 2))
        folders[lane] = made
        return made
    }

    /// Takes what `other` (one victim's removal) removed and reported.
    mutating func absorb(_ other: CollectionPass) {
        report.removed += other.report.removed
        events += other.events
    }
}
