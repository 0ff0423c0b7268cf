#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The C `statvfs` structure (named apart from the function of the same name).
package typealias StatVFS = statvfs

/// A failed system call's `errno`.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw `errno` value.
    package var rawValue: Int32
    package init(_ rawValue: Int32) { self.rawValue = rawValue }
    /// The calling thread's current `errno`.
    package static var current: Errno { Errno(errno) }
    package var description: String { "errno \(rawValue) (\(String(cString: strerror(rawValue))))" }
}

/// Throwing wrappers over ``SystemCalls``: `EINTR` is retried in one place (never for `close`),
/// short reads and writes are looped over, and failures become ``Errno``.
package struct FileIO: Sendable {
    /// The calls underneath.
    package var calls: SystemCalls

    package init(calls: SystemCalls = .live) { self.calls = calls }

    /// Runs `body` until it returns something other than -1 with `EINTR`.
    @inline(__always)
    private func retrying<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let error = errno
            if error != EINTR { throw Errno(error) }
        }
    }

    package func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(Errno) -> Int32 {
        try retrying { calls.open(path, flags | O_CLOEXEC, mode) }
    }

    /// Closes `fd`. Never retried: after `EINTR` the descriptor is already gone on Linux.
    package func close(_ fd: Int32) {
        _ = calls.close(fd)
    }

    /// Reads up to `count` bytes at `offset`, looping over short reads; returns fewer only at end of file.
    package func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try retrying {
                calls.pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `buffer` at `offset`, looping over short writes.
    package func pwrite(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        var done = 0
        while done < buffer.count {
            let n = try retrying {
                calls.pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            }
            if n == 0 { throw Errno(EIO) }
            done += n
        }
    }

    /// Writes all of `buffer` at the current offset, looping over short writes.
    package func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < buffer.count {
            let n = try retrying { calls.write(fd, buffer.baseAddress! + done, buffer.count - done) }
            if n == 0 { throw Errno(EIO) }
            done += n
        }
    }

    package func fsync(_ fd: Int32) throws(Errno) {
        _ = try retrying { calls.fsync(fd) }
    }

    package func fstat(_ fd: Int32) throws(Errno) -> stat {
        var buf = stat()
        _ = try retrying { calls.fstat(fd, &buf) }
        return buf
    }

    /// `lstat`, or `nil` when the path does not exist.
    package func lstat(_ path: String) throws(Errno) -> stat? {
        var buf = stat()
        do {
            _ = try retrying { calls.lstat(path, &buf) }
        } catch where error.rawValue == ENOENT {
            return nil
        }
        return buf
    }

    package func rename(_ from: String, _ to: String) throws(Errno) {
        _ = try retrying { calls.rename(from, to) }
    }

    /// Removes a file; returns `false` when it did not exist.
    @discardableResult
    package func unlink(_ path: String) throws(Errno) -> Bool {
        do {
            _ = try retrying { calls.unlink(path) }
            return true
        } catch where error.rawValue == ENOENT {
            return false
        }
    }

    /// Creates a directory; an existing directory is not an error.
    package func mkdir(_ path: String, mode: mode_t = 0o755) throws(Errno) {
        do {
            _ = try retrying { calls.mkdir(path, mode) }
        } catch where error.rawValue == EEXIST {
            guard let info = try lstat(path), (info.st_mode & S_IFMT) == S_IFDIR else { throw error }
        }
    }

    /// Creates a directory and its missing parents.
    package func mkdirs(_ path: String, mode: mode_t = 0o755) throws(Errno) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            try mkdir(prefix, mode: mode)
            prefix += "/"
        }
    }

    package func rmdir(_ path: String) throws(Errno) {
        _ = try retrying { calls.rmdir(path) }
    }

    package func flock(_ fd: Int32, _ operation: Int32) throws(Errno) {
        _ = try retrying { calls.flock(fd, operation) }
    }

    package func ftruncate(_ fd: Int32, _ length: Int) throws(Errno) {
        _ = try retrying { calls.ftruncate(fd, off_t(length)) }
    }

    package func statvfs(_ path: String) throws(Errno) -> StatVFS {
        var buf = StatVFS()
        _ = try retrying { calls.statvfs(path, &buf) }
        return buf
    }

    package func listDirectory(_ path: String) throws(Errno) -> [(name: String, isDirectory: Bool?)] {
        while true {
            if let entries = calls.listDirectory(path) { return entries }
            let error = errno
            if error != EINTR { throw Errno(error) }
        }
    }

    /// Reads a whole small file (metadata, snapshots), refusing files larger than `limit` bytes.
    package func readFile(_ path: String, limit: Int) throws(Errno) -> [UInt8] {
        let fd = try open(path, O_RDONLY)
        defer { close(fd) }
        let size = Int(try fstat(fd).st_size)
        guard size <= limit else { throw Errno(EFBIG) }
        var bytes = [UInt8](repeating: 0, count: size)
        let n = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(Errno) in try pread(fd, into: buffer, at: 0) }
        }.get()
        bytes.removeSubrange(n...)
        return bytes
    }

    /// Writes a whole file atomically: a temporary file beside it, then a rename.
    package func writeFileAtomically(_ path: String, _ bytes: [UInt8], sync: Bool = false) throws(Errno) {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd = try open(temporary, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        do {
            try bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try write(fd, buffer) } }.get()
            if sync { try fsync(fd) }
            close(fd)
            try rename(temporary, path)
        } catch {
            close(fd)
            _ = try? unlink(temporary)
            throw error
        }
    }
}
