// Darwin-only branch: `st_mtimespec` (Linux's `st_mtim`), compiled only on Apple platforms and
// unverified by `.ci/run` (README, "Apple platforms, honestly").
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What `stat` says of a file, in Swift names.
package struct FileInfo: Sendable, Hashable {
    /// The kinds of file Larder tells apart.
    package enum Kind: Sendable, Hashable {
        case regular, directory, symbolicLink, fifo, other
    }

    /// The file's kind.
    package var kind: Kind
    /// Its length in bytes.
    package var size: Int
    /// Bytes allocated to it on disk (`st_blocks * 512`); below ``size`` for sparse files.
    package var allocatedBytes: Int
    /// The file system's preferred block size for it.
    package var blockSize: Int
    /// The owner's user id.
    package var ownerID: UInt32
    /// The permission bits (`0o7777` of `st_mode`).
    package var permissions: UInt16
    /// The number of hard links.
    package var linkCount: Int
    /// The last modification, in seconds since the epoch.
    package var modificationTime: Double
    /// The last modification, as the file system's clock gives it.
    package var modification: FileTime
    /// The last status change (`st_ctime`), as the file system's clock gives it.
    package var change: FileTime
    /// The inode number.
    package var inode: UInt64

    package init(_ info: stat) {
        kind =
            switch info.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            case S_IFLNK: .symbolicLink
            case S_IFIFO: .fifo
            default: .other
            }
        size = Int(info.st_size)
        allocatedBytes = Int(info.st_blocks) &* 512
        blockSize = Int(info.st_blksize)
        ownerID = UInt32(info.st_uid)
        permissions = UInt16(info.st_mode & 0o7777)
        linkCount = Int(info.st_nlink)
        #if canImport(Darwin)
        modification = FileTime(info.st_mtimespec)
        change = FileTime(info.st_ctimespec)
        #else
        modification = FileTime(info.st_mtim)
        change = FileTime(info.st_ctim)
        #endif
        modificationTime = Double(modification.seconds) + Double(modification.nanoseconds) / 1e9
        inode = UInt64(info.st_ino)
    }

    package init(
        kind: Kind, size: Int, allocatedBytes: Int, blockSize: Int = 4096, ownerID: UInt32 = 0, permissions: UInt16 = 0o600,
        linkCount: Int = 1, modificationTime: Double = 0, change: FileTime = FileTime(seconds: 0, nanoseconds: 0), inode: UInt64 = 0
    ) {
        self.kind = kind
        self.size = size
        self.allocatedBytes = allocatedBytes
        self.blockSize = blockSize
        self.ownerID = ownerID
        self.permissions = permissions
        self.linkCount = linkCount
        self.modificationTime = modificationTime
        let whole = modificationTime.rounded(.down)
        self.modification = FileTime(seconds: Int64(whole), nanoseconds: UInt32((modificationTime - whole) * 1e9))
        self.change = change
        self.inode = inode
    }

    /// Files up to this length are read whatever their blocks say (small files may live inside
    /// their inode and report no blocks at all).
    package static let sparseAllowance = 1 << 20

    /// Whether the file claims far more bytes than it has blocks: longer than
    /// ``sparseAllowance`` with under an eighth of its length allocated. Reading such a file
    /// whole would allocate memory for bytes that are not on disk (a hole reads as zeros), so
    /// Larder refuses to allocate for it. The factor of eight leaves room for file systems that
    /// compress (ZFS, btrfs), whose real payloads rarely shrink further.
    package var looksSparse: Bool {
        size > Self.sparseAllowance && allocatedBytes < size / 8
    }

    /// Whether group or others may write to it.
    package var isWritableByGroupOrOthers: Bool { permissions & 0o022 != 0 }
}

/// What `statvfs` says of a volume, in Swift names.
package struct VolumeInfo: Sendable, Hashable {
    /// The volume's size in bytes.
    package var size: Int
    /// Bytes an unprivileged process may still write.
    package var available: Int

    package init(_ info: statvfs) {
        let fragment = Int(info.f_frsize)
        size = Int(info.f_blocks) &* fragment
        available = Int(info.f_bavail) &* fragment
    }
}

/// The process's identity, for ownership checks.
package enum ProcessIdentity {
    /// The effective user id.
    package static var effectiveUserID: UInt32 { UInt32(geteuid()) }
    /// The process id.
    package static var processID: Int32 { getpid() }
    /// Whether a process `pid` runs now (`kill` with no signal): one of another user answers
    /// `EPERM`, and runs too.
    package static func isRunning(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}

/// `malloc` and `free`, for buffers whose allocation may fail without trapping and that are
/// handed to `Data` without a copy.
package enum RawMemory {
    /// `byteCount` bytes, or `nil` when the system has no memory to give.
    package static func allocate(_ byteCount: Int) -> UnsafeMutableRawPointer? { malloc(max(1, byteCount)) }
    /// Frees memory from ``allocate(_:)``.
    package static func free(_ pointer: UnsafeMutableRawPointer) { c_free(pointer) }
}

private func c_free(_ pointer: UnsafeMutableRawPointer) { free(pointer) }
