#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
@testable import Larder

/// A table of system calls that behaves like ``SystemCalls/live`` until told to fail: it counts
/// every call by kind and makes the Nth call of a chosen kind (counted from `arm`) fail with an
/// errno, or transfer fewer bytes than asked. Thread-safe.
final class FaultInjector: Sendable {
    enum Kind: String, CaseIterable, Sendable, Hashable, CustomStringConvertible {
        case open, close, pread, write, pwrite, fsync, fstat, lstat, rename, unlink, mkdir, rmdir
        case flock, ftruncate, statvfs, listDirectory
        var description: String { rawValue }
        /// Whether the call transfers bytes, so that it can be made short.
        var transfers: Bool { self == .pread || self == .write || self == .pwrite }
    }

    enum Fault: Sendable, Hashable, CustomStringConvertible {
        /// Return -1 with this errno.
        case fail(Int32)
        /// Transfer at most half of what was asked (at least one byte).
        case short

        var description: String {
            switch self {
            case .short: "short"
            case .fail(let e):
                switch e {
                case EIO: "EIO"
                case ENOSPC: "ENOSPC"
                case EINTR: "EINTR"
                case EACCES: "EACCES"
                case EROFS: "EROFS"
                case ENOENT: "ENOENT"
                default: "errno \(e)"
                }
            }
        }
    }

    private struct Plan {
        var kind: Kind
        var nth: Int
        var fault: Fault
        /// Keep failing every later call of the kind too (a full disk, a read-only folder).
        var persistent: Bool
        var paths: (@Sendable (String) -> Bool)?
    }

    private struct State {
        var counts: [Kind: Int] = [:]
        var plan: Plan?
        var fired = 0
    }

    private let state = LarderMutex(State())

    /// Resets the counters and fails the `nth` (1-based) call of `kind` from now on.
    func arm(_ kind: Kind, nth: Int = 1, _ fault: Fault, persistent: Bool = false, onlyPaths: (@Sendable (String) -> Bool)? = nil) {
        state.withLock { $0 = State(plan: Plan(kind: kind, nth: nth, fault: fault, persistent: persistent, paths: onlyPaths)) }
    }

    /// Stops failing and resets the counters.
    func disarm() { state.withLock { $0 = State() } }

    /// Calls of each kind since the last `arm` or `disarm`.
    var counts: [Kind: Int] { state.withLock { $0.counts } }

    /// How many calls were failed or shortened since the last `arm`.
    var fired: Int { state.withLock { $0.fired } }

    /// Counts a call and says which fault, if any, it must suffer.
    private func fault(for kind: Kind, path: String? = nil) -> Fault? {
        state.withLock { s in
            if let filter = s.plan?.paths, s.plan?.kind == kind, let path, !filter(path) { return nil }
            s.counts[kind, default: 0] += 1
            guard let plan = s.plan, plan.kind == kind else { return nil }
            let n = s.counts[kind]!
            guard n == plan.nth || (plan.persistent && n > plan.nth) else { return nil }
            s.fired += 1
            return plan.fault
        }
    }

    /// The absolute path a `*at` call names: `path` itself when absolute (or relative to the
    /// working directory), else the path of the folder open at `directory` (from `/proc/self/fd`,
    /// saving `errno`) followed by `path`, so that path filters see whole paths.
    static func path(_ directory: Int32, _ path: UnsafePointer<CChar>) -> String {
        let name = String(cString: path)
        if directory == SystemCalls.atCurrentDirectory || name.hasPrefix("/") { return name }
        let saved = errno
        defer { errno = saved }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(directory)", &buffer, buffer.count - 1)
        guard n > 0 else { return name }
        let folder = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name == "." ? folder : folder + "/" + name
    }

    private static func failing<T: FixedWidthInteger>(_ error: Int32) -> T {
        errno = error
        return -1
    }

    /// The table to hand to `DiskCache(options:systemCalls:)`.
    var calls: SystemCalls {
        let live = SystemCalls.live
        var calls = live
        calls.openat = { [self] directory, path, flags, mode in
            if case .fail(let e)? = fault(for: .open, path: Self.path(directory, path)) { return Self.failing(e) }
            return live.openat(directory, path, flags, mode)
        }
        calls.openBeneath = { [self] directory, path, flags, mode in
            if case .fail(let e)? = fault(for: .open, path: Self.path(directory, path)) { return Self.failing(e) }
            return live.openBeneath(directory, path, flags, mode)
        }
        calls.close = { [self] fd in
            // Like Linux: the descriptor is gone whatever close reports.
            let result = live.close(fd)
            if case .fail(let e)? = fault(for: .close) { return Self.failing(e) }
            return result
        }
        calls.pread = { [self] fd, buffer, count, offset in
            switch fault(for: .pread) {
            case .fail(let e)?: return Self.failing(e)
            case .short?: return live.pread(fd, buffer, max(1, count / 2), offset)
            case nil: return live.pread(fd, buffer, count, offset)
            }
        }
        calls.write = { [self] fd, buffer, count in
            switch fault(for: .write) {
            case .fail(let e)?: return Self.failing(e)
            case .short?: return live.write(fd, buffer, max(1, count / 2))
            case nil: return live.write(fd, buffer, count)
            }
        }
        calls.pwrite = { [self] fd, buffer, count, offset in
            switch fault(for: .pwrite) {
            case .fail(let e)?: return Self.failing(e)
            case .short?: return live.pwrite(fd, buffer, max(1, count / 2), offset)
            case nil: return live.pwrite(fd, buffer, count, offset)
            }
        }
        calls.fsync = { [self] fd in
            if case .fail(let e)? = fault(for: .fsync) { return Self.failing(e) }
            return live.fsync(fd)
        }
        calls.fstat = { [self] fd, buf in
            if case .fail(let e)? = fault(for: .fstat) { return Self.failing(e) }
            return live.fstat(fd, buf)
        }
        calls.fstatat = { [self] directory, path, buf, flags in
            if case .fail(let e)? = fault(for: .lstat, path: Self.path(directory, path)) { return Self.failing(e) }
            return live.fstatat(directory, path, buf, flags)
        }
        calls.renameat = { [self] fromDirectory, from, toDirectory, to in
            if case .fail(let e)? = fault(for: .rename, path: Self.path(toDirectory, to)) { return Self.failing(e) }
            return live.renameat(fromDirectory, from, toDirectory, to)
        }
        calls.unlinkat = { [self] directory, path, flags in
            let kind: Kind = flags & AT_REMOVEDIR != 0 ? .rmdir : .unlink
            if case .fail(let e)? = fault(for: kind, path: Self.path(directory, path)) { return Self.failing(e) }
            return live.unlinkat(directory, path, flags)
        }
        calls.mkdirat = { [self] directory, path, mode in
            if case .fail(let e)? = fault(for: .mkdir, path: Self.path(directory, path)) { return Self.failing(e) }
            return live.mkdirat(directory, path, mode)
        }
        calls.flock = { [self] fd, operation in
            if case .fail(let e)? = fault(for: .flock) { return Self.failing(e) }
            return live.flock(fd, operation)
        }
        calls.ftruncate = { [self] fd, length in
            if case .fail(let e)? = fault(for: .ftruncate) { return Self.failing(e) }
            return live.ftruncate(fd, length)
        }
        calls.statvfs = { [self] path, buf in
            if case .fail(let e)? = fault(for: .statvfs, path: String(cString: path)) { return Self.failing(e) }
            return live.statvfs(path, buf)
        }
        calls.listDirectory = { [self] directory in
            if case .fail(let e)? = fault(for: .listDirectory, path: Self.path(directory, ".")) {
                errno = e
                return nil
            }
            return live.listDirectory(directory)
        }
        return calls
    }
}
