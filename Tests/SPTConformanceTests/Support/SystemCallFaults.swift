#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@testable import Larder

/// The Swift meaning of SPT's `SPTPersistentCachePosixWrapperMock` and `NSFileManagerMock`: a
/// table of system calls (Larder's fault-injection seam, `SystemCalls`) that behaves like
/// `SystemCalls.live` until armed, then fails every call of one kind, optionally only for some
/// paths, until disarmed. Thread-safe.
final class SystemCallFaults: Sendable {
    enum Kind: Sendable, Hashable {
        case open, close, pread, pwrite, write, fsync, fstat, unlink, mkdir, listDirectory, statvfs
    }

    enum Fault: Sendable, Hashable {
        /// Return -1 with this errno.
        case fail(Int32)
        /// Report 0 bytes transferred (SPT's mock `writeValue = 0`).
        case transferNothing
    }

    private struct Plan: Sendable {
        var kind: Kind
        var fault: Fault
        var paths: (@Sendable (String) -> Bool)?
    }

    private let state = LarderMutex<(plan: Plan?, fired: Int)>((nil, 0))

    /// Fails every call of `kind` from now on (those on paths `onlyPaths` accepts, when given).
    func arm(_ kind: Kind, _ fault: Fault, onlyPaths: (@Sendable (String) -> Bool)? = nil) {
        state.withLock { $0 = (Plan(kind: kind, fault: fault, paths: onlyPaths), 0) }
    }

    /// Stops failing.
    func disarm() { state.withLock { $0.plan = nil } }

    /// How many calls failed since the last `arm`.
    var fired: Int { state.withLock { $0.fired } }

    /// The fault a call of `kind` on `path` (computed only when a filter asks) must suffer.
    private func fault(_ kind: Kind, path: @autoclosure () -> String) -> Fault? {
        state.withLock { s in
            guard let plan = s.plan, plan.kind == kind else { return nil }
            if let filter = plan.paths, !filter(path()) { return nil }
            s.fired += 1
            return plan.fault
        }
    }

    /// The path a descriptor, or a name relative to a folder descriptor, stands for.
    private static func path(_ fd: Int32, _ name: UnsafePointer<CChar>? = nil) -> String {
        let relative = name.map { String(cString: $0) }
        if let relative, fd == SystemCalls.atCurrentDirectory || relative.hasPrefix("/") { return relative }
        let saved = errno
        defer { errno = saved }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        let folder = n > 0 ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        guard let relative, relative != "." else { return folder }
        return folder + "/" + relative
    }

    private static func failing<T: FixedWidthInteger>(_ fault: Fault) -> T {
        guard case .fail(let error) = fault else { return 0 }
        errno = error
        return -1
    }

    /// The table to hand to `DiskCache(options:systemCalls:)`.
    var calls: SystemCalls {
        let live = SystemCalls.live
        var calls = live
        calls.openat = { [self] directory, name, flags, mode in
            if let f = fault(.open, path: Self.path(directory, name)) { return Self.failing(f) }
            return live.openat(directory, name, flags, mode)
        }
        calls.openBeneath = { [self] directory, name, flags, mode in
            if let f = fault(.open, path: Self.path(directory, name)) { return Self.failing(f) }
            return live.openBeneath(directory, name, flags, mode)
        }
        calls.close = { [self] fd in
            let path = state.withLock { $0.plan?.kind == .close } ? Self.path(fd) : ""
            // As on Linux: the descriptor is gone whatever close reports.
            let result = live.close(fd)
            if let f = fault(.close, path: path) { return Self.failing(f) }
            return result
        }
        calls.pread = { [self] fd, buffer, count, offset in
            if let f = fault(.pread, path: Self.path(fd)) { return Self.failing(f) }
            return live.pread(fd, buffer, count, offset)
        }
        calls.pwrite = { [self] fd, buffer, count, offset in
            if let f = fault(.pwrite, path: Self.path(fd)) { return Self.failing(f) }
            return live.pwrite(fd, buffer, count, offset)
        }
        calls.write = { [self] fd, buffer, count in
            if let f = fault(.write, path: Self.path(fd)) { return Self.failing(f) }
            return live.write(fd, buffer, count)
        }
        calls.fsync = { [self] fd in
            if let f = fault(.fsync, path: Self.path(fd)) { return Self.failing(f) }
            return live.fsync(fd)
        }
        calls.fstat = { [self] fd, buf in
            if let f = fault(.fstat, path: Self.path(fd)) { return Self.failing(f) }
            return live.fstat(fd, buf)
        }
        // SPT's `stat` takes a path: `fstatat` is the same fault.
        calls.fstatat = { [self] directory, name, buf, flags in
            if let f = fault(.fstat, path: Self.path(directory, name)) { return Self.failing(f) }
            return live.fstatat(directory, name, buf, flags)
        }
        calls.unlinkat = { [self] directory, name, flags in
            if flags & AT_REMOVEDIR == 0, let f = fault(.unlink, path: Self.path(directory, name)) { return Self.failing(f) }
            return live.unlinkat(directory, name, flags)
        }
        calls.mkdirat = { [self] directory, name, mode in
            if let f = fault(.mkdir, path: Self.path(directory, name)) { return Self.failing(f) }
            return live.mkdirat(directory, name, mode)
        }
        calls.statvfs = { [self] name, buf in
            if let f = fault(.statvfs, path: String(cString: name)) { return Self.failing(f) }
            return live.statvfs(name, buf)
        }
        calls.listDirectory = { [self] directory in
            if let f = fault(.listDirectory, path: Self.path(directory)) {
                if case .fail(let error) = f { errno = error }
                return nil
            }
            return live.listDirectory(directory)
        }
        return calls
    }
}
