import Foundation

/// The advisory write lock on a cache directory: `flock` on `.larder.lock`, which holds the
/// holder's pid. The lock dies with its process; a second opener, in this process or another,
/// gets ``CacheError/Code/directoryInUse`` with that pid, at once or, when it is given a wait,
/// once the wait has passed without the holder letting go.
///
/// Writers that share the folder (``DiskCacheOptions/sharesFolderWithWriters``) take the lock
/// shared while they open, register in the sharing file's table of writers
/// (``SharedWriterTable``), and let go: between calls they hold no lock. A writer that would
/// hold the folder alone reads that table once it has the lock, and waits while a writer in it
/// runs.
///
/// A waiting opener polls (`LOCK_NB`) with pauses that grow from 1 ms to 10 ms, as SQLite's busy
/// handler does, rather than blocking in `flock`: a blocked `flock` cannot be given a deadline
/// without a signal, and a library must not take over the process's signals.
///
/// The lock file is opened without following a link and without blocking, and must be a regular
/// file with one link, owned by the current user (by anyone, when `sharedWithGroup`), before
/// anything is written to it: a link or a hard link planted there by someone else cannot make the
/// cache truncate another file.
package struct DirectoryLock: Sendable {
    private let fd: Int32
    private let io: FileIO

    /// Takes the lock, or throws naming the holder.
    /// - Parameters:
    ///   - path: The lock file, beneath `io`'s root.
    ///   - io: A rooted ``FileIO``.
    ///   - sharedWithGroup: Whether a lock file owned by another user is accepted (``CacheSharing/group``).
    ///   - wait: How long, in seconds, to wait for a holder to let go (0: not at all).
    ///   - shared: Whether to take the lock shared, as one of several writers that share the
    ///     folder, rather than alone. A sharing writer holds it only while it opens (it lets go
    ///     with ``letGoOfSharedHold()`` once registered in the table of writers).
    ///   - sharingWriter: For a writer that would hold the folder alone: a running writer that
    ///     shares the folder (``SharedWriterTable``), read once the lock is taken; while there is
    ///     one, the lock is let go of again and the opener waits as for any holder.
    /// - Throws: ``CacheError/Code/directoryInUse``, ``CacheError/Code/unsafeDirectory`` for a
    ///   lock file that is not a regular file with one link owned by the user,
    ///   ``CacheError/Code/ioFailure``.
    package init(
        path: String, io: FileIO, sharedWithGroup: Bool = false, waitingUpTo wait: TimeInterval = 0, shared: Bool = false,
        sharingWriter: () -> Int32? = { nil }
    ) throws(CacheError) {
        self.io = io
        let fd: Int32
        do {
            fd = try io.openForUpdate(path, creating: true)
        } catch let error where error == .tooManySymbolicLinks || error == .isADirectory || error == .noSuchDeviceOrAddress {
            throw CacheError(
                .unsafeDirectory, "the lock file is a link, a folder or a socket, not a regular file", path: path, errno: error.rawValue)
        } catch {
            throw CacheError(.ioFailure, "cannot open the lock file", path: path, errno: error.rawValue)
        }
        do {
            let info = try io.info(fd)
            if let problem = info.problemAsFolderFile(sharedWithGroup: sharedWithGroup) {
                io.close(fd)
                throw CacheError(.unsafeDirectory, "the lock file \(problem); remove it if this is your cache", path: path)
            }
        } catch let error as CacheError {
            throw error
        } catch {
            io.close(fd)
            throw CacheError(.ioFailure, "cannot inspect the lock file", path: path, errno: (error as? Errno)?.rawValue)
        }
        // The running sharing writer the last try met once it had the lock; `nil` when the last
        // try met the lock itself taken, so that a refusal names what that try met.
        var sharer: Int32?
        do {
            try Self.lock(fd, io: io, waitingUpTo: wait, shared: shared, sharingWriter: sharingWriter, met: &sharer)
        } catch {
            if let sharer, error == .wouldBlock {
                io.close(fd)
                let holder = sharer == ProcessIdentity.processID ? "another cache of this process (\(sharer))" : "process \(sharer)"
                throw CacheError(
                    .directoryInUse,
                    "writers that share the cache directory have it open (\(holder)); open it with sharesFolderWithWriters, or read-only",
                    path: path, holderPID: sharer)
            }
            var buffer = [UInt8](repeating: 0, count: 32)
            let n =
                (try? buffer.withUnsafeMutableBytes { b in
                    Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) }
                }.get()) ?? 0
            io.close(fd)
            if error == .wouldBlock || error == .tryAgain {
                let text = String(decoding: buffer[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                let pid = Int32(text)
                let holder =
                    pid == ProcessIdentity.processID
                    ? "another cache of this process (\(ProcessIdentity.processID)): close() it, or let go of it, first"
                    : "process \(pid.map(String.init) ?? "unknown")"
                throw CacheError(
                    .directoryInUse, "the cache directory is in use by \(holder); open it read-only to read it", path: path,
                    holderPID: pid)
            }
            throw CacheError(.ioFailure, "cannot lock the cache directory", path: path, errno: error.rawValue)
        }
        let pid = Array("\(ProcessIdentity.processID)\n".utf8)
        // A shared holder leaves the file as it is: the others hold it too, and the pid names
        // whoever took the folder alone.
        if shared {
            self.fd = fd
            return
        }
        do {
            try io.ftruncate(fd, 0)
            try pid.withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: 0) } }.get()
        } catch {
            // The lock is what matters; a missing pid only makes the holder's error less helpful.
        }
        self.fd = fd
    }

    /// Takes the `flock` on `fd`, trying again with growing pauses while another holds it, or
    /// while `sharingWriter` names a running writer sharing the folder (the lock is let go of
    /// again; asked only when the lock is taken exclusively), until `wait` seconds have passed.
    /// - Parameter sharer: Set at each try: the writer `sharingWriter` named once the lock was
    ///   taken, or `nil` when the lock itself was taken by another.
    /// - Throws: ``Errno/wouldBlock`` when the holder kept it past the wait, or the failure.
    private static func lock(
        _ fd: Int32, io: FileIO, waitingUpTo wait: TimeInterval, shared: Bool, sharingWriter: () -> Int32?, met sharer: inout Int32?
    ) throws(Errno) {
        let clock = ContinuousClock()
        // Capped at a billion seconds (about 32 years), which a `Duration` holds without overflow.
        let deadline = clock.now + .seconds(wait.isFinite ? min(max(0, wait), 1e9) : 0)
        var pause = Duration.milliseconds(1)
        while true {
            sharer = nil
            do throws(Errno) {
                if shared { try io.flock(fd, LOCK_SH | LOCK_NB) } else { try io.lockExclusively(fd) }
                sharer = shared ? nil : sharingWriter()
                if sharer == nil { return }
                io.unlock(fd)
                throw Errno.wouldBlock
            } catch  where (error == .wouldBlock || error == .tryAgain) && clock.now < deadline {
                Thread.sleep(forTimeInterval: Self.seconds(min(pause, deadline - clock.now)))
                pause = min(pause * 2, .milliseconds(10))
            }
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (whole, fraction) = duration.components
        return TimeInterval(whole) + TimeInterval(fraction) * 1e-18
    }

    /// Lets go of the `flock` of a writer sharing the folder once it is registered in the table
    /// of writers, keeping the file open: between its calls it then holds no lock (iOS
    /// terminates a suspended process that holds one in a shared container).
    package func letGoOfSharedHold() {
        io.unlock(fd)
    }

    /// Releases the lock.
    package func release() {
        // Unlock explicitly before closing: a process being spawned at this moment holds a copy of
        // the descriptor until it execs (it is close-on-exec), and the lock, which belongs to the
        // open file description, would outlive this close until then.
        io.unlock(fd)
        io.close(fd)
    }
}

extension FileInfo {
    /// Why a file Larder keeps beside the records (the lock file, the change log) cannot be
    /// trusted, or `nil`: it must be a regular file with one link, and the user's own unless the
    /// folder is shared with the group.
    func problemAsFolderFile(sharedWithGroup: Bool) -> String? {
        if kind != .regular { return "is not a regular file" }
        if linkCount != 1 { return "has \(linkCount) links (a hard link to another file?)" }
        if !sharedWithGroup, ownerID != ProcessIdentity.effectiveUserID { return "belongs to user \(ownerID), not to this user" }
        return nil
    }
}
