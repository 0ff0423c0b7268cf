/// What `stat` says of a shard folder that changes whenever an entry in it is added, removed or
/// renamed: its modification and status-change times, inode and size. A folder whose stamp is
/// the one the snapshot recorded holds the files it held then (see ``FolderStamps``).
package struct FolderStamp: Sendable, Hashable {
    package var modification: FileTime
    package var change: FileTime
    package var inode: UInt64
    package var size: UInt64

    package init(modification: FileTime, change: FileTime, inode: UInt64, size: UInt64) {
        self.modification = modification
        self.change = change
        self.inode = inode
        self.size = size
    }

    /// The stamp of the folder `info` describes.
    package init(_ info: FileInfo) {
        self.init(modification: info.modification, change: info.change, inode: info.inode, size: UInt64(clamping: info.size))
    }
}

/// The stamps of the shard folders as the index snapshot saw them, and the file system's time
/// before they were taken.
///
/// A folder's timestamps have the file system clock's granularity (a jiffy on Linux, 2 s on
/// FAT): a change within the tick in which its stamp was taken can leave the stamp as it was.
/// As in git's index ("racy git"), a stamp whose modification time is not strictly older than
/// ``reference`` (the creation of the snapshot's temporary file, before any stamp was taken) is
/// racy, and its folder is listed whatever the stamp says.
package struct FolderStamps: Sendable, Equatable {
    /// The file system's time before the first stamp was taken.
    package var reference: FileTime
    /// Each shard folder's stamp, by folder name.
    package var byFolder: [String: FolderStamp]

    package init(reference: FileTime, byFolder: [String: FolderStamp]) {
        self.reference = reference
        self.byFolder = byFolder
    }

    /// No stamps: every folder is listed.
    package static let none = FolderStamps(reference: FileTime(seconds: 0, nanoseconds: 0), byFolder: [:])

    /// Whether `folder`, whose `stat` now says `current`, may be trusted to hold what the
    /// snapshot says: its stamp was recorded, is not racy, and has not changed.
    package func vouches(for folder: String, current: FolderStamp) -> Bool {
        guard let recorded = byFolder[folder], recorded.modification < reference else { return false }
        return recorded == current
    }
}
