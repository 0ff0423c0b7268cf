import Foundation

/// How a cache folder arranges its record files.
///
/// SPTPersistentCache calls the choice `useDirectorySeparation`. A ``DiskCacheOptions/layout``
/// applies to a new folder; an existing folder keeps the layout recorded in its `.larder` file,
/// or, for a folder without one (an SPTPersistentCache folder), the layout its files show.
public enum FolderLayout: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Each record in a subfolder named by the first two UTF-16 code units of its file name
    /// (`<root>/ab/abcdef`), names shorter than that at the root: SPTPersistentCache's default,
    /// and Larder's. Keeps folders small, so listings and lookups stay fast at any size.
    case sharded
    /// Every record at the root (`useDirectorySeparation = NO`).
    case flat

    /// The name `.larder` records: `shard2` or `flat`.
    package var metadataName: String {
        switch self {
        case .sharded: "shard2"
        case .flat: "flat"
        }
    }

    /// The layout `.larder` names, if it names one this version knows.
    package init?(metadataName: String) {
        guard let layout = Self.allCases.first(where: { $0.metadataName == metadataName }) else { return nil }
        self = layout
    }

    /// `sharded` or `flat`.
    public var description: String { rawValue }
}

/// Where a cache's files live: `<root>/<shard>/<file name>` in the ``FolderLayout/sharded``
/// layout (SPTPersistentCache's "directory separation"; names shorter than a shard sit at the
/// root), `<root>/<file name>` in the ``FolderLayout/flat`` one; and Larder's own files, all
/// hidden: the metadata `.larder`, the lock `.larder.lock`, the index snapshot `.larder-index`
/// and its journal `.larder-journal`, the remote tier's outbox `.larder-outbox`, and temporary
/// files in `.larder-tmp/`.
package struct DiskLayout: Sendable {
    /// The root folder's path, without a trailing slash.
    package let root: String
    /// Sharded or flat.
    package let folderLayout: FolderLayout

    package static let metadataName = ".larder"
    package static let lockName = ".larder.lock"
    package static let snapshotName = ".larder-index"
    package static let journalName = ".larder-journal"
    /// The remote tier's writes not yet taken by the shared store (``RemoteOutbox``).
    package static let outboxName = ".larder-outbox"
    package static let temporaryFolderName = ".larder-tmp"

    /// `root` and a slash, the prefix of every path.
    let rootSlash: String

    package init(root: String, layout: FolderLayout = .sharded) {
        var root = root
        while root.count > 1, root.hasSuffix("/") { root.removeLast() }
        self.root = root
        self.folderLayout = layout
        rootSlash = root == "/" ? "/" : root + "/"
    }

    /// The same root with another layout.
    package func with(_ layout: FolderLayout) -> DiskLayout { DiskLayout(root: root, layout: layout) }

    package var metadataPath: String { root + "/" + Self.metadataName }
    package var lockPath: String { root + "/" + Self.lockName }
    package var snapshotPath: String { root + "/" + Self.snapshotName }
    package var journalPath: String { root + "/" + Self.journalName }
    package var outboxPath: String { root + "/" + Self.outboxName }
    package var temporaryFolder: String { root + "/" + Self.temporaryFolderName }

    /// The shard folder name for a file name under SPTPersistentCache's rule: its first two UTF-16
    /// code units (`[key substringToIndex:2]`), or `nil` for shorter names.
    ///
    /// Where the second unit is the first half of a surrogate pair (a name whose second
    /// character lies outside the Basic Multilingual Plane), two units would split the pair and
    /// name no valid string: SPTPersistentCache cannot make such a folder, so no SPT folder holds
    /// one, and Larder keeps the whole pair (the name's first two Unicode scalars, three units).
    /// A name that starts with such a character has it, two units, as its shard.
    package static func shard(for name: String) -> String? {
        // Fast path: two ASCII bytes are two UTF-16 units.
        let utf8 = name.utf8
        var bytes = utf8.makeIterator()
        if let a = bytes.next(), let b = bytes.next(), a < 0x80, b < 0x80 {
            return String(unsafeUninitializedCapacity: 2) { shard in
                shard[0] = a
                shard[1] = b
                return 2
            }
        }
        var units = name.utf16.makeIterator()
        guard let first = units.next(), units.next() != nil else { return nil }
        let scalarCount = UTF16.isLeadSurrogate(first) ? 1 : 2
        var shard = String.UnicodeScalarView()
        shard.append(contentsOf: name.unicodeScalars.prefix(scalarCount))
        return String(shard)
    }

    /// The shard folder of a record file in this layout; `nil` when it sits at the root.
    package func shard(for name: String) -> String? {
        folderLayout == .sharded ? Self.shard(for: name) : nil
    }

    /// The folder that holds a record file.
    package func folder(for name: String) -> String {
        if let shard = shard(for: name) { return rootSlash + shard }
        return root
    }

    /// The path of a record file.
    package func path(for name: String) -> String {
        guard let shard = shard(for: name) else { return rootSlash + name }
        var path = rootSlash
        path.reserveCapacity(rootSlash.utf8.count + shard.utf8.count + 1 + name.utf8.count)
        path += shard
        path += "/"
        path += name
        return path
    }

    /// The path of a record file relative to the root: its shard folder and name, or its name.
    package func relativePath(for name: String) -> String {
        Self.relativePath(for: name, in: folderLayout)
    }

    /// ``relativePath(for:)`` in `folderLayout`: a path relative to the root needs no root.
    package static func relativePath(for name: String, in folderLayout: FolderLayout) -> String {
        guard folderLayout == .sharded else { return name }
        // Fast path (every hashed name): two ASCII bytes are the shard, copied with the name into
        // one new string. (A read builds the same path on the stack: `withRelativePath`.)
        var name = name
        if let path = name.withUTF8({ asciiShardedPath($0) }) { return path }
        guard let shard = shard(for: name) else { return name }
        var path = shard
        path.reserveCapacity(shard.utf8.count + 1 + name.utf8.count)
        path += "/"
        path += name
        return path
    }

    /// Runs `body` with ``relativePath(for:)`` as a C string, and whether it has more than one
    /// component (a shard folder and the name). A name whose first two bytes are ASCII (every
    /// hashed name) has its path built on the stack: a read opens its file without allocating
    /// a path.
    package func withRelativePath<T, E: Error>(
        for name: RecordName, _ body: (_ path: UnsafePointer<CChar>, _ isNested: Bool) throws(E) -> T
    ) throws(E) -> T {
        try folderLayout.withRelativePath(for: name, body)
    }

    /// `ab/abc…` for a name whose first two bytes are ASCII; `nil` otherwise.
    private static func asciiShardedPath(_ name: UnsafeBufferPointer<UInt8>) -> String? {
        guard name.count >= 2, name[0] < 0x80, name[1] < 0x80 else { return nil }
        return String(unsafeUninitializedCapacity: name.count + 3) { path in
            path[0] = name[0]
            path[1] = name[1]
            path[2] = UInt8(ascii: "/")
            _ = UnsafeMutableBufferPointer(rebasing: path[3...]).initialize(from: name)
            return name.count + 3
        }
    }

    /// Whether a name in the root is one of Larder's own files or folders (or any hidden name).
    package static func isReserved(_ name: String) -> Bool { name.hasPrefix(".") }

    /// The file names of every record on disk. Sharded: files in the shard folders whose names
    /// belong there, and files at the root with names shorter than a shard. Flat: files at the
    /// root. Hidden names (Larder's own files) are skipped.
    /// - Returns: The names, and whether every shard folder could be listed (an unreadable one is
    ///   skipped, and then the list may be incomplete).
    /// - Throws: ``Errno`` when the root cannot be listed.
    /// - Complexity: One directory listing per shard folder; no file is opened.
    package func recordNames(io: FileIO) throws(Errno) -> (names: [String], isComplete: Bool) {
        var names: [String] = []
        let isComplete = try recordNames(io: io) { batch, _ in names += batch }
        return (names, isComplete)
    }

    /// ``recordNames(io:)`` a folder at a time: `body` gets the names in each shard folder, then
    /// those in the root, so that no list of every name is held (the index build's peak
    /// memory), with the number of folders there are to list (for an estimate of the total).
    /// - Returns: Whether every folder could be listed.
    package func recordNames(io: FileIO, _ body: (_ names: [String], _ folders: Int) -> Void) throws(Errno) -> Bool {
        try recordNames(io: io, skipping: { _ in false }, body)
    }

    /// ``recordNames(io:_:)``, leaving unlisted the shard folders `skip` returns `true` for
    /// (folders whose names an index snapshot vouches for; see ``FolderStamps``). The root is
    /// always listed.
    package func recordNames(
        io: FileIO, skipping skip: (_ shard: String) -> Bool, _ body: (_ names: [String], _ folders: Int) -> Void
    ) throws(Errno) -> Bool {
        var rootNames: [String] = []
        var isComplete = true
        // A name that is not UTF-8 is no record's (``FileName``): it is left out, never repaired
        // into the name of another file.
        let entries = try io.listDirectory(root).compactMap { entry in
            entry.name.flatMap { Self.isReserved($0) ? nil : (name: $0, isDirectory: entry.isDirectory) }
        }
        let folders = 1 + entries.count { shard(for: $0.name) == $0.name && $0.isDirectory != false }
        for entry in entries {
            guard let shard = shard(for: entry.name) else {
                if entry.isDirectory != true { rootNames.append(entry.name) }
                continue
            }
            guard shard == entry.name, entry.isDirectory != false, !skip(shard) else { continue }
            do throws(Errno) {
                var names: [String] = []
                for file in try io.listDirectory(root + "/" + entry.name) {
                    guard let name = file.name, Self.shard(for: name) == entry.name, !Self.isReserved(name) else { continue }
                    names.append(name)
                }
                body(names, folders)
            } catch let error where error == .notADirectory || error == .tooManySymbolicLinks || error == .untrusted {
                // A shard-named file (or a link) at the root, not a shard folder; or a folder the
                // cache does not trust (``FolderTrust``), whose files are not its records.
            } catch {
                isComplete = false
            }
        }
        body(rootNames, folders)
        return isComplete
    }

    /// The stamps of every shard folder (``FolderStamp``), by name; empty in the flat layout.
    /// - Throws: ``Errno`` when the root cannot be listed; a folder that cannot be `stat`ed has no stamp.
    package func shardStamps(io: FileIO) throws(Errno) -> [String: FolderStamp] {
        guard folderLayout == .sharded else { return [:] }
        var stamps: [String: FolderStamp] = [:]
        for entry in try io.listDirectory(root) where entry.isDirectory != false {
            guard let name = entry.name, !Self.isReserved(name), shard(for: name) == name,
                let info = try? io.info(atPath: rootSlash + name), info.kind == .directory
            else { continue }
            stamps[name] = FolderStamp(info)
        }
        return stamps
    }

    /// The stamp of one shard folder now, or `nil` when it cannot be `stat`ed or is not a folder.
    package func stamp(ofShard shard: String, io: FileIO) -> FolderStamp? {
        guard let info = try? io.info(atPath: rootSlash + shard), info.kind == .directory else { return nil }
        return FolderStamp(info)
    }

    /// The layout a folder without metadata shows: ``FolderLayout/flat`` when a file (not a
    /// folder) sits at the root under a name long enough to have a shard, which the sharded
    /// layout never puts there; ``FolderLayout/sharded`` when shard folders hold records and no
    /// such file exists; `nil` when the folder holds neither (empty, or only short names).
    /// - Throws: ``Errno`` when the root cannot be listed.
    package static func detect(root: String, io: FileIO) throws(Errno) -> FolderLayout? {
        var sawShardFolder = false
        // A name that is not UTF-8 is no record's: it shows neither layout.
        for entry in try io.listDirectory(root) {
            guard let name = entry.name, !isReserved(name), let shard = shard(for: name) else { continue }
            var isDirectory = entry.isDirectory
            if isDirectory == nil { isDirectory = (try? io.info(atPath: root + "/" + name))?.kind == .directory }
            if isDirectory == true {
                if shard == name { sawShardFolder = true }
            } else {
                return .flat
            }
        }
        return sawShardFolder ? .sharded : nil
    }
}

/// The small file that records the settings a directory's layout depends on, and the default
/// expiration its records are judged by.
package struct DirectoryMetadata: Codable, Sendable, Equatable {
    /// The format version; this version of Larder reads and writes 1.
    package var format: Int
    /// The key encoding's description: `sha256`, `verbatim` or `custom:NAME`.
    package var keyEncoding: String
    /// The layout: `shard2` (shard folders, ``FolderLayout/sharded``) or `flat`.
    package var layout: String
    /// The expiry, in seconds, of records stored without a ttl, as the cache that last opened
    /// the folder for writing saw it; absent in folders written before Larder 0.1.
    package var defaultExpiration: Double?
    /// The cache's ``DiskCacheOptions/name``; absent in folders written before Larder 0.1.
    package var name: String?

    package static let currentFormat = 1

    package init(keyEncoding: String, layout: FolderLayout, defaultExpiration: Double?, name: String?) {
        format = Self.currentFormat
        self.keyEncoding = keyEncoding
        self.layout = layout.metadataName
        self.defaultExpiration = defaultExpiration
        self.name = name
    }

    /// The layout, or `nil` for one this version does not know.
    package var folderLayout: FolderLayout? { FolderLayout(metadataName: layout) }
}

extension FolderLayout {
    /// ``DiskLayout/withRelativePath(for:_:)`` in this layout, which is all a path relative to
    /// the root depends on: a read passes the layout alone down to its open, where passing the
    /// ``DiskLayout`` retained and released its two path strings.
    package func withRelativePath<T, E: Error>(
        for name: RecordName, _ body: (_ path: UnsafePointer<CChar>, _ isNested: Bool) throws(E) -> T
    ) throws(E) -> T {
        let isSharded = self == .sharded
        return try name.withUTF8 { (name) throws(E) -> T in
            let isFast = isSharded && name.count >= 2 && name[0] < 0x80 && name[1] < 0x80
            guard isFast else {
                let path = DiskLayout.relativePath(for: String(decoding: name, as: UTF8.self), in: self)
                let isNested = path.utf8.contains(UInt8(ascii: "/"))
                return try path.withCString { pointer in Result { () throws(E) in try body(pointer, isNested) } }.get()
            }
            return try withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + 4) { path in
                path.withMemoryRebound(to: UInt8.self) { path in
                    path[0] = name[0]
                    path[1] = name[1]
                    path[2] = UInt8(ascii: "/")
                    UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(path)[3 ..< 3 + name.count]).copyMemory(
                        from: name)
                    path[3 + name.count] = 0
                }
                return Result { () throws(E) in try body(UnsafePointer(path.baseAddress!), true) }
            }.get()
        }
    }
}
