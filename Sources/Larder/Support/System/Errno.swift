// Darwin-only branch: `EFTYPE` for a file that is not a regular one (Linux has `EMEDIUMTYPE`),
// compiled only on Apple platforms and unverified by `.ci/run` (README, "Apple platforms, honestly").
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call's `errno`, with Swift names for the values Larder tells apart, so that
/// code outside `Support/` compares `error == .noSuchFileOrDirectory` and imports no C library.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw `errno` value.
    package var rawValue: Int32
    package init(_ rawValue: Int32) { self.rawValue = rawValue }
    package var description: String { "errno \(rawValue) (\(String(cString: strerror(rawValue))))" }

    /// `ENOENT`: no such file or folder.
    package static let noSuchFileOrDirectory = Errno(ENOENT)
    /// `ENOTDIR`: a path component is not a folder.
    package static let notADirectory = Errno(ENOTDIR)
    /// `EISDIR`: a folder where a file was expected.
    package static let isADirectory = Errno(EISDIR)
    /// `ELOOP`: a symbolic link where Larder does not follow one.
    package static let tooManySymbolicLinks = Errno(ELOOP)
    /// `EEXIST`: the file already exists.
    package static let fileExists = Errno(EEXIST)
    /// `ENOSPC`: the volume is full.
    package static let noSpace = Errno(ENOSPC)
    /// `EWOULDBLOCK` (`EAGAIN`): the call would block, or a lock is held elsewhere.
    package static let wouldBlock = Errno(EWOULDBLOCK)
    /// `EAGAIN`; the same value as ``wouldBlock`` on Linux and Darwin.
    package static let tryAgain = Errno(EAGAIN)
    /// `EINTR`: interrupted by a signal; ``FileIO`` retries it.
    package static let interrupted = Errno(EINTR)
    /// `ESPIPE`: a positioned read or write on a FIFO or socket.
    package static let illegalSeek = Errno(ESPIPE)
    /// `EIO`: an input/output error.
    package static let ioError = Errno(EIO)
    /// `EPERM`: operation not permitted (`unlink` of a folder on some systems).
    package static let notPermitted = Errno(EPERM)
    /// `EACCES`: permission denied.
    package static let permissionDenied = Errno(EACCES)
    /// `ENOMEM`: out of memory.
    package static let noMemory = Errno(ENOMEM)
    /// `EFBIG`: a file larger than the caller allows (or a sparse one claiming more than its blocks hold).
    package static let fileTooLarge = Errno(EFBIG)
    /// `ENXIO`: opening a FIFO for writing with no reader, or a socket.
    package static let noSuchDeviceOrAddress = Errno(ENXIO)
    /// `EROFS`: a read-only file system.
    package static let readOnlyFileSystem = Errno(EROFS)
    /// `EMFILE`: the process has as many descriptors open as its limit (`RLIMIT_NOFILE`) allows.
    package static let tooManyOpenFiles = Errno(EMFILE)
    /// `ENFILE`: the system's table of open files is full.
    package static let fileTableFull = Errno(ENFILE)
    /// `EXDEV`: a path that leaves the cache's root (the value `openat2` gives for `RESOLVE_BENEATH`).
    package static let escapesRoot = Errno(EXDEV)
    /// A folder or file beneath a cache's root belongs to someone the cache does not trust, or
    /// they may write it (``FolderTrust``). (`EKEYREJECTED`, "key was rejected by service", where
    /// the system has it, else `EAUTH`: values no call Larder makes returns.)
    #if canImport(Darwin)
    package static let untrusted = Errno(EAUTH)
    #else
    package static let untrusted = Errno(EKEYREJECTED)
    #endif
    /// A file Larder opened is not a regular file (a FIFO, a socket, a device, a folder).
    /// (`EFTYPE` where the system has it, else `EMEDIUMTYPE`, "wrong medium type".)
    #if canImport(Darwin)
    package static let notARegularFile = Errno(EFTYPE)
    #else
    package static let notARegularFile = Errno(EMEDIUMTYPE)
    #endif
}
