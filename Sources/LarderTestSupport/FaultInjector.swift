#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Larder

/// A table of system calls (Larder's fault-injection seam, `SystemCalls`) that behaves like
/// `SystemCalls.live` until told to fail: it counts every call by kind and makes the Nth call of
/// a chosen kind (counted from `arm`), or every call of it from the Nth on, fail with an errno,
/// transfer fewer bytes than asked, or transfer none, optionally only for the paths a filter
/// accepts. The one injector of the library's tests and of the SPT conformance tests (the Swift
/// meaning of SPT's `SPTPersistentCachePosixWrapperMock` and `NSFileManagerMock`). Thread-safe.
package final class FaultInjector: Sendable {
    package enum Kind: String, CaseIterable, Sendable, Hashable, CustomStringConvertible {
        case open, close, pread, write, pwrite, fsync, fstat, lstat, rename, unlink, mkdir, rmdir
        case flock, ftruncate, statvfs, listDirectory
        package var description: String { rawValue }
        /// Whether the call transfers bytes, so that it can be made short.
        package var transfers: Bool { self == .pread || self == .write || self == .pwrite }
    }

    package enum Fault: Sendable, Hashable, CustomStringConvertible {
        /// Return -1 with this errno.
        case fail(Int32)
        /// Transfer at most half of what was asked (at least one byte).
        case short
        /// Report 0 bytes transferred (SPT's mock `writeValue = 0`).
        case transferNothing

        package var description: String {
            switch self {
            case .short: "short"
            case .transferNothing: "nothing"
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

    package init() {}

    /// Resets the counters and fails the `nth` (1-based) call of `kind` from now on, and with
    /// `persistent` every later one too. With `onlyPaths`, only calls on the paths it accepts
    /// count and fail (a descriptor's path is read from `/proc/self/fd`).
    package func arm(
        _ kind: Kind, nth: Int = 1, _ fault: Fault, persistent: Bool = false, onlyPaths: (@Sendable (String) -> Bool)? = nil
    ) {
        state.withLock { $0 = State(plan: Plan(kind: kind, nth: nth, fault: fault, persistent: persistent, paths: onlyPaths)) }
    }

    /// Fails every call of `kind` from now on (those on paths `onlyPaths` accepts, when given).
    package func arm(every kind: Kind, _ fault: Fault, onlyPaths: (@Sendable (String) -> Bool)? = nil) {
        arm(kind, nth: 1, fault, persistent: true, onlyPaths: onlyPaths)
    }

    /// Stops failing and resets the counters.
    package func disarm() { state.withLock { $0 = State() } }

    /// Calls of each kind since the last `arm` or `disarm`.
    package var counts: [Kind: Int] { state.withLock { $0.counts } }

    /// How many calls were failed or shortened since the last `arm`.
    package var fired: Int { state.withLock { $0.fired } }

    /// Whether the plan filters the paths of calls of `kind`: only then is a call's path worked out.
    private func filtersPaths(of kind: Kind) -> Bool {
        state.withLock { $0.plan?.kind == kind && $0.plan?.paths != nil }
    }

    /// Counts a call and says which fault, if any, it must suffer. `path` is computed only when
    /// the plan filters the paths of `kind`.
    private func fault(for kind: Kind, path: @autoclosure () -> String? = nil) -> Fault? {
        state.withLock { s in
            if let filter = s.plan?.paths, s.plan?.kind == kind, let path = path(), !filter(path) { return nil }
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
    /// saving `errno`) followed by `path`, so that path filters see whole paths. Without `path`,
    /// the path of what `directory` has open.
    package static func path(_ directory: Int32, _ path: UnsafePointer<CChar>? = nil) -> String {
        let name = path.map { String(cString: $0) }
        if let name, directory == SystemCalls.atCurrentDirectory || name.hasPrefix("/") { return name }
        let saved = errno
        defer { errno = saved }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(directory)", &buffer, buffer.count - 1)
        guard n > 0 else { return name ?? "" }
        let folder = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let name, name != "." else { return folder }
        return folder + "/" + name
    }

    private static func failing<T: FixedWidthInteger>(_ error: Int32) -> T {
        errno = error
        return -1
    }

    /// What a call that transfers `count` bytes does under `fault`: `nil` to make the call whole.
    private static func transfer<T: FixedWidthInteger>(_ fault: Fault?, _ count: Int, _ call: (Int) -> T) -> T {
        switch fault {
        case .fail(let e)?: return failing(e)
        case .short?: return call(max(1, count / 2))
        case .transferNothing?: return 0
        case nil: return call(count)
        }
    }

    /// The table to hand to `DiskCache(options:systemCalls:)`.
    package var calls: SystemCalls {
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
            // The path while the descriptor still names it.
            let path = filtersPaths(of: .close) ? Self.path(fd) : nil
            // Like Linux: the descriptor is gone whatever close reports.
            let result = live.close(fd)
            if case .fail(let e)? = fault(for: .close, path: path) { return Self.failing(e) }
            return result
        }
        calls.pread = { [self] fd, buffer, count, offset in
            Self.transfer(fault(for: .pread, path: Self.path(fd)), count) { live.pread(fd, buffer, $0, offset) }
        }
        calls.write = { [self] fd, buffer, count in
            Self.transfer(fault(for: .write, path: Self.path(fd)), count) { live.write(fd, buffer, $0) }
        }
        calls.pwrite = { [self] fd, buffer, count, offset in
            Self.transfer(fault(for: .pwrite, path: Self.path(fd)), count) { live.pwrite(fd, buffer, $0, offset) }
        }
        calls.fsync = { [self] fd in
            if case .fail(let e)? = fault(for: .fsync, path: Self.path(fd)) { return Self.failing(e) }
            return live.fsync(fd)
        }
        calls.fstat = { [self] fd, buf in
            if case .fail(let e)? = fault(for: .fstat, path: Self.path(fd)) { return Self.failing(e) }
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
            if case .fail(let e)? = fault(for: .flock, path: Self.path(fd)) { return Self.failing(e) }
            return live.flock(fd, operation)
        }
        calls.ftruncate = { [self] fd, length in
            if case .fail(let e)? = fault(for: .ftruncate, path: Self.path(fd)) { return Self.failing(e) }
            return live.ftruncate(fd, length)
        }
        calls.statvfs = { [self] path, buf in
            if case .fail(let e)? = fault(for: .statvfs, path: String(cString: path)) { return Self.failing(e) }
            return live.statvfs(path, buf)
        }
        calls.listDirectory = { [self] directory in
            if let fault = fault(for: .listDirectory, path: Self.path(directory)) {
                if case .fail(let e) = fault { errno = e }
                return nil
            }
            return live.listDirectory(directory)
        }
        return calls
    }
}
