#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// One forwarder per call: at file scope the unqualified names are the C library's, on Glibc and
// Darwin alike (inside `SystemCalls` they would name its own properties).
private func c_open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func c_close(_ fd: Int32) -> Int32 { close(fd) }
private func c_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(fd, buffer, count) }
private func c_pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: off_t) -> Int { pread(fd, buffer, count, offset) }
private func c_write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
private func c_pwrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: off_t) -> Int { pwrite(fd, buffer, count, offset) }
private func c_fsync(_ fd: Int32) -> Int32 { fsync(fd) }
private func c_fstat(_ fd: Int32, _ buf: UnsafeMutablePointer<stat>) -> Int32 { fstat(fd, buf) }
private func c_lstat(_ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<stat>) -> Int32 { lstat(path, buf) }
private func c_rename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 { rename(from, to) }
private func c_unlink(_ path: UnsafePointer<CChar>) -> Int32 { unlink(path) }
private func c_mkdir(_ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32 { mkdir(path, mode) }
private func c_rmdir(_ path: UnsafePointer<CChar>) -> Int32 { rmdir(path) }
private func c_ftruncate(_ fd: Int32, _ length: off_t) -> Int32 { ftruncate(fd, length) }

// `flock` and `statvfs` name both a C struct and a C function; a typed reference picks the function.
private let cFlock: @convention(c) (Int32, Int32) -> Int32 = flock
private let cStatvfs: @Sendable (UnsafePointer<CChar>, UnsafeMutablePointer<statvfs>) -> Int32 = statvfs

/// The file-system calls Larder makes, each wrapped once, as a table of functions.
///
/// `SystemCalls.live` calls the C library. Tests build a table whose entries fail on purpose
/// (``FaultInjector``) and hand it to a cache through its internal initializer, in the spirit of
/// swift-system's mocking seam. Every entry follows the C convention: it returns -1 (or `nil`)
/// and sets `errno` on failure. Use ``FileIO`` rather than calling these directly: it retries
/// `EINTR`, loops over short reads and writes, and turns failures into ``Errno`` values.
package struct SystemCalls: Sendable {
    package var open: @Sendable (_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32
    package var close: @Sendable (_ fd: Int32) -> Int32
    package var read: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int
    package var pread: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: off_t) -> Int
    package var write: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int
    package var pwrite: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: off_t) -> Int
    package var fsync: @Sendable (_ fd: Int32) -> Int32
    package var fstat: @Sendable (_ fd: Int32, _ buf: UnsafeMutablePointer<stat>) -> Int32
    package var lstat: @Sendable (_ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<stat>) -> Int32
    package var rename: @Sendable (_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32
    package var unlink: @Sendable (_ path: UnsafePointer<CChar>) -> Int32
    package var mkdir: @Sendable (_ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32
    package var rmdir: @Sendable (_ path: UnsafePointer<CChar>) -> Int32
    package var flock: @Sendable (_ fd: Int32, _ operation: Int32) -> Int32
    package var ftruncate: @Sendable (_ fd: Int32, _ length: off_t) -> Int32
    package var statvfs: @Sendable (_ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<statvfs>) -> Int32
    /// Lists a directory's entries (without `.` and `..`), each with whether it is a directory
    /// (`nil` when the file system does not say). Returns `nil` and sets `errno` on failure.
    package var listDirectory: @Sendable (_ path: String) -> [(name: String, isDirectory: Bool?)]?

    /// The C library's calls.
    package static let live = SystemCalls(
        open: c_open,
        close: c_close,
        read: c_read,
        pread: c_pread,
        write: c_write,
        pwrite: c_pwrite,
        fsync: c_fsync,
        fstat: c_fstat,
        lstat: c_lstat,
        rename: c_rename,
        unlink: c_unlink,
        mkdir: c_mkdir,
        rmdir: c_rmdir,
        flock: { fd, operation in cFlock(fd, operation) },
        ftruncate: c_ftruncate,
        statvfs: { path, buf in cStatvfs(path, buf) },
        listDirectory: { path in
            guard let dir = opendir(path) else { return nil }
            defer { closedir(dir) }
            var entries: [(name: String, isDirectory: Bool?)] = []
            while true {
                errno = 0
                guard let entry = readdir(dir) else {
                    if errno != 0 { return nil }
                    break
                }
                let name = withUnsafePointer(to: entry.pointee.d_name) { tuple in
                    tuple.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if name == "." || name == ".." { continue }
                let type = entry.pointee.d_type
                let isDirectory: Bool? = type == UInt8(DT_UNKNOWN) ? nil : type == UInt8(DT_DIR)
                entries.append((name, isDirectory))
            }
            return entries
        }
    )
}
