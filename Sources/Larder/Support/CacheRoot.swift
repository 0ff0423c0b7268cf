#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A cache folder held open: its path and a descriptor of it, opened once. Every path a rooted
/// ``FileIO`` is given is resolved beneath this descriptor one component at a time, never
/// following a link and never through `..`, so that whatever the folder holds (links to other
/// folders, FIFOs, a replaced shard folder), no operation reaches a file outside it. The path
/// *to* the root is the application's choice and may pass through links; its ownership is
/// checked on the descriptor (see `DiskCache`).
package final class CacheRoot: Sendable {
    /// The root's path, without a trailing slash (as ``DiskLayout/root``).
    package let path: String
    /// What `fstat` said of the root when it was opened.
    package let info: FileInfo
    private let calls: SystemCalls
    /// `path` and a slash, the prefix of every path beneath the root, as UTF-8.
    private let prefix: [UInt8]
    /// The descriptor in use; replaced by ``adopt(_:)``.
    private let current: Atomic<Int32>
    /// Whether `openat2` failed with `ENOSYS` or `EPERM` (an old kernel, a seccomp filter): from
    /// then on, paths beneath this root are walked one component at a time.
    let beneathIsUnavailable = Atomic<Bool>(false)
    /// Every descriptor opened, closed when the root goes away (a replaced one may still be in
    /// use by a call on another thread, so it is not closed before).
    private let opened: LarderMutex<[Int32]>

    init(path: String, fd: Int32, info: FileInfo, calls: SystemCalls) {
        self.path = path
        self.info = info
        self.calls = calls
        prefix = Array((path == "/" ? "/" : path + "/").utf8)
        current = Atomic(fd)
        opened = LarderMutex([fd])
    }

    deinit {
        for fd in opened.withLock({ $0 }) { _ = calls.close(fd) }
    }

    /// The descriptor, `O_DIRECTORY`, closed when the root goes away.
    package var fd: Int32 { current.load(ordering: .acquiring) }

    /// Whether the folder open at ``fd`` is no longer the one at ``path``: it was removed (no
    /// link left, so every path beneath it fails with `ENOENT`), or moved or replaced, so that
    /// ``path`` names nothing or something else. The path is followed through links, as it was
    /// when the root was opened. A failure to ask (other than a missing path) answers `false`.
    package var isRemoved: Bool {
        var held = stat()
        guard calls.fstat(fd, &held) == 0 else { return false }
        if held.st_nlink == 0 { return true }
        var named = stat()
        guard calls.fstatat(SystemCalls.atCurrentDirectory, path, &named, 0) == 0 else {
            return errno == ENOENT || errno == ENOTDIR
        }
        return named.st_dev != held.st_dev || named.st_ino != held.st_ino
    }

    /// Makes the folder `other` holds open the root from now on: `other`'s descriptor moves
    /// here (and `other` no longer closes it). The descriptor replaced stays open until this root
    /// goes away, since a call on another thread may still be resolving a path beneath it; each
    /// replacement keeps one descriptor of a deleted folder open until then.
    /// - Precondition: `other` holds one descriptor and has the same ``path``.
    package func adopt(_ other: CacheRoot) {
        precondition(other.path == path, "a root adopts a folder at its own path")
        let fd = other.opened.withLock { opened in
            precondition(opened.count == 1, "a root adopts a freshly opened one")
            return opened.removeFirst()
        }
        opened.withLock { $0.append(fd) }
        current.store(fd, ordering: .releasing)
    }

    /// Whether `path` starts with ``prefix``, byte for byte: one `memcmp` for a native string
    /// (`starts(with:)` over the two UTF-8 views steps through both an index at a time, most of
    /// `components(of:)`'s instructions).
    private func startsWithPrefix(_ path: String) -> Bool {
        let utf8 = path.utf8
        guard utf8.count >= prefix.count else { return false }
        let compared = utf8.withContiguousStorageIfAvailable { bytes in
            prefix.withUnsafeBufferPointer { prefix in memcmp(bytes.baseAddress!, prefix.baseAddress!, prefix.count) == 0 }
        }
        return compared ?? utf8.starts(with: prefix)
    }

    /// `path` relative to the root ("" for the root itself), or `nil` when it is not beneath the
    /// root, or has an empty, `.` or `..` component or a NUL byte. One scan, no allocation.
    package func relativePath(of path: String) -> Substring? {
        if path == self.path { return "" }
        guard startsWithPrefix(path) else { return nil }
        let utf8 = path.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: prefix.count)
        var componentLength = 0
        var dots = 0
        for byte in utf8[start...] {
            if byte == UInt8(ascii: "/") {
                if componentLength == 0 || componentLength == dots && dots <= 2 { return nil }
                componentLength = 0
                dots = 0
                continue
            }
            if byte == 0 { return nil }
            componentLength += 1
            if byte == UInt8(ascii: ".") { dots += 1 }
        }
        if componentLength == 0 || componentLength == dots && dots <= 2 { return nil }
        // Through the UTF-8 view: slicing the string itself would round the index to a
        // character boundary, grapheme-breaking work on every open.
        return Substring(utf8[start...])
    }

    /// The components of `path` beneath the root (empty for the root itself), or `nil` when the
    /// path is not beneath it, or names `.`, `..` or a NUL byte.
    /// Empty components (`a//b`) are skipped. One scan of the UTF-8 bytes: splitting the string
    /// itself walks it by characters, grapheme-breaking work that was most of a store's
    /// instructions (callgrind of `larder-bench remote`), since every rename, unlink and `stat`
    /// resolves its path here.
    package func components(of path: String) -> [String]? {
        if path == self.path { return [] }
        guard startsWithPrefix(path) else { return nil }
        let utf8 = path.utf8
        var result: [String] = []
        var start = utf8.index(utf8.startIndex, offsetBy: prefix.count)
        var index = start
        var dots = 0
        // Ends the component before `index`: nil when it is `.` or `..`.
        func endComponent() -> Bool {
            let length = utf8.distance(from: start, to: index)
            if length > 0 {
                if length == dots && dots <= 2 { return false }
                result.append(String(Substring(utf8[start ..< index])))
            }
            return true
        }
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "/") {
                guard endComponent() else { return nil }
                index = utf8.index(after: index)
                start = index
                dots = 0
                continue
            }
            if byte == 0 { return nil }
            if byte == UInt8(ascii: ".") { dots += 1 }
            index = utf8.index(after: index)
        }
        guard endComponent() else { return nil }
        return result
    }
}
