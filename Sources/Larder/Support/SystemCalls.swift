#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
        open: { path, flags, mode in
            #if canImport(Darwin)
            Darwin.open(path, flags, mode)
            #else
            Glibc.open(path, flags, mode)
            #endif
        },
        close: { fd in
            #if canImport(Darwin)
            Darwin.close(fd)
            #else
            Glibc.close(fd)
            #endif
        },
        read: { fd, buffer, count in
            #if canImport(Darwin)
            Darwin.read(fd, buffer, count)
            #else
            Glibc.read(fd, buffer, count)
            #endif
        },
        pread: { fd, buffer, count, offset in
            #if canImport(Darwin)
            Darwin.pread(fd, buffer, count, offset)
            #else
            Glibc.pread(fd, buffer, count, offset)
            #endif
        },
        write: { fd, buffer, count in
            #if canImport(Darwin)
            Darwin.write(fd, buffer, count)
            #else
            Glibc.write(fd, buffer, count)
            #endif
        },
        pwrite: { fd, buffer, count, offset in
            #if canImport(Darwin)
            Darwin.pwrite(fd, buffer, count, offset)
            #else
            Glibc.pwrite(fd, buffer, count, offset)
            #endif
        },
        fsync: { fd in
            #if canImport(Darwin)
            Darwin.fsync(fd)
            #else
            Glibc.fsync(fd)
            #endif
        },
        fstat: { fd, buf in
            #if canImport(Darwin)
            Darwin.fstat(fd, buf)
            #else
            Glibc.fstat(fd, buf)
            #endif
        },
        lstat: { path, buf in
            #if canImport(Darwin)
            Darwin.lstat(path, buf)
            #else
            Glibc.lstat(path, buf)
            #endif
        },
        rename: { from, to in
            #if canImport(Darwin)
            Darwin.rename(from, to)
            #else
            Glibc.rename(from, to)
            #endif
        },
        unlink: { path in
            #if canImport(Darwin)
            Darwin.unlink(path)
            #else
            Glibc.unlink(path)
            #endif
        },
        mkdir: { path, mode in
            #if canImport(Darwin)
            Darwin.mkdir(path, mode)
            #else
            Glibc.mkdir(path, mode)
            #endif
        },
        rmdir: { path in
            #if canImport(Darwin)
            Darwin.rmdir(path)
            #else
            Glibc.rmdir(path)
            #endif
        },
        flock: { fd, operation in cFlock(fd, operation) },
        ftruncate: { fd, length in
            #if canImport(Darwin)
            Darwin.ftruncate(fd, length)
            #else
            Glibc.ftruncate(fd, length)
            #endif
        },
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
