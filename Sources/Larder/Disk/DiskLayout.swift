import Foundation

/// Where a cache's files live: `<root>/<2-char shard>/<file name>` (SPTPersistentCache's
/// "directory separation"; names shorter than 2 characters sit at the root), and Larder's own
/// files, all hidden: the metadata `.larder`, the lock `.larder.lock`, the index snapshot
/// `.larder-index`, and temporary files in `.larder-tmp/`.
package struct DiskLayout: Sendable {
    /// The root folder's path, without a trailing slash.
    package let root: String

    package static let metadataName = ".larder"
    package static let lockName = ".larder.lock"
    package static let snapshotName = ".larder-index"
    package static let temporaryFolderName = ".larder-tmp"

    /// `root` and a slash, the prefix of every path.
    private let rootSlash: String

    package init(root: String) {
        var root = root
        while root.count > 1, root.hasSuffix("/") { root.removeLast() }
        self.root = root
        rootSlash = root == "/" ? "/" : root + "/"
    }

    package var metadataPath: String { root + "/" + Self.metadataName }
    package var lockPath: String { root + "/" + Self.lockName }
    package var snapshotPath: String { root + "/" + Self.snapshotName }
    package var temporaryFolder: String { root + "/" + Self.temporaryFolderName }

    /// The shard folder name for a file name: its first two characters, or `nil` for shorter names.
    package static func shard(for name: String) -> String? {
        // Fast path: two ASCII bytes not followed by a combining byte are two characters.
        let utf8 = name.utf8
        var bytes = utf8.makeIterator()
        if let a = bytes.next(), let b = bytes.next(), a < 0x80, b < 0x80 {
            if let c = bytes.next(), c >= 0x80 {
                // A non-ASCII third byte might combine with the second: ask Character.
            } else {
                return String(Substring(utf8.prefix(2)))
            }
        }
        var index = name.startIndex
        for _ in 0 ..< 2 {
            guard index < name.endIndex else { return nil }
            index = name.index(after: index)
        }
        return String(name[..<index])
    }

    /// The folder that holds a record file.
    package func folder(for name: String) -> String {
        if let shard = Self.shard(for: name) { return rootSlash + shard }
        return root
    }

    /// The path of a record file.
    package func path(for name: String) -> String {
        guard let shard = Self.shard(for: name) else { return rootSlash + name }
        var path = rootSlash
        path.reserveCapacity(rootSlash.utf8.count + shard.utf8.count + 1 + name.utf8.count)
        path += shard
        path += "/"
        path += name
        return path
    }

    /// Whether a name in the root is one of Larder's own files or folders (or any hidden name).
    package static func isReserved(_ name: String) -> Bool { name.hasPrefix(".") }

    /// The file names of every record on disk: files in the two-character shard folders whose
    /// names start with their folder's name, and files at the root with one-character names.
    /// Hidden names (Larder's own files) are skipped.
    /// - Returns: The names, and whether every shard folder could be listed (an unreadable one is
    ///   skipped, and then the list may be incomplete).
    /// - Throws: ``Errno`` when the root cannot be listed.
    /// - Complexity: One directory listing per shard folder; no file is opened.
    package func recordNames(io: FileIO) throws(Errno) -> (names: [String], isComplete: Bool) {
        var names: [String] = []
        var isComplete = true
        for entry in try io.listDirectory(root) where !Self.isReserved(entry.name) {
            if Self.shard(for: entry.name) == nil {
                if entry.isDirectory != true { names.append(entry.name) }
                continue
            }
            guard entry.name.count == 2, entry.isDirectory != false else { continue }
            do throws(Errno) {
                for file in try io.listDirectory(root + "/" + entry.name)
                where Self.shard(for: file.name) == entry.name && !Self.isReserved(file.name) {
                    names.append(file.name)
                }
            } catch let error where error == .notADirectory || error == .tooManySymbolicLinks {
                // A two-character file (or a link) at the root, not a shard folder.
            } catch {
                isComplete = false
            }
        }
        return (names, isComplete)
    }
}

/// The small file that records the settings a directory's layout depends on.
package struct DirectoryMetadata: Codable, Sendable, Equatable {
    /// The format version; this version of Larder reads and writes 1.
    package var format: Int
    /// The key encoding's description: `sha256`, `verbatim` or `custom:NAME`.
    package var keyEncoding: String
    /// The layout: `shard2` (two-character shard folders).
    package var layout: String

    package static let currentFormat = 1

    package init(keyEncoding: String) {
        format = Self.currentFormat
        self.keyEncoding = keyEncoding
        layout = "shard2"
    }
}
