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
    /// lock, index snapshot and journal, the remote tier's outbox, the temporary folder, and the
    /// temporary files of metadata, snapshot and outbox writes (`.larder`, `.larder.lock`,
    /// `.larder-index`, `.larder-journal`, `.larder-outbox`, `.larder-tmp`, `.larder.tmp-…`,
    /// `.larder-index.tmp-…`, `.larder-outbox.tmp-…`).
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
        for entry in try io.listDirectory(root) {
            // A name that is not UTF-8 is a file, never a record's (``FileName``).
            guard let name = entry.name else {
                holdsFiles = true
                continue
            }
            if isLarderFile(name) { continue }
            holdsFiles = true
            if isReserved(name) { continue }
            var isDirectory = entry.isDirectory
            if isDirectory == nil, let info = try? io.lstat(rootSlash + name) { isDirectory = info.st_mode & S_IFMT == S_IFDIR }
            guard let shard = shard(for: name) else {
                if isDirectory != true { shortNames.append(name) }
                continue
            }
            if isDirectory != true {
                if isRecord(rootSlash + name) { return .spt(.flat) }
            } else if shard == name, let files = try? io.listDirectory(rootSlash + name) {
                for file in files {
                    guard let fileName = file.name, !isReserved(fileName), Self.shard(for: fileName) == name else { continue }
                    if isRecord(rootSlash + name + "/" + fileName) { return .spt(.sharded) }
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
    /// A name that is not UTF-8 is among them wherever it is (no layout puts a record under
    /// it), listed by its exact bytes (``FileName``). A cache never reads, lists or removes
    /// them; `larder ls` and `larder verify` show them.
    /// Files at a record's place that are not records (``RecordReadResult/foreign``) are not
    /// among them: reading tells those apart.
    /// - Returns: The entries, sorted by their paths relative to the root.
    /// - Throws: ``Errno`` when the root cannot be listed; a shard folder that cannot be listed
    ///   is passed over.
    package func misplacedEntries(io: FileIO) throws(Errno) -> [MisplacedEntry] {
        var found: [MisplacedEntry] = []
        func isFolder(_ entry: DirectoryEntry, in folder: String) -> Bool {
            if let isDirectory = entry.isDirectory { return isDirectory }
            guard let fd = try? io.openDirectory(folder) else { return false }
            defer { io.close(fd) }
            return ((try? io.lstat(entry.fileName, inFolder: fd)) ?? nil).map { $0.st_mode & S_IFMT == S_IFDIR } ?? false
        }
        for entry in try io.listDirectory(root) {
            guard let name = entry.name else {
                found.append(MisplacedEntry(shard: nil, name: entry.fileName, isDirectory: isFolder(entry, in: root)))
                continue
            }
            if Self.isLarderFile(name) { continue }
            let isFolder = isFolder(entry, in: root)
            if Self.isReserved(name) {
                found.append(MisplacedEntry(shard: nil, name: entry.fileName, isDirectory: isFolder))
                continue
            }
            let shard = shard(for: name)
            if isFolder {
                guard let shard, shard == name, let files = try? io.listDirectory(rootSlash + name) else {
                    found.append(MisplacedEntry(shard: nil, name: entry.fileName, isDirectory: true))
                    continue
                }
                for file in files {
                    if let fileName = file.name, !Self.isReserved(fileName), Self.shard(for: fileName) == name { continue }
                    found.append(MisplacedEntry(shard: name, name: file.fileName, isDirectory: file.isDirectory == true))
                }
            } else if shard != nil {
                found.append(MisplacedEntry(shard: nil, name: entry.fileName, isDirectory: false))
            }
        }
        return found.sorted { $0.relativePath < $1.relativePath }
    }

    /// The path of the folder that holds `entry`: the root, or its shard folder.
    package func folder(of entry: MisplacedEntry) -> String {
        entry.shard.map { rootSlash + $0 } ?? root
    }
}

/// An entry of a cache folder where its layout puts no record (``DiskLayout/misplacedEntries(io:)``).
package struct MisplacedEntry: Sendable, Equatable {
    /// The shard folder that holds it, or `nil` for an entry at the root.
    package var shard: String?
    /// Its name in that folder, exactly.
    package var name: FileName
    /// Whether it is a folder (listed, never entered).
    package var isDirectory: Bool

    /// An entry at the root (`shard` `nil`) or in a shard folder.
    package init(shard: String?, name: FileName, isDirectory: Bool) {
        self.shard = shard
        self.name = name
        self.isDirectory = isDirectory
    }

    /// The path relative to the root, exactly: the name, or the shard folder, a slash and the name.
    package var relativePath: FileName {
        guard let shard else { return name }
        return FileName(bytes: Array(shard.utf8) + [UInt8(ascii: "/")] + name.bytes)
    }
}
