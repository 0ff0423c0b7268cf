#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

// File-scope forwarders: inside `HostileFiles` these names are its own methods.
private func c_chmod(_ path: String, _ mode: mode_t) -> Int32 { chmod(path, mode) }
private func c_mkfifo(_ path: String, _ mode: mode_t) -> Int32 { mkfifo(path, mode) }
private func c_symlink(_ target: String, _ path: String) -> Int32 { symlink(target, path) }
private func c_link(_ target: String, _ path: String) -> Int32 { link(target, path) }

/// A tree of files outside a cache folder that an attacker would like the cache to read, change
/// or remove, and a fingerprint of everything in it (kinds, modes, sizes, contents, link
/// targets), so a test can assert that nothing outside the root changed.
public struct SentinelTree: Sendable {
    /// The tree's root folder.
    public let root: String

    /// Creates the tree under `root`: a few files (one named like a record), a subfolder with
    /// files, and a file that looks like a valid lock holder.
    public init(at root: String) {
        self.root = root
        mkdir(root, 0o755)
        mkdir(root + "/inner", 0o755)
        for (name, text) in [
            ("important.txt", "the victim's data"), ("passwd", "root:x:0:0"), ("inner/secret", "token=abc"),
            ("inner/aa", "two letters"), ("0123456789abcdef", "named like a record"),
        ] {
            _ = FileManager.default.createFile(atPath: root + "/" + name, contents: Data(text.utf8))
        }
    }

    /// Every entry under the root (never following a link), with a fingerprint of its kind,
    /// permissions, length and content (or link target).
    public func fingerprint() -> [String: String] { Self.fingerprint(of: root) }

    /// ``fingerprint()`` of any folder: every entry under `root` (never following a link), with
    /// its kind, permissions, length and content (or link target).
    public static func fingerprint(of root: String) -> [String: String] {
        var result: [String: String] = [:]
        func visit(_ relative: String) {
            let path = relative.isEmpty ? root : root + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0 else {
                result[relative] = "missing"
                return
            }
            let mode = String(info.st_mode, radix: 8)
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                result[relative] = "dir \(mode)"
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
                for name in names { visit(relative.isEmpty ? name : relative + "/" + name) }
            case S_IFLNK:
                result[relative] = "link \((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?")"
            case S_IFREG:
                let data = FileManager.default.contents(atPath: path) ?? Data()
                var hash: UInt64 = 0xcbf2_9ce4_8422_2325
                for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
                result[relative] = "file \(mode) \(info.st_size) \(String(hash, radix: 16))"
            default:
                result[relative] = "other \(mode)"
            }
        }
        visit("")
        return result
    }
}

/// Plants hostile entries in a folder: links (into a sentinel tree, dangling, looping), FIFOs,
/// folders and files, where a cache expects records, shard folders or its own files.
public enum HostilePlant: CaseIterable, Sendable {
    case linkToFile, linkToFolder, danglingLink, linkLoop, fifo, folder, folderWithFile, garbageFile, emptyFile

    /// Creates this kind of entry at `path` (its parent must exist), pointing into `sentinel`.
    /// Whatever was at `path` is removed first (a folder only if empty).
    @discardableResult
    public func plant(at path: String, sentinel: SentinelTree) -> Bool {
        unlink(path)
        rmdir(path)
        switch self {
        case .linkToFile: return symlink(sentinel.root + "/important.txt", path) == 0
        case .linkToFolder: return symlink(sentinel.root + "/inner", path) == 0
        case .danglingLink: return symlink(sentinel.root + "/created-through-a-link", path) == 0
        case .linkLoop: return symlink(path, path) == 0
        case .fifo: return mkfifo(path, 0o600) == 0
        case .folder: return mkdir(path, 0o700) == 0
        case .folderWithFile:
            guard mkdir(path, 0o700) == 0 else { return false }
            return FileManager.default.createFile(atPath: path + "/inside", contents: Data("keep".utf8))
        case .garbageFile: return FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: 100))
        case .emptyFile: return FileManager.default.createFile(atPath: path, contents: Data())
        }
    }
}

/// File-system helpers for hostile-folder tests.
public enum HostileFiles {
    /// Whether the process runs as root (then it can hand files to another user).
    public static var isRoot: Bool { geteuid() == 0 }

    /// The `nobody` user and group on Debian, an owner that is not the test's.
    public static let otherUser: UInt32 = 65534

    /// Gives `path` (not following a link) to `user`; `false` when not permitted.
    @discardableResult
    public static func chown(_ path: String, to user: UInt32 = otherUser) -> Bool {
        lchown(path, user, user) == 0
    }

    /// Sets `path`'s permission bits.
    public static func chmod(_ path: String, _ mode: UInt16) {
        _ = c_chmod(path, mode_t(mode))
    }

    /// `path`'s permission bits and owner (not following a link).
    public static func modeAndOwner(_ path: String) -> (mode: UInt16, owner: UInt32)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt16(info.st_mode & 0o7777), UInt32(info.st_uid))
    }

    /// Makes `path` a sparse file of `length` bytes whose first bytes are `prefix`.
    public static func makeSparse(_ path: String, prefix: [UInt8], length: Int) -> Bool {
        unlink(path)
        guard FileManager.default.createFile(atPath: path, contents: Data(prefix)) else { return false }
        return truncate(path, off_t(length)) == 0
    }

    /// Creates a FIFO at `path`.
    @discardableResult
    public static func mkfifo(_ path: String) -> Bool { c_mkfifo(path, 0o600) == 0 }

    /// Creates a symbolic link at `path` to `target`.
    @discardableResult
    public static func symlink(_ target: String, at path: String) -> Bool { c_symlink(target, path) == 0 }

    /// Creates a hard link at `path` to `target`.
    @discardableResult
    public static func link(_ target: String, at path: String) -> Bool { c_link(target, path) == 0 }

    /// Runs `/usr/bin/setpriv` to create a folder as another user: the attacker's side of a
    /// shared machine. `false` when setpriv is missing or fails.
    public static func makeFolderAsOtherUser(_ path: String, mode: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(otherUser)", "--regid=\(otherUser)", "--clear-groups", "/bin/mkdir", "-m", mode, path]
        do { try process.run() } catch { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

extension SentinelTree {
    /// Copies the regular files at the top of `source` (a system folder such as `/etc`, only
    /// read) into the existing folder `destination`, skipping links, folders and unreadable
    /// files.
    /// - Returns: How many files were copied.
    public static func copyTopLevelFiles(of source: String, into destination: String) -> Int {
        var copied = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: source)) ?? [] {
            var info = stat()
            guard lstat(source + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                let data = FileManager.default.contents(atPath: source + "/" + name)
            else { continue }
            if FileManager.default.createFile(atPath: destination + "/" + name, contents: data) { copied += 1 }
        }
        return copied
    }
}
