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
    /// Whom the folders and files beneath the root must belong to (``checkFolder(named:)``);
    /// `nil`: anyone's are used (a preloaded bundle, read as given).
    package let trust: FolderTrust?
    /// The folders directly beneath the root found trustworthy (or made by this root's user):
    /// a bit for each name of two ASCII bytes (every shard of a hashed name, and most others),
    /// 128 × 128 bits.
    private let trustedASCII: [TrustedBits]
    /// The other folders found trustworthy, by name, byte for byte (``ExactName``): a folder
    /// whose name is canonically equivalent to a trusted one's is another folder, checked apart.
    private let trustedOthers: LarderMutex<Set<ExactName>>

    init(path: String, fd: Int32, info: FileInfo, calls: SystemCalls, trust: FolderTrust? = nil) {
        self.path = path
        self.info = info
        self.calls = calls
        self.trust = trust
        prefix = Array((path == "/" ? "/" : path + "/").utf8)
        current = Atomic(fd)
        opened = LarderMutex([fd])
        trustedASCII = trust == nil ? [] : (0 ..< 256).map { _ in TrustedBits() }
        trustedOthers = LarderMutex([])
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
        // What was checked was the old folder's.
        for word in trustedASCII { word.bits.store(0, ordering: .relaxed) }
        trustedOthers.withLock { $0.removeAll() }
        current.store(fd, ordering: .releasing)
    }

    // MARK: - Trust

    /// Throws ``Errno/untrusted`` when the folder `name`, directly beneath the root, belongs to
    /// someone the cache does not trust or may be written by them (``trust``). A missing name,
    /// or one that is not a folder, passes: the open through it fails on its own.
    ///
    /// Each folder is checked once, with an `fstatat`, then remembered: a hit costs an atomic
    /// load. That is enough because a folder, once checked, cannot change under the cache: only
    /// someone who may write the root can remove, rename or replace it (a writer's root is
    /// checked at open, so that is this user, or the group with ``CacheSharing/group``), and only
    /// its owner (this user) can change its owner or mode. A root replaced behind the cache's
    /// back is a new folder (``adopt(_:)`` forgets what was checked).
    package func checkFolder(named name: String) throws(Errno) {
        guard trust != nil else { return }
        var name = name
        try name.withUTF8 { bytes in Result { () throws(Errno) in try checkFolder(bytes) } }.get()
    }

    /// ``checkFolder(named:)`` of the first component of `relative`, a path beneath the root of
    /// more than one component, as a C string (a record's `shard/name`).
    package func checkFirstFolder(of relative: UnsafePointer<CChar>) throws(Errno) {
        guard trust != nil else { return }
        let length = strlen(relative)
        let bytes = UnsafeRawPointer(relative).assumingMemoryBound(to: UInt8.self)
        var end = 0
        while end < length, bytes[end] != UInt8(ascii: "/") { end += 1 }
        guard end < length else { return }
        try checkFolder(UnsafeBufferPointer(start: bytes, count: end))
    }

    /// Remembers that this root's user made the folder `name` directly beneath the root (with
    /// the cache's modes, which never let others write): it needs no check.
    package func trustFolder(named name: String) {
        guard trust != nil else { return }
        var name = name
        name.withUTF8 { bytes in
            if let bit = Self.asciiBit(bytes) {
                trustedASCII[bit >> 6].bits.bitwiseOr(1 << UInt64(bit & 63), ordering: .relaxed)
            } else {
                trustedOthers.withLock { _ = $0.insert(ExactName(String(decoding: bytes, as: UTF8.self))) }
            }
        }
    }

    /// The bit of a name of two ASCII bytes in ``trustedASCII``.
    private static func asciiBit(_ name: UnsafeBufferPointer<UInt8>) -> Int? {
        guard name.count == 2, name[0] < 0x80, name[1] < 0x80 else { return nil }
        return Int(name[0]) << 7 | Int(name[1])
    }

    private func checkFolder(_ name: UnsafeBufferPointer<UInt8>) throws(Errno) {
        guard let trust, !name.isEmpty else { return }
        let bit = Self.asciiBit(name)
        if let bit, trustedASCII[bit >> 6].bits.load(ordering: .relaxed) & (1 << UInt64(bit & 63)) != 0 { return }
        let text = String(decoding: name, as: UTF8.self)
        if bit == nil, trustedOthers.withLock({ $0.contains(ExactName(text)) }) { return }
        var held = stat()
        let result = text.withCString { calls.fstatat(fd, $0, &held, AT_SYMLINK_NOFOLLOW) }
        guard result == 0 else { return }
        let info = FileInfo(held)
        guard info.kind == .directory else { return }
        if trust.problem(with: info, root: self.info) != nil { throw .untrusted }
        trustFolder(named: text)
    }

    /// What is wrong with the folder `name` directly beneath the root, for an error message, or
    /// `nil` when nothing is (or it cannot be `stat`ed, or is not a folder).
    package func problem(withFolder name: String) -> String? {
        guard let trust else { return nil }
        var held = stat()
        guard name.withCString({ calls.fstatat(fd, $0, &held, AT_SYMLINK_NOFOLLOW) }) == 0 else { return nil }
        let folder = FileInfo(held)
        guard folder.kind == .directory else { return nil }
        return trust.problem(with: folder, root: info)
    }

    /// The name of the folder directly beneath the root that `path` passes through (`ab` for
    /// `<root>/ab/abc`), or `nil` when it is not beneath the root or names something in the root itself.
    package func firstFolder(of path: String) -> String? {
        guard let relative = relativePath(of: path), let slash = relative.utf8.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        return String(Substring(relative.utf8[..<slash]))
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

/// 64 bits of ``CacheRoot``'s trusted-folder map, set once and read without a lock.
private final class TrustedBits: Sendable {
    let bits = Atomic<UInt64>(0)
}
