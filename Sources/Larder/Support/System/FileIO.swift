#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The C `statvfs` structure (named apart from the function of the same name).
package typealias StatVFS = statvfs

/// Throwing wrappers over ``SystemCalls``: `EINTR` is retried in one place (never for `close`),
/// short reads and writes are looped over, and failures become ``Errno``.
///
/// A rooted `FileIO` (``rooted(at:)``) takes the absolute paths the rest of Larder builds, checks
/// that they lie beneath its ``CacheRoot``, and resolves them beneath the root's descriptor with
/// `openat`, `mkdirat`, `renameat`, `unlinkat` and `fstatat`, `O_NOFOLLOW` (or
/// `AT_SYMLINK_NOFOLLOW`) at every component: a path outside the root fails with
/// ``Errno/escapesRoot``, a link at any component with ``Errno/tooManySymbolicLinks`` (or
/// ``Errno/notADirectory``). Every file is opened `O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC`, so a
/// FIFO never blocks an open; on Linux a file opened for reading (only, or with writing) is also
/// opened `O_NOATIME`, so a read writes nothing (see `noAccessTime`). An unrooted `FileIO` takes
/// paths as they are (for the root's own parents), with the same flags on the last component.
package struct FileIO: Sendable {
    /// The calls underneath.
    package var calls: SystemCalls {
        get { table.calls }
        set { table = CallTable(newValue) }
    }
    /// ``calls``, behind one reference: a `FileIO` is copied into many closures on a read's
    /// path, and a copy of the table itself would retain and release each of its functions
    /// (the disk suite's `load-4k` of `larder-bench` measures the difference).
    private var table: CallTable
    /// The folder every path must lie beneath; `nil` for an unrooted `FileIO`.
    package private(set) var root: CacheRoot?
    /// The mode of folders this `FileIO` creates (0700: owner only), before the umask.
    package var folderMode: UInt16 = 0o700
    /// The mode of files this `FileIO` creates (0600: owner only), before the umask.
    package var fileMode: UInt16 = 0o600
    /// Whether created files and folders are given exactly ``folderMode`` and ``fileMode`` with
    /// `fchmod`, whatever the umask (for caches shared with a group).
    package var forcesModes = false

    /// Called when an open fails with `EMFILE` or `ENFILE`, to close descriptors its owner keeps
    /// open for speed (a ``DiskCache``'s kept record files); returns whether it closed any, in
    /// which case the open is retried once. `nil`: the failure is thrown at once.
    package var relievesDescriptorExhaustion: (@Sendable () -> Bool)?

    package init(calls: SystemCalls = .live) { table = CallTable(calls) }

    /// The flags every open gets: never follow a link at the last component, never block on a
    /// FIFO, never leak the descriptor into a child process.
    private static let safetyFlags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC

    /// `O_NOATIME` (Linux; the Glibc module does not export it: `01000000` in every Linux ABI
    /// Swift runs on), 0 elsewhere. Reading a record is no reason to write its inode: under
    /// `relatime` the first read after a store would otherwise dirty it, a journal write per
    /// fresh record. The same holds for a file Larder both reads and writes (a sharing writer's
    /// change log and sharing file, read under the change lock after each change wrote them: one
    /// journal write each per change otherwise). Nothing in Larder, or in SPTPersistentCache's
    /// format, reads a file's atime.
    private static let noAccessTime: Int32 = {
        #if os(Linux)
        return 0o1000000
        #else
        return 0
        #endif
    }()

    /// Runs `open` with `flags`, plus `noAccessTime` when they open a file for reading only (not
    /// creating it), or for reading and writing. The kernel refuses that flag with `EPERM` for a
    /// file this user does not own (a foreign cache opened read-only, a file of another user of
    /// a cache shared with a group), so that case is tried once more without it.
    private func openingForRead(_ flags: Int32, _ open: (Int32) -> Int32) throws(Errno) -> Int32 {
        let reads = flags & O_ACCMODE == O_RDWR || (flags & O_ACCMODE == O_RDONLY && flags & O_CREAT == 0)
        guard Self.noAccessTime != 0, reads, flags & O_DIRECTORY == 0 else {
            return try opening { open(flags) }
        }
        do {
            return try opening { open(flags | Self.noAccessTime) }
        } catch let error where error == .notPermitted {
            return try opening { open(flags) }
        }
    }

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

    /// ``retrying(_:)`` for a call that opens a descriptor: when it fails with `EMFILE` or
    /// `ENFILE` and ``relievesDescriptorExhaustion`` closed some, it is tried once more.
    private func opening(_ body: () -> Int32) throws(Errno) -> Int32 {
        do {
            return try retrying(body)
        } catch let error where error == .tooManyOpenFiles || error == .fileTableFull {
            guard let relieve = relievesDescriptorExhaustion, relieve() else { throw error }
            return try retrying(body)
        }
    }

    // MARK: - The root

    /// A `FileIO` rooted at the folder `path`: the folder is opened (`O_DIRECTORY`; links in
    /// `path` itself are followed, since the application chose it) and every later path must lie
    /// beneath it. Created first, with its missing parents, when `create` is set; with
    /// `syncCreated`, the parent of each folder created is synced, so that the new folders
    /// survive a power loss (else the first synced record could vanish with its folder).
    /// With `trust`, the folders directly beneath the root and the small files ``readFile(_:limit:)``
    /// reads must pass it (``CacheRoot/checkFolder(named:)``), else ``Errno/untrusted``.
    /// - Throws: ``Errno``: ``Errno/noSuchFileOrDirectory``, ``Errno/notADirectory``, ...
    package func rooted(
        at path: String, create: Bool = false, syncCreated: Bool = false, trust: FolderTrust? = nil
    ) throws(Errno) -> FileIO {
        var unrooted = self
        unrooted.root = nil
        if create {
            for folder in try unrooted.mkdirs(path) where syncCreated {
                try unrooted.syncFolder(Self.parentFolder(of: folder))
            }
        }
        let fd = try retrying {
            table.calls.openat(SystemCalls.atCurrentDirectory, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, 0)
        }
        let info: FileInfo
        do { info = try self.info(fd) } catch {
            close(fd)
            throw error
        }
        var rooted = self
        rooted.root = CacheRoot(path: path, fd: fd, info: info, calls: table.calls, trust: trust ?? root?.trust)
        return rooted
    }

    /// Runs `body` with a directory descriptor and a name in it that together mean `path`:
    /// beneath the root, one `openat(O_DIRECTORY | O_NOFOLLOW)` per intermediate folder.
    private func resolving<T>(_ path: String, _ body: (Int32, String) throws(Errno) -> T) throws(Errno) -> T {
        guard let root else { return try body(SystemCalls.atCurrentDirectory, path) }
        guard var components = root.components(of: path) else { throw .escapesRoot }
        guard let last = components.popLast() else { return try body(root.fd, ".") }
        if let first = components.first { try root.checkFolder(named: first) }
        var directory = root.fd
        defer { if directory != root.fd { close(directory) } }
        for component in components {
            let next = try Self.withCString(component) { (component) throws(Errno) in
                try opening { table.calls.openat(directory, component, O_RDONLY | O_DIRECTORY | Self.safetyFlags, 0) }
            }
            if directory != root.fd { close(directory) }
            directory = next
        }
        return try body(directory, last)
    }

    /// Runs `body` with `string` as a C string: a native string's own bytes. Passing a `String`
    /// where a closure of the table takes an `UnsafePointer<CChar>` copies it into a new array
    /// (`utf8CString`) on every call: on a 4 KiB read, an allocation and a free beside three
    /// system calls.
    private static func withCString<T>(_ string: String, _ body: (UnsafePointer<CChar>) throws(Errno) -> T) throws(Errno) -> T {
        try string.withCString { pointer in Result { () throws(Errno) in try body(pointer) } }.get()
    }

    // MARK: - Descriptors

    /// Opens `path` with `flags` plus `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`; a created file gets
    /// `mode` (default ``fileMode``). Beneath a root, a path of several components is opened with
    /// one `openat2` (no link, no way out) where the kernel has it, else walked.
    package func open(_ path: String, _ flags: Int32, mode: UInt16? = nil) throws(Errno) -> Int32 {
        let mode = mode_t(mode ?? fileMode)
        if let root, !root.beneathIsUnavailable.load(ordering: .relaxed) {
            guard let relative = root.relativePath(of: path) else { throw .escapesRoot }
            if let slash = relative.utf8.firstIndex(of: UInt8(ascii: "/")) {
                try root.checkFolder(named: String(Substring(relative.utf8[..<slash])))
                let relative = String(relative)
                do {
                    let fd = try Self.withCString(relative) { (relative) throws(Errno) in
                        try openingForRead(flags | Self.safetyFlags) { table.calls.openBeneath(root.fd, relative, $0, mode) }
                    }
                    if forcesModes, flags & O_CREAT != 0 { _ = table.calls.fchmod(fd, mode) }
                    return fd
                } catch let error where error.rawValue == ENOSYS || error.rawValue == EPERM {
                    root.beneathIsUnavailable.store(true, ordering: .relaxed)
                }
            }
        }
        let fd = try resolving(path) { (directory, name) throws(Errno) in
            try Self.withCString(name) { (name) throws(Errno) in
                try openingForRead(flags | Self.safetyFlags) { table.calls.openat(directory, name, $0, mode) }
            }
        }
        if forcesModes, flags & O_CREAT != 0 { _ = table.calls.fchmod(fd, mode) }
        return fd
    }

    /// ``open(_:_:mode:)`` of `relative`, a path beneath the root the caller built itself (a
    /// record's shard folder and file name: ``DiskLayout/withRelativePath(for:_:)``), as a C
    /// string: with several components (`isNested`), straight to `openat2`, without first
    /// building the absolute path and taking the root's prefix off it again. The kernel still
    /// refuses any way out (`RESOLVE_BENEATH`, no links). Anywhere else (no root, one component,
    /// no `openat2`) it opens `absolute()` as ``open(_:_:mode:)`` does. Never creates a file.
    package func open(
        beneathRoot relative: UnsafePointer<CChar>, isNested: Bool, orPath absolute: () -> String, _ flags: Int32
    ) throws(Errno) -> Int32 {
        if isNested, let root, !root.beneathIsUnavailable.load(ordering: .relaxed) {
            try root.checkFirstFolder(of: relative)
            do {
                return try openingForRead((flags & ~O_CREAT) | Self.safetyFlags) { table.calls.openBeneath(root.fd, relative, $0, 0) }
            } catch let error where error.rawValue == ENOSYS || error.rawValue == EPERM {
                root.beneathIsUnavailable.store(true, ordering: .relaxed)
            }
        }
        return try open(absolute(), flags & ~O_CREAT)
    }

    /// Opens a regular file for reading.
    /// - Throws: ``Errno/notARegularFile`` for anything else (a FIFO, a socket, a device, a
    ///   folder); ``Errno/tooManySymbolicLinks`` for a link.
    package func openForReading(_ path: String) throws(Errno) -> (fd: Int32, info: FileInfo) {
        let fd = try open(path, O_RDONLY)
        do throws(Errno) {
            let info = try info(fd)
            guard info.kind == .regular else { throw Errno.notARegularFile }
            return (fd, info)
        } catch {
            close(fd)
            throw error
        }
    }

    /// Opens a regular file for writing (never creating it).
    /// - Throws: ``Errno/notARegularFile`` for anything else.
    package func openForWriting(_ path: String) throws(Errno) -> Int32 {
        let fd = try open(path, O_WRONLY)
        do throws(Errno) {
            guard try info(fd).kind == .regular else { throw Errno.notARegularFile }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// Opens a file for reading and writing, creating it (with ``fileMode``) when `creating` and missing.
    /// The caller checks what it opened (``info(_:)``): it may be a FIFO.
    package func openForUpdate(_ path: String, creating: Bool) throws(Errno) -> Int32 {
        try open(path, O_RDWR | (creating ? O_CREAT : 0))
    }

    /// Creates a new file (`O_CREAT | O_EXCL`, so never an existing file or a link's target),
    /// open for writing.
    package func createExclusively(_ path: String, mode: UInt16? = nil) throws(Errno) -> Int32 {
        try open(path, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
    }

    /// Opens a folder (for `fsync` or listing). A folder directly beneath a root with a
    /// ``CacheRoot/trust`` must pass it (``Errno/untrusted``).
    package func openDirectory(_ path: String) throws(Errno) -> Int32 {
        if let root, root.trust != nil, let components = root.components(of: path), components.count == 1 {
            try root.checkFolder(named: components[0])
        }
        return try open(path, O_RDONLY | O_DIRECTORY)
    }

    /// Closes `fd`. Never retried: after `EINTR` the descriptor is already gone on Linux.
    package func close(_ fd: Int32) {
        _ = table.calls.close(fd)
    }

    /// Reads up to `count` bytes at `offset`, looping over short reads; returns fewer only at end of file.
    package func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try retrying {
                table.calls.pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// One `pread` into `buffer` at `offset` (retried on `EINTR` alone): fewer bytes than asked
    /// for, from a regular file, means its end was reached, with no second call to find so.
    package func preadOnce(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
        try retrying { table.calls.pread(fd, buffer.baseAddress!, buffer.count, off_t(offset)) }
    }

    /// Writes all of `buffer` at `offset`, looping over short writes.
    package func pwrite(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        var done = 0
        while done < buffer.count {
            let n = try retrying {
                table.calls.pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            }
            if n == 0 { throw Errno(EIO) }
            done += n
        }
    }

    /// Writes all of `buffer` at the current offset, looping over short writes.
    package func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < buffer.count {
            let n = try retrying { table.calls.write(fd, buffer.baseAddress! + done, buffer.count - done) }
            if n == 0 { throw Errno(EIO) }
            done += n
        }
    }

    package func fsync(_ fd: Int32) throws(Errno) {
        _ = try retrying { table.calls.fsync(fd) }
    }

    package func fstat(_ fd: Int32) throws(Errno) -> stat {
        var buf = stat()
        _ = try retrying { table.calls.fstat(fd, &buf) }
        return buf
    }

    /// The offset of the first hole in the open file `fd` (its end when it has none), or `nil`
    /// when the file system cannot say.
    package func firstHole(_ fd: Int32) -> Int? {
        let offset = table.calls.seekHole(fd, 0)
        return offset < 0 ? nil : Int(offset)
    }

    /// What `fstat` says of an open file.
    package func info(_ fd: Int32) throws(Errno) -> FileInfo {
        FileInfo(try fstat(fd))
    }

    /// Takes the exclusive `flock` on `fd` without waiting.
    /// - Throws: ``Errno/wouldBlock`` when another open file description holds it.
    package func lockExclusively(_ fd: Int32) throws(Errno) {
        _ = try retrying { table.calls.flock(fd, LOCK_EX | LOCK_NB) }
    }

    /// Releases the `flock` on `fd`.
    package func unlock(_ fd: Int32) {
        _ = try? retrying { table.calls.flock(fd, LOCK_UN) }
    }

    package func flock(_ fd: Int32, _ operation: Int32) throws(Errno) {
        _ = try retrying { table.calls.flock(fd, operation) }
    }

    package func ftruncate(_ fd: Int32, _ length: Int) throws(Errno) {
        _ = try retrying { table.calls.ftruncate(fd, off_t(length)) }
    }

    // MARK: - Paths

    /// `lstat` (never following a link), or `nil` when the path does not exist.
    package func lstat(_ path: String) throws(Errno) -> stat? {
        var buf = stat()
        do {
            _ = try resolving(path) { (directory, name) throws(Errno) in
                try Self.withCString(name) { (name) throws(Errno) in
                    try retrying { table.calls.fstatat(directory, name, &buf, AT_SYMLINK_NOFOLLOW) }
                }
            }
        } catch let error where error == .noSuchFileOrDirectory {
            return nil
        }
        return buf
    }

    /// What `lstat` says of `path` (never following a link), or `nil` when it does not exist.
    package func info(atPath path: String) throws(Errno) -> FileInfo? {
        try lstat(path).map(FileInfo.init)
    }

    package func rename(_ from: String, _ to: String) throws(Errno) {
        _ = try resolving(from) { (fromDirectory, fromName) throws(Errno) in
            try resolving(to) { (toDirectory, toName) throws(Errno) in
                try Self.withCString(fromName) { (fromName) throws(Errno) in
                    try Self.withCString(toName) { (toName) throws(Errno) in
                        try retrying { table.calls.renameat(fromDirectory, fromName, toDirectory, toName) }
                    }
                }
            }
        }
    }

    /// Removes a file (or a link, never its target; never a folder); returns `false` when it did not exist.
    @discardableResult
    package func unlink(_ path: String) throws(Errno) -> Bool {
        do {
            _ = try resolving(path) { (directory, name) throws(Errno) in
                try Self.withCString(name) { (name) throws(Errno) in try retrying { table.calls.unlinkat(directory, name, 0) } }
            }
            return true
        } catch let error where error == .noSuchFileOrDirectory {
            return false
        }
    }

    /// What `lstat` says of the file `name`, one component, in the folder open at `folder` (a
    /// descriptor from ``openDirectory(_:)``), never following a link; `nil` when it does not exist.
    package func lstat(_ name: String, inFolder folder: Int32) throws(Errno) -> stat? {
        try lstat(FileName(name), inFolder: folder)
    }

    /// ``lstat(_:inFolder:)`` of a name given by its exact bytes, which need not be UTF-8.
    package func lstat(_ name: FileName, inFolder folder: Int32) throws(Errno) -> stat? {
        try Self.checkOneComponent(name)
        var buf = stat()
        do {
            _ = try name.withCString { (name) throws(Errno) in
                try retrying { table.calls.fstatat(folder, name, &buf, AT_SYMLINK_NOFOLLOW) }
            }
        } catch let error where error == .noSuchFileOrDirectory {
            return nil
        }
        return buf
    }

    /// What `lstat` says of the file `name`, one component, in the folder open at `folder`,
    /// never following a link; `nil` when it does not exist.
    package func info(of name: String, inFolder folder: Int32) throws(Errno) -> FileInfo? {
        try lstat(name, inFolder: folder).map(FileInfo.init)
    }

    /// Throws ``Errno/escapesRoot`` unless `name` is one component: not empty, `.` or `..`, no
    /// `/` (nor a NUL, which would end it early). Its bytes are compared, not its characters.
    private static func checkOneComponent(_ name: FileName) throws(Errno) {
        func isOne(_ bytes: some Collection<UInt8>) -> Bool {
            let dot = UInt8(ascii: ".")
            guard !bytes.isEmpty else { return false }
            if bytes.count <= 2, bytes.allSatisfy({ $0 == dot }) { return false }
            return !bytes.contains(where: { $0 == UInt8(ascii: "/") || $0 == 0 })
        }
        let valid: Bool
        if var string = name.string {
            valid = string.withUTF8 { isOne($0) }
        } else {
            valid = isOne(name.bytes)
        }
        guard valid else { throw .escapesRoot }
    }

    /// Removes the file `name`, one component, from the folder open at `folder` (a descriptor
    /// from ``openDirectory(_:)``, which resolved it beneath the root); never a folder, never a
    /// link's target. Returns `false` when it did not exist. A pass that removes many files from
    /// the same folders opens each folder once instead of once a file (``unlink(_:)``).
    @discardableResult
    package func unlink(_ name: String, inFolder folder: Int32) throws(Errno) -> Bool {
        try unlink(FileName(name), inFolder: folder)
    }

    /// ``unlink(_:inFolder:)`` of a name given by its exact bytes, which need not be UTF-8: the
    /// file with exactly that name goes, never another whose name reads the same.
    @discardableResult
    package func unlink(_ name: FileName, inFolder folder: Int32) throws(Errno) -> Bool {
        try Self.checkOneComponent(name)
        do {
            _ = try name.withCString { (name) throws(Errno) in try retrying { table.calls.unlinkat(folder, name, 0) } }
            return true
        } catch let error where error == .noSuchFileOrDirectory {
            return false
        }
    }

    /// Creates a folder with `mode` (default ``folderMode``); an existing folder is not an error.
    /// - Returns: Whether this call created it.
    @discardableResult
    package func mkdir(_ path: String, mode: UInt16? = nil) throws(Errno) -> Bool {
        let mode = mode_t(mode ?? folderMode)
        do {
            _ = try resolving(path) { (directory, name) throws(Errno) in
                try Self.withCString(name) { (name) throws(Errno) in try retrying { table.calls.mkdirat(directory, name, mode) } }
            }
            if let root, root.trust != nil, let components = root.components(of: path), components.count == 1 {
                root.trustFolder(named: components[0])
            }
            if forcesModes, let fd = try? openDirectory(path) {
                _ = table.calls.fchmod(fd, mode)
                close(fd)
            }
            return true
        } catch let error where error == .fileExists {
            guard let info = try info(atPath: path), info.kind == .directory else { throw error }
            return false
        }
    }

    /// Creates a folder and its missing parents (beneath the root, when rooted).
    /// - Returns: The folders this call created, outermost first.
    @discardableResult
    package func mkdirs(_ path: String, mode: UInt16? = nil) throws(Errno) -> [String] {
        var prefix: String
        var rest: [String]
        if let root {
            guard let components = root.components(of: path) else { throw .escapesRoot }
            prefix = root.path == "/" ? "" : root.path
            rest = components
        } else {
            prefix = ""
            rest = path.split(separator: "/").map(String.init)
            if !path.hasPrefix("/") { prefix = "." }
        }
        var created: [String] = []
        for component in rest {
            prefix += "/" + component
            if try mkdir(prefix, mode: mode) { created.append(prefix) }
        }
        return created
    }

    package func statvfs(_ path: String) throws(Errno) -> StatVFS {
        var buf = StatVFS()
        _ = try retrying { table.calls.statvfs(path, &buf) }
        return buf
    }

    /// The size and free space of the volume that holds `path`.
    package func volumeInfo(_ path: String) throws(Errno) -> VolumeInfo {
        VolumeInfo(try statvfs(path))
    }

    /// The entries of a folder (never through a link), each with its name's exact bytes.
    package func listDirectory(_ path: String) throws(Errno) -> [DirectoryEntry] {
        let fd = try openDirectory(path)
        defer { close(fd) }
        while true {
            if let entries = table.calls.listDirectory(fd) { return entries }
            let error = errno
            if error != EINTR { throw Errno(error) }
        }
    }

    /// Reads a whole small file (metadata, snapshots), refusing files larger than `limit` bytes
    /// and files that claim far more bytes than their blocks hold (``FileInfo/looksSparse``).
    /// Beneath a root with a ``CacheRoot/trust``, the file must pass it.
    /// - Throws: ``Errno/fileTooLarge`` for those, ``Errno/notARegularFile`` for a FIFO, a
    ///   folder or a device, ``Errno/tooManySymbolicLinks`` for a link, ``Errno/untrusted``.
    package func readFile(_ path: String, limit: Int) throws(Errno) -> [UInt8] {
        let (fd, info) = try openForReading(path)
        defer { close(fd) }
        try checkTrust(info)
        guard info.size <= limit, !info.looksSparse else { throw .fileTooLarge }
        var bytes = [UInt8](repeating: 0, count: info.size)
        let n = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(Errno) in try pread(fd, into: buffer, at: 0) }
        }.get()
        bytes.removeSubrange(n...)
        return bytes
    }

    /// Writes a whole file atomically: a new temporary file beside it (`O_CREAT | O_EXCL`), then a rename.
    /// - Parameter sync: Whether the file must survive a power loss once this returns: the
    ///   temporary file is synced before the rename (else the rename may reach the disk before
    ///   the bytes, leaving an empty or torn file under `path`) and its folder after.
    /// - Parameter mode: The new file's mode (default ``fileMode``).
    package func writeFileAtomically(_ path: String, _ bytes: [UInt8], sync: Bool = false, mode: UInt16? = nil) throws(Errno) {
        try writeFileAtomically(path, sync: sync, mode: mode) { _ in bytes }
    }

    /// ``writeFileAtomically(_:_:sync:mode:)`` with bytes made once the temporary file exists, from
    /// what `fstat` says of it: its times are the file system's clock before `bytes` runs.
    package func writeFileAtomically(
        _ path: String, sync: Bool = false, mode: UInt16? = nil, _ bytes: (_ created: FileInfo) -> [UInt8]
    ) throws(Errno) {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd = try createExclusively(temporary, mode: mode)
        var isOpen = true
        do {
            let bytes = bytes(try info(fd))
            try bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try write(fd, buffer) } }.get()
            if sync { try fsync(fd) }
            close(fd)
            isOpen = false
            try rename(temporary, path)
        } catch {
            if isOpen { close(fd) }
            _ = try? unlink(temporary)
            throw error
        }
        if sync { try syncFolder(Self.parentFolder(of: path)) }
    }

    /// Throws ``Errno/untrusted`` when a file or folder beneath the root, which `fstat` described
    /// as `info`, fails the root's ``CacheRoot/trust``.
    package func checkTrust(_ info: FileInfo) throws(Errno) {
        guard let root, let trust = root.trust, trust.problem(with: info, root: root.info) != nil else { return }
        throw .untrusted
    }

    /// Whether a file or folder beneath the root, which `fstat` described as `info`, passes the
    /// root's ``CacheRoot/trust`` (always, without one).
    package func isTrusted(_ info: FileInfo) -> Bool {
        guard let root, let trust = root.trust else { return true }
        return trust.problem(with: info, root: root.info) == nil
    }

    /// The folder that holds `path`: everything before its last slash (`/` for `/name`, `.`
    /// for a bare name).
    package static func parentFolder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The process's soft limit on open descriptors (`RLIMIT_NOFILE`), or `nil` when it is
    /// unlimited or cannot be read.
    package static func descriptorLimit() -> Int? {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// `fsync` on a folder, so that the entries created, renamed or removed in it survive a power loss.
    package func syncFolder(_ path: String) throws(Errno) {
        let fd = try openDirectory(path)
        defer { close(fd) }
        try fsync(fd)
    }
}

/// The system-call table a ``FileIO`` shares with its copies (immutable: a changed table is a new one).
private final class CallTable: Sendable {
    let calls: SystemCalls

    init(_ calls: SystemCalls) { self.calls = calls }
}
