#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A moment on a file system's clock: seconds and nanoseconds since the epoch, as `stat` gives them.
package struct FileTime: Sendable, Hashable, Comparable {
    package var seconds: Int64
    package var nanoseconds: UInt32

    package init(seconds: Int64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    init(_ time: timespec) {
        self.init(seconds: Int64(time.tv_sec), nanoseconds: UInt32(clamping: time.tv_nsec))
    }

    /// The modification time `stat` reports.
    package static func modification(_ info: stat) -> FileTime {
        #if canImport(Darwin)
        FileTime(info.st_mtimespec)
        #else
        FileTime(info.st_mtim)
        #endif
    }

    /// The status-change time `stat` reports.
    package static func change(_ info: stat) -> FileTime {
        #if canImport(Darwin)
        FileTime(info.st_ctimespec)
        #else
        FileTime(info.st_ctim)
        #endif
    }

    package static func < (a: FileTime, b: FileTime) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }
}

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

    package init(_ info: stat) {
        self.init(
            modification: .modification(info), change: .change(info), inode: UInt64(info.st_ino),
            size: UInt64(clamping: info.st_size))
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
