#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
@testable import Larder

/// A file system in memory behind the syscall seam: hand ``calls`` to
/// `DiskCache(options:systemCalls:)` and the cache runs on it as on a real disk.
///
/// It keeps a ``DiskImage`` (what the running process sees), a table of open descriptors (each
/// with its node and offset), and a trace of every call that changes state, in order: create,
/// mkdir, write, pwrite, ftruncate, rename, unlink, fsync, close, fchmod. ``CrashStates`` turns
/// a prefix of that trace into the images a power loss may leave.
///
/// Paths resolve relative to a folder descriptor (absolute ones from `/`, as with `AT_FDCWD`),
/// one component at a time; there are no links, so `O_NOFOLLOW` and `RESOLVE_NO_SYMLINKS` hold
/// trivially. `flock` always succeeds (one process). Thread-safe: the cache's background index
/// build calls it from another thread.
final class SimulatedDisk: Sendable {
    fileprivate struct Descriptor {
        var node: Int
        var offset = 0
        var canRead: Bool
        var canWrite: Bool
    }

    fileprivate struct State {
        var image: DiskImage
        var descriptors: [Int32: Descriptor] = [:]
        /// Far from the process's real descriptors, so a mix-up fails loudly.
        var nextDescriptor: Int32 = 10_000
        var trace: [DiskOperation] = []
    }

    /// The image the trace starts from: what was on disk, all of it durable.
    let initial: DiskImage
    private let state: LarderMutex<State>

    /// The volume's size as `statvfs` reports it: 1 GiB in 4 KiB blocks.
    static let volumeBlocks = 1 << 18

    /// A disk holding `image`, all of it durable.
    init(_ image: DiskImage = .empty) {
        initial = image
        state = LarderMutex(State(image: image))
    }

    /// What the running process sees now.
    var image: DiskImage { state.withLock { $0.image } }

    /// Every state-changing call so far, in order.
    var trace: [DiskOperation] { state.withLock { $0.trace } }

    /// The number of calls in the trace so far: the crash point "just after everything done until now".
    var traceCount: Int { state.withLock { $0.trace.count } }

    /// How many descriptors are open.
    var openDescriptorCount: Int { state.withLock { $0.descriptors.count } }

    // MARK: - The calls

    /// The table to hand to `DiskCache(options:systemCalls:)`. `pipe` and `poll` (the memory
    /// tier's pressure watcher) are the real ones.
    var calls: SystemCalls {
        var calls = SystemCalls.live
        calls.openat = { [self] directory, path, flags, mode in
            run { try $0.open(directory, String(cString: path), flags, mode, beneath: false) }
        }
        calls.openBeneath = { [self] directory, path, flags, mode in
            run { try $0.open(directory, String(cString: path), flags, mode, beneath: true) }
        }
        calls.close = { [self] fd in
            run { s in
                guard let descriptor = s.descriptors.removeValue(forKey: fd) else { throw SimulatedError(EBADF) }
                s.record(.close(node: descriptor.node))
                return 0
            }
        }
        calls.pread = { [self] fd, buffer, count, offset in
            run { s in
                let descriptor = try s.descriptor(fd)
                guard descriptor.canRead else { throw SimulatedError(EBADF) }
                let node = s.image[descriptor.node]!
                guard node.kind == .file else { throw SimulatedError(EISDIR) }
                let start = min(Int(offset), node.data.count)
                let n = min(count, node.data.count - start)
                node.data.withUnsafeBytes { bytes in
                    if n > 0 { buffer.copyMemory(from: bytes.baseAddress! + start, byteCount: n) }
                }
                return n
            }
        }
        calls.write = { [self] fd, buffer, count in
            run { s in
                let descriptor = try s.writableFile(fd)
                s.record(
                    .write(
                        node: descriptor.node, offset: descriptor.offset, bytes: Array(UnsafeRawBufferPointer(start: buffer, count: count)))
                )
                s.descriptors[fd]!.offset += count
                return count
            }
        }
        calls.pwrite = { [self] fd, buffer, count, offset in
            run { s in
                let descriptor = try s.writableFile(fd)
                s.record(
                    .write(node: descriptor.node, offset: Int(offset), bytes: Array(UnsafeRawBufferPointer(start: buffer, count: count))))
                return count
            }
        }
        calls.fsync = { [self] fd in
            run { s in
                s.record(.fsync(node: try s.descriptor(fd).node))
                return 0
            }
        }
        calls.fstat = { [self] fd, buf in
            run { s in
                buf.pointee = try s.stat(of: s.descriptor(fd).node)
                return 0
            }
        }
        calls.fstatat = { [self] directory, path, buf, _ in
            run { s in
                let (parent, name) = try s.resolveParent(directory, String(cString: path), beneath: false)
                guard let node = name.map({ s.image.lookup(parent, $0) }) ?? parent else { throw SimulatedError(ENOENT) }
                buf.pointee = s.stat(of: node)
                return 0
            }
        }
        calls.renameat = { [self] fromDirectory, from, toDirectory, to in
            run { try $0.rename(fromDirectory, String(cString: from), toDirectory, String(cString: to)) }
        }
        calls.unlinkat = { [self] directory, path, flags in
            run { try $0.unlink(directory, String(cString: path), removesFolder: flags & AT_REMOVEDIR != 0) }
        }
        calls.mkdirat = { [self] directory, path, mode in
            run { s in
                let (parent, name) = try s.resolveParent(directory, String(cString: path), beneath: false)
                guard let name else { throw SimulatedError(EEXIST) }
                guard s.image.lookup(parent, name) == nil else { throw SimulatedError(EEXIST) }
                let node = s.image.allocateNode()
                s.record(.mkdir(parent: parent, name: name, node: node, mode: UInt16(mode) & ~0o022))
                return 0
            }
        }
        calls.flock = { [self] fd, _ in
            run { s in
                _ = try s.descriptor(fd)
                return 0
            }
        }
        calls.ftruncate = { [self] fd, length in
            run { s in
                let descriptor = try s.writableFile(fd)
                guard length >= 0 else { throw SimulatedError(EINVAL) }
                s.record(.truncate(node: descriptor.node, length: Int(length)))
                return 0
            }
        }
        calls.fchmod = { [self] fd, mode in
            run { s in
                s.record(.chmod(node: try s.descriptor(fd).node, mode: UInt16(mode) & 0o7777))
                return 0
            }
        }
        calls.statvfs = { [self] _, buf in
            run { s in
                let used = s.image.usedBlocks
                var info = StatVFS()
                info.f_bsize = 4096
                info.f_frsize = 4096
                info.f_blocks = fsblkcnt_t(Self.volumeBlocks)
                info.f_bfree = fsblkcnt_t(max(0, Self.volumeBlocks - used))
                info.f_bavail = info.f_bfree
                buf.pointee = info
                return 0
            }
        }
        calls.listDirectory = { [self] fd in
            let result: [DirectoryEntry]? = state.withLock { s in
                guard let descriptor = s.descriptors[fd] else {
                    errno = EBADF
                    return nil
                }
                guard let node = s.image[descriptor.node], node.kind == .directory else {
                    errno = ENOTDIR
                    return nil
                }
                return node.entries.sorted { $0.key < $1.key }.map {
                    DirectoryEntry(fileName: FileName($0.key), isDirectory: s.image[$0.value]?.kind == .directory)
                }
            }
            return result
        }
        return calls
    }

    /// Runs a call under the lock, turning a thrown ``SimulatedError`` into -1 and `errno`.
    private func run<T: FixedWidthInteger>(_ body: (inout State) throws -> T) -> T {
        do {
            return try state.withLock { s in try body(&s) }
        } catch {
            errno = (error as? SimulatedError)?.code ?? EIO
            return -1
        }
    }
}

/// The C `stat` structure, named apart from ``SimulatedDisk/State/stat(of:)``.
private typealias CStat = stat

/// A failed simulated call's `errno`.
private struct SimulatedError: Error {
    var code: Int32
    init(_ code: Int32) { self.code = code }
}

extension SimulatedDisk.State {
    mutating func record(_ operation: DiskOperation) {
        image.apply(operation)
        trace.append(operation)
    }

    func descriptor(_ fd: Int32) throws(SimulatedError) -> SimulatedDisk.Descriptor {
        guard let descriptor = descriptors[fd] else { throw SimulatedError(EBADF) }
        return descriptor
    }

    func writableFile(_ fd: Int32) throws(SimulatedError) -> SimulatedDisk.Descriptor {
        let descriptor = try descriptor(fd)
        guard descriptor.canWrite else { throw SimulatedError(EBADF) }
        guard image[descriptor.node]?.kind == .file else { throw SimulatedError(EISDIR) }
        return descriptor
    }

    /// The folder a path starts from: `/` for an absolute path or `AT_FDCWD`, else the folder open at `directory`.
    func start(_ directory: Int32, _ path: String, beneath: Bool) throws(SimulatedError) -> Int {
        if path.hasPrefix("/") {
            if beneath { throw SimulatedError(EXDEV) }
            return DiskImage.rootNode
        }
        if directory == SystemCalls.atCurrentDirectory { return DiskImage.rootNode }
        let node = try descriptor(directory).node
        guard image[node]?.kind == .directory else { throw SimulatedError(ENOTDIR) }
        return node
    }

    /// The folder that holds a path's last component, and that component (`nil` when the path
    /// names the starting folder itself: "", "." or "/").
    func resolveParent(_ directory: Int32, _ path: String, beneath: Bool) throws(SimulatedError) -> (parent: Int, name: String?) {
        var node = try start(directory, path, beneath: beneath)
        var components = path.split(separator: "/").map(String.init).filter { $0 != "." }
        // Larder never sends `..` (`CacheRoot` refuses it); a path that does is a bug to see.
        if components.contains("..") { throw SimulatedError(EXDEV) }
        guard let last = components.popLast() else { return (node, nil) }
        for component in components {
            guard let next = image.lookup(node, component) else { throw SimulatedError(ENOENT) }
            guard image[next]?.kind == .directory else { throw SimulatedError(ENOTDIR) }
            node = next
        }
        return (node, last)
    }

    mutating func open(_ directory: Int32, _ path: String, _ flags: Int32, _ mode: mode_t, beneath: Bool) throws(SimulatedError) -> Int32 {
        let (parent, name) = try resolveParent(directory, path, beneath: beneath)
        let access = flags & O_ACCMODE
        let node: Int
        if let existing = name.map({ image.lookup(parent, $0) }) ?? parent {
            if flags & O_CREAT != 0, flags & O_EXCL != 0 { throw SimulatedError(EEXIST) }
            let kind = image[existing]!.kind
            if kind == .directory, access != O_RDONLY { throw SimulatedError(EISDIR) }
            if kind == .file, flags & O_DIRECTORY != 0 { throw SimulatedError(ENOTDIR) }
            if kind == .file, flags & O_TRUNC != 0, access != O_RDONLY { record(.truncate(node: existing, length: 0)) }
            node = existing
        } else {
            guard flags & O_CREAT != 0, let name else { throw SimulatedError(ENOENT) }
            guard flags & O_DIRECTORY == 0 else { throw SimulatedError(EINVAL) }
            node = image.allocateNode()
            record(.create(parent: parent, name: name, node: node, mode: UInt16(mode) & ~0o022))
        }
        let fd = nextDescriptor
        nextDescriptor += 1
        descriptors[fd] = SimulatedDisk.Descriptor(node: node, canRead: access != O_WRONLY, canWrite: access != O_RDONLY)
        return fd
    }

    mutating func rename(_ fromDirectory: Int32, _ from: String, _ toDirectory: Int32, _ to: String) throws(SimulatedError) -> Int32 {
        let (fromParent, fromName) = try resolveParent(fromDirectory, from, beneath: false)
        let (toParent, toName) = try resolveParent(toDirectory, to, beneath: false)
        guard let fromName, let toName else { throw SimulatedError(EBUSY) }
        guard let node = image.lookup(fromParent, fromName) else { throw SimulatedError(ENOENT) }
        if let target = image.lookup(toParent, toName) {
            if target == node { return 0 }
            switch (image[node]!.kind, image[target]!.kind) {
            case (.file, .directory): throw SimulatedError(EISDIR)
            case (.directory, .file): throw SimulatedError(ENOTDIR)
            case (.directory, .directory) where !image[target]!.entries.isEmpty: throw SimulatedError(ENOTEMPTY)
            default: break
            }
        }
        record(.rename(fromParent: fromParent, fromName: fromName, toParent: toParent, toName: toName, node: node))
        return 0
    }

    mutating func unlink(_ directory: Int32, _ path: String, removesFolder: Bool) throws(SimulatedError) -> Int32 {
        let (parent, name) = try resolveParent(directory, path, beneath: false)
        guard let name else { throw SimulatedError(EBUSY) }
        guard let node = image.lookup(parent, name) else { throw SimulatedError(ENOENT) }
        let entry = image[node]!
        if removesFolder {
            guard entry.kind == .directory else { throw SimulatedError(ENOTDIR) }
            guard entry.entries.isEmpty else { throw SimulatedError(ENOTEMPTY) }
        } else if entry.kind == .directory {
            throw SimulatedError(EISDIR)
        }
        record(.unlink(parent: parent, name: name, node: node))
        return 0
    }

    func stat(of node: Int) -> CStat {
        let entry = image[node]!
        var info = CStat()
        info.st_dev = 0x51D
        info.st_ino = ino_t(node)
        info.st_mode = (entry.kind == .directory ? S_IFDIR : S_IFREG) | mode_t(entry.mode)
        // A folder counts its own `.` too, so a linked one never reports 0.
        info.st_nlink = nlink_t(entry.kind == .directory ? entry.links + 1 : entry.links)
        info.st_uid = geteuid()
        info.st_gid = getegid()
        info.st_size = off_t(entry.data.count)
        info.st_blksize = 4096
        info.st_blocks = blkcnt_t((entry.data.count + 4095) / 4096 * 8)
        // One second per operation: the clock never shows two operations in one tick.
        let time = timespec(tv_sec: 1_700_000_000 + entry.modified, tv_nsec: 0)
        #if canImport(Darwin)
        info.st_mtimespec = time
        info.st_ctimespec = time
        #else
        info.st_mtim = time
        info.st_ctim = time
        #endif
        return info
    }
}

extension DiskImage {
    /// 4 KiB blocks the linked files occupy (orphans too: a simulated disk never reclaims them).
    var usedBlocks: Int {
        var blocks = 0
        for node in nodes.values where node.kind == .file { blocks += (node.data.count + 4095) / 4096 }
        return blocks
    }
}
