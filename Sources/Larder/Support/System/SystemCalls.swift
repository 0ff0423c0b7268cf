#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// One forwarder per call: at file scope the unqualified names are the C library's, on Glibc and
// Darwin alike (inside `SystemCalls` they would name its own properties).
private func c_openat(_ dir: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    openat(dir, path, flags, mode)
}
private func c_close(_ fd: Int32) -> Int32 { close(fd) }
private func c_dup(_ fd: Int32) -> Int32 { dup(fd) }
private func c_pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: off_t) -> Int {
    pread(fd, buffer, count, offset)
}
private func c_write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
private func c_pwrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: off_t) -> Int { pwrite(fd, buffer, count, offset) }
private func c_fsync(_ fd: Int32) -> Int32 { fsync(fd) }
private func c_fstat(_ fd: Int32, _ buf: UnsafeMutablePointer<stat>) -> Int32 { fstat(fd, buf) }
private func c_fstatat(_ dir: Int32, _ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<stat>, _ flags: Int32) -> Int32 {
    fstatat(dir, path, buf, flags)
}
private func c_renameat(_ fromDir: Int32, _ from: UnsafePointer<CChar>, _ toDir: Int32, _ to: UnsafePointer<CChar>) -> Int32 {
    renameat(fromDir, from, toDir, to)
}
private func c_unlinkat(_ dir: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32) -> Int32 { unlinkat(dir, path, flags) }
private func c_mkdirat(_ dir: Int32, _ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32 { mkdirat(dir, path, mode) }
private func c_ftruncate(_ fd: Int32, _ length: off_t) -> Int32 { ftruncate(fd, length) }
private func c_fchmod(_ fd: Int32, _ mode: mode_t) -> Int32 { fchmod(fd, mode) }
private func c_pipe(_ fds: UnsafeMutablePointer<Int32>) -> Int32 { pipe(fds) }
private func c_poll(_ fds: UnsafeMutablePointer<pollfd>, _ count: Int, _ timeout: Int32) -> Int32 { poll(fds, nfds_t(count), timeout) }

#if os(Linux)
/// `syscall(2)`, looked up once and called through a non-variadic type: Swift cannot call a C
/// variadic function. Sound on Linux's x86-64 and AArch64 ABIs, where glibc's `syscall` is
/// assembly that moves its integer arguments into the kernel's registers and never reads a
/// `va_list`. `nil` when the lookup fails.
private typealias RawSyscall4 = @convention(c) (Int, Int, UnsafeRawPointer, UnsafeRawPointer, Int) -> Int
private let rawSyscall: RawSyscall4? = dlsym(nil, "syscall").map { unsafeBitCast($0, to: RawSyscall4.self) }
/// `SYS_openat2`, the same number on every Linux architecture (Linux 5.6).
private let openat2Number = 437

/// `openat2(directory, path, {flags, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS})`: the whole path resolved beneath `directory`, failing with `ELOOP` at
/// any link and `EXDEV` on any way out. `ENOSYS` where the kernel (or a seccomp filter) lacks it.
private func c_openBeneath(_ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    guard let rawSyscall else {
        errno = ENOSYS
        return -1
    }
    // struct open_how { u64 flags; u64 mode; u64 resolve; }; the mode must be 0 unless creating.
    let creates = flags & O_CREAT != 0
    var how: (UInt64, UInt64, UInt64) = (UInt64(UInt32(bitPattern: flags)), creates ? UInt64(mode) : 0, 0x08 | 0x04 | 0x02)
    let result = withUnsafePointer(to: &how) { pointer in
        rawSyscall(
            openat2Number, Int(directory), UnsafeRawPointer(path), UnsafeRawPointer(pointer), MemoryLayout<(UInt64, UInt64, UInt64)>.size)
    }
    return Int32(truncatingIfNeeded: result)
}
#else
private func c_openBeneath(_ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    errno = ENOSYS
    return -1
}
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
/// `SEEK_HOLE` (the Glibc module does not export it): 4 on Linux, 3 on Darwin.
#if canImport(Darwin)
private let seekHoleWhence: Int32 = 3
#else
private let seekHoleWhence: Int32 = 4
#endif

private func c_lseek(_ fd: Int32, _ offset: off_t, _ whence: Int32) -> off_t { lseek(fd, offset, whence) }

/// `EINTR`, loops over short reads and writes, turns failures into ``Errno`` values, and resolves
/// paths beneath a cache's root one component at a time.
///
/// Calls that take a path take it relative to a directory descriptor (the `*at` family), so that
/// ``FileIO`` never hands the kernel a path that could be resolved through a link planted in a
/// cache folder. `AT_FDCWD` (``atCurrentDirectory``) makes them take an absolute path.
package struct SystemCalls: Sendable {
    package var openat: @Sendable (_ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`: a relative
    /// path of several components opened beneath `directory` in one call, never through a link.
    /// Fails with `ENOSYS` where the kernel lacks it (before Linux 5.6, other systems); ``FileIO``
    /// then walks the path with ``openat``.
    package var openBeneath: @Sendable (_ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32
    package var close: @Sendable (_ fd: Int32) -> Int32
    package var pread: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: off_t) -> Int
    package var write: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int
    package var pwrite: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: off_t) -> Int
    package var fsync: @Sendable (_ fd: Int32) -> Int32
    package var fstat: @Sendable (_ fd: Int32, _ buf: UnsafeMutablePointer<stat>) -> Int32
    /// `lseek(fd, offset, SEEK_HOLE)`: the offset of the first hole at or after `offset` (the
    /// file's end when it has none, or when the file system does not tell), or -1.
    package var seekHole: @Sendable (_ fd: Int32, _ offset: off_t) -> off_t
    /// `fstatat`; ``FileIO`` always passes `AT_SYMLINK_NOFOLLOW` (``CacheRoot/isRemoved`` follows the root's own path).
    package var fstatat:
        @Sendable (_ directory: Int32, _ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<stat>, _ flags: Int32) -> Int32
    package var renameat:
        @Sendable (_ fromDirectory: Int32, _ from: UnsafePointer<CChar>, _ toDirectory: Int32, _ to: UnsafePointer<CChar>) -> Int32
    /// `unlinkat`: removes a file, or an empty folder with `AT_REMOVEDIR`. Never recursive.
    package var unlinkat: @Sendable (_ directory: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32) -> Int32
    package var mkdirat: @Sendable (_ directory: Int32, _ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32
    package var flock: @Sendable (_ fd: Int32, _ operation: Int32) -> Int32
    package var ftruncate: @Sendable (_ fd: Int32, _ length: off_t) -> Int32
    package var fchmod: @Sendable (_ fd: Int32, _ mode: mode_t) -> Int32
    package var statvfs: @Sendable (_ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<statvfs>) -> Int32
    /// Lists the entries (without `.` and `..`) of the folder open at `directory`, each with its
    /// name's exact bytes and whether it is a folder (`nil` when the file system does not say).
    /// Leaves `directory` open. Returns `nil` and sets `errno` on failure.
    package var listDirectory: @Sendable (_ directory: Int32) -> [DirectoryEntry]?
    /// `pipe`, for the memory-pressure watcher's wake-up pipe.
    package var pipe: @Sendable (_ fds: UnsafeMutablePointer<Int32>) -> Int32
    /// `poll` over `count` descriptors; `timeout` in milliseconds, -1 for none.
    package var poll: @Sendable (_ fds: UnsafeMutablePointer<pollfd>, _ count: Int, _ timeout: Int32) -> Int32

    /// The directory descriptor that makes the `*at` calls take paths as `open` would (`AT_FDCWD`).
    package static let atCurrentDirectory: Int32 = AT_FDCWD

    /// The C library's calls.
    package static let live = SystemCalls(
        openat: c_openat,
        openBeneath: c_openBeneath,
        close: c_close,
        pread: c_pread,
        write: c_write,
        pwrite: c_pwrite,
        fsync: c_fsync,
        fstat: c_fstat,
        seekHole: { fd, offset in c_lseek(fd, offset, seekHoleWhence) },
        fstatat: c_fstatat,
        renameat: c_renameat,
        unlinkat: c_unlinkat,
        mkdirat: c_mkdirat,
        flock: { fd, operation in cFlock(fd, operation) },
        ftruncate: c_ftruncate,
        fchmod: c_fchmod,
        statvfs: { path, buf in cStatvfs(path, buf) },
        listDirectory: { directory in
            // fdopendir takes the descriptor it is given; hand it a duplicate, rewound.
            let copy = c_dup(directory)
            guard copy >= 0 else { return nil }
            guard let dir = fdopendir(copy) else {
                let error = errno
                _ = c_close(copy)
                errno = error
                return nil
            }
            defer { closedir(dir) }
            rewinddir(dir)
            var entries: [DirectoryEntry] = []
            while true {
                errno = 0
                guard let entry = readdir(dir) else {
                    if errno != 0 { return nil }
                    break
                }
                // The name's bytes as they are: a name that is not UTF-8 is kept exactly, never
                // repaired into another file's name.
                let name = withUnsafePointer(to: entry.pointee.d_name) { tuple in
                    tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { name in
                        FileName(bytes: UnsafeRawBufferPointer(start: name, count: strlen(name)))
                    }
                }
                if name.string == "." || name.string == ".." { continue }
                let type = entry.pointee.d_type
                let isDirectory: Bool? = type == UInt8(DT_UNKNOWN) ? nil : type == UInt8(DT_DIR)
                entries.append(DirectoryEntry(fileName: name, isDirectory: isDirectory))
            }
            return entries
        },
        pipe: c_pipe,
        poll: c_poll
    )
}
