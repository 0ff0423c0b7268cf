#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The advisory write lock on a cache directory: `flock` on `.larder.lock`, which holds the
/// holder's pid. The lock dies with its process; a second opener, in this process or another,
/// gets ``CacheError/Code/directoryInUse`` with that pid.
package struct DirectoryLock: Sendable {
    private let fd: Int32
    private let io: FileIO

    /// Takes the lock, or throws naming the holder.
    package init(path: String, io: FileIO) throws(CacheError) {
        self.io = io
        let fd: Int32
        do {
            fd = try io.open(path, O_RDWR | O_CREAT, mode: 0o644)
        } catch {
            throw CacheError(.ioFailure, "cannot open the lock file", path: path, errno: error.rawValue)
        }
        do {
            try io.flock(fd, LOCK_EX | LOCK_NB)
        } catch {
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = (try? buffer.withUnsafeMutableBytes { b in
                Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) }
            }.get()) ?? 0
            io.close(fd)
            if error.rawValue == EWOULDBLOCK || error.rawValue == EAGAIN {
                let text = String(decoding: buffer[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                let pid = Int32(text)
                throw CacheError(
                    .directoryInUse,
                    "the cache directory is in use by process \(pid.map(String.init) ?? "unknown"); open it read-only to read it",
                    path: path, holderPID: pid)
            }
            throw CacheError(.ioFailure, "cannot lock the cache directory", path: path, errno: error.rawValue)
        }
        let pid = Array("\(getpid())\n".utf8)
        do {
            try io.ftruncate(fd, 0)
            try pid.withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: 0) } }.get()
        } catch {
            // The lock is what matters; a missing pid only makes the holder's error less helpful.
        }
        self.fd = fd
    }

    /// Releases the lock.
    package func release() {
        // Unlock explicitly before closing: a process being spawned at this moment holds a copy of
        // the descriptor until it execs (it is close-on-exec), and the lock, which belongs to the
        // open file description, would outlive this close until then.
        try? io.flock(fd, LOCK_UN)
        io.close(fd)
    }
}
