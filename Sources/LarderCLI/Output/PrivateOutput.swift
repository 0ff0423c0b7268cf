#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

/// Files the tool writes outside the cache (exported payloads, reports) keep the cache's privacy:
/// a private cache's (no permission for group or others on its folder) are 0600 in folders made
/// 0700; a cache others may read gives 0644 and 0755, one shared with its group 0660 and 0770,
/// as ``CacheSharing`` makes them. The umask may narrow these further, never widen them.
struct PrivateOutput {
    /// The mode of files written.
    let fileMode: mode_t
    /// The mode of folders created.
    let folderMode: mode_t

    /// The modes that match the cache folder `root` (`fstat` of it); owner-only when unknown.
    init(root: FileInfo?) {
        let permissions = root?.permissions ?? 0o700
        if permissions & 0o007 != 0 {
            (fileMode, folderMode) = (0o644, 0o755)
        } else if permissions & 0o070 != 0 {
            (fileMode, folderMode) = (0o660, 0o770)
        } else {
            (fileMode, folderMode) = (0o600, 0o700)
        }
    }

    /// Creates `folder` and its missing parents with ``folderMode``; an existing folder keeps its mode.
    func makeFolder(_ folder: URL) throws {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: Int(folderMode)])
    }

    /// Writes `data` to `path` atomically: a new file beside it (`O_CREAT | O_EXCL | O_NOFOLLOW`,
    /// created with ``fileMode``), then a rename over `path`.
    /// - Throws: A message naming what failed.
    func write(_ data: Data, to path: String) throws(CommandFailure) {
        let temporary = path + ".larder-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw Self.failure(path) }
        var ok = data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = writeBytes(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        let error = errno
        close(fd)
        if ok { ok = rename(temporary, path) == 0 }
        guard ok else {
            let failure = Self.failure(path, errno: ok ? errno : error)
            unlink(temporary)
            throw failure
        }
    }

    private static func failure(_ path: String, errno code: Int32 = errno) -> CommandFailure {
        CommandFailure(.cacheError, "cannot write '\(path)': \(String(cString: strerror(code)))")
    }
}

/// `write(2)`, named apart from ``PrivateOutput/write(_:to:)``.
private func writeBytes(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
