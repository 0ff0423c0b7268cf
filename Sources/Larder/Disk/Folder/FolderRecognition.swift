import Foundation

/// What a folder without Larder's metadata holds, as far as a cache is concerned.
package enum FolderContents: Sendable, Equatable {
    /// Nothing, or only Larder's own files (``DiskLayout/isLarderFile(_:)``).
    case empty
    /// An SPTPersistentCache folder: at least one file is a valid record where a record goes,
    /// in the layout given (`nil` when the only records found have names too short for a shard
    /// folder, which both layouts keep at the root).
    case spt(FolderLayout?)
    /// Files, none of them a valid record where a record goes: not a cache.
    case other
}

extension DiskLayout {
    /// Whether a name at the root is one of the files Larder itself writes there: the metadata,
    /// lock, index snapshot and journal, the temporary folder, and the temporary files of
    /// metadata and snapshot writes (`.larder`, `.larder.lock`, `.larder-index`,
    /// `.larder-journal`, `.larder-tmp`, `.larder.tmp-…`, `.larder-index.tmp-…`).
    package static func isLarderFile(_ name: String) -> Bool {
        name == metadataName || name.hasPrefix(metadataName + ".") || name.hasPrefix(metadataName + "-")
    }

    /// Tells a cache folder from any other: reads headers until it finds one file that is a
    /// valid SPTPersistentCache record (``RecordFile``) at a record's place in the flat layout (a
    /// file at the root) or the sharded one (a file in the shard folder its name belongs to, or
    /// a name too short for one at the root). Folders that do not belong to the layout, hidden
    /// names and Larder's own files are never records.
    ///
    /// Opening a writable cache asks this of a folder without metadata: a cache that took any
    /// folder of files for a flat SPT folder would remove them as corrupt records.
    /// - Returns: ``FolderContents/empty``, ``FolderContents/spt(_:)`` or ``FolderContents/other``.
    /// - Throws: ``Errno`` when the root cannot be listed; shard folders and files that cannot be
    ///   read are passed over.
    /// - Complexity: One listing of the root and of each shard folder, and one header read per
    ///   file, until the first valid record.
    package static func recognize(root: String, io: FileIO) throws(Errno) -> FolderContents {
        let records = RecordFile(io: io)
        func isRecord(_ path: String) -> Bool {
            if case .record? = try? records.read(path, readPayload: false) { return true }
            return false
        }
        let rootSlash = root == "/" ? "/" : root + "/"
        var holdsFiles = false
        var shortNames: [String] = []
        for entry in try io.listDirectory(root) where !isLarderFile(entry.name) {
            holdsFiles = true
            if isReserved(entry.name) { continue }
            var isDirectory = entry.isDirectory
            if isDirectory == nil, let info = try? io.lstat(rootSlash + entry.name) { isDirectory = info.st_mode & S_IFMT == S_IFDIR }
            guard let shard = shard(for: entry.name) else {
                if isDirectory != true { shortNames.append(entry.name) }
                continue
            }
            if isDirectory != true {
                if isRecord(rootSlash + entry.name) { return .spt(.flat) }
            } else if shard == entry.name, let files = try? io.listDirectory(rootSlash + entry.name) {
                for file in files where !isReserved(file.name) && Self.shard(for: file.name) == entry.name {
                    if isRecord(rootSlash + entry.name + "/" + file.name) { return .spt(.sharded) }
                }
            }
        }
        for name in shortNames where isRecord(rootSlash + name) { return .spt(nil) }
        return holdsFiles ? .other : .empty
    }

    /// The entries of the folder that are neither records at a record's place in this layout
    /// nor Larder's own files: hidden names, folders that are not shard folders (listed, not
    /// entered), and files where this layout puts no record (at the root under a name that
    /// belongs in a shard folder; in a shard folder under a name that belongs elsewhere).
    /// A cache never reads, lists or removes them; `larder ls` and `larder verify` show them.
    /// Files at a record's place that are not records (``RecordReadResult/foreign``) are not
    /// among them: reading tells those apart.
    /// - Returns: Paths relative to the root, sorted, each with whether it is a folder.
    /// - Throws: ``Errno`` when the root cannot be listed; a shard folder that cannot be listed
    ///   is passed over.
    package func misplacedEntries(io: FileIO) throws(Errno) -> [(path: String, isDirectory: Bool)] {
        var found: [(path: String, isDirectory: Bool)] = []
        for entry in try io.listDirectory(root) where !Self.isLarderFile(entry.name) {
            var isDirectory = entry.isDirectory
            if isDirectory == nil, let info = try? io.lstat(rootSlash + entry.name) { isDirectory = info.st_mode & S_IFMT == S_IFDIR }
            let isFolder = isDirectory == true
            if Self.isReserved(entry.name) {
                found.append((entry.name, isFolder))
                continue
            }
            let shard = shard(for: entry.name)
            if isFolder {
                guard let shard, shard == entry.name, let files = try? io.listDirectory(rootSlash + entry.name) else {
                    found.append((entry.name, true))
                    continue
                }
                for file in files where Self.isReserved(file.name) || Self.shard(for: file.name) != entry.name {
                    found.append((entry.name + "/" + file.name, file.isDirectory == true))
                }
            } else if shard != nil {
                found.append((entry.name, false))
            }
        }
        return found.sorted { $0.path < $1.path }
    }
}
