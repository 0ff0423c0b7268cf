import Foundation

extension DiskCache {
    /// Opens (creating it, with its parents, unless read-only) the cache's folder, and checks
    /// that it is safe to write to: owned by the current user and not writable by group or
    /// others (``CacheSharing/group`` accepts another owner and group write).
    ///
    /// A read-only cache skips the ownership check: it writes nothing, and every read beneath
    /// the root is bounded, non-blocking and never follows a link, so a folder that belongs to
    /// someone else can at worst feed it records (which is what reading someone else's cache means).
    /// - Returns: The layout, and a ``FileIO`` rooted at the folder, creating files and folders
    ///   with the modes of ``DiskCacheOptions/sharing``.
    ///
    /// A writer then refuses a folder that holds files but is not a cache (``checkIsCache(layout:options:io:)``),
    /// before it creates anything in it (its lock, metadata or temporary folder).
    /// - Throws: ``CacheError/Code/notFound`` (read-only, no folder), ``CacheError/Code/unsafeDirectory``,
    ///   ``CacheError/Code/notACache``, ``CacheError/Code/ioFailure``.
    static func openFolder(options: DiskCacheOptions, systemCalls: SystemCalls) throws(CacheError) -> (layout: DiskLayout, io: FileIO) {
        let layout = DiskLayout(root: options.directory.standardizedFileURL.path)
        var io = FileIO(calls: systemCalls)
        io.folderMode = options.sharing.folderMode
        io.fileMode = options.sharing.fileMode
        io.forcesModes = options.sharing == .group
        let rooted: FileIO
        do {
            // Under `.fsync`, folders made here are synced into their parents: else the first
            // synced records could vanish in a power loss with the folder that holds them.
            // A writer trusts its own user (its group, shared so); a reader also the root's owner.
            let trust = FolderTrust(sharedWithGroup: options.sharing == .group, acceptsRootOwner: options.isReadOnly)
            rooted = try io.rooted(
                at: layout.root, create: !options.isReadOnly, syncCreated: options.durability == .fsync, trust: trust)
        } catch {
            if options.isReadOnly, error == .noSuchFileOrDirectory || error == .notADirectory {
                throw CacheError(
                    .notFound, "the cache directory does not exist or is not a folder", path: layout.root, errno: error.rawValue)
            }
            if error == .fileExists || error == .notADirectory, let file = firstFile(onPathTo: layout.root, io: io) {
                throw CacheError(
                    .ioFailure, "cannot use the cache directory: \(file) is a file, not a folder", path: layout.root,
                    errno: error.rawValue)
            }
            throw CacheError(.ioFailure, "cannot create or open the cache directory", path: layout.root, errno: error.rawValue)
        }
        guard !options.isReadOnly, let info = rooted.root?.info else { return (layout, rooted) }
        try checkRootIsSafe(info, options: options, path: layout.root)
        try checkIsCache(layout: layout, options: options, io: rooted)
        return (layout, rooted)
    }

    /// The first of `path` and the folders above it, from the top, that exists and is not a
    /// folder (nor a link), or `nil` when there is none.
    private static func firstFile(onPathTo path: String, io: FileIO) -> String? {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            guard let info = try? io.info(atPath: prefix) else { return nil }
            if info.kind != .directory && info.kind != .symbolicLink { return prefix }
        }
        return nil
    }

    /// Refuses, for a writer, a folder that holds files but is neither a Larder cache (it has
    /// metadata) nor an SPTPersistentCache folder (``DiskLayout/recognize(root:io:)``), unless
    /// ``DiskCacheOptions/adoptsForeignFolder`` is set. Changes nothing.
    /// - Throws: ``CacheError/Code/notACache``, ``CacheError/Code/ioFailure``.
    static func checkIsCache(layout: DiskLayout, options: DiskCacheOptions, io: FileIO) throws(CacheError) {
        guard !options.isReadOnly, !options.adoptsForeignFolder else { return }
        let contents: FolderContents
        do {
            // Metadata of any kind (checked when read) makes it Larder's.
            if try io.lstat(layout.metadataPath) != nil { return }
            contents = try DiskLayout.recognize(root: layout.root, io: io)
        } catch {
            throw CacheError(.ioFailure, "cannot list the cache directory", path: layout.root, errno: error.rawValue)
        }
        guard contents == .other else { return }
        throw CacheError(
            .notACache,
            "the folder holds files but is not a cache: it has no Larder metadata (.larder) and no SPTPersistentCache record, so a cache opened on it could take its files for records; nothing in it was changed (use an empty or new folder, or set DiskCacheOptions.adoptsForeignFolder to keep a cache beside other files)",
            path: layout.root)
    }

    /// Refuses a root a writer must not use: one owned by another user, or writable by group or
    /// others (``CacheSharing/group`` accepts another owner and group write). Applied at open and
    /// when the cache makes its deleted folder again (`DiskCache+Recovery.swift`).
    /// - Throws: ``CacheError/Code/unsafeDirectory``.
    static func checkRootIsSafe(_ info: FileInfo, options: DiskCacheOptions, path: String) throws(CacheError) {
        if options.sharing != .group, info.ownerID != ProcessIdentity.effectiveUserID {
            throw CacheError(
                .unsafeDirectory,
                "the cache directory belongs to user \(info.ownerID), not to this user; anyone who controls it could read and change what the cache stores (set DiskCacheOptions.sharing to .group for a deliberately shared cache)",
                path: path)
        }
        let writableByOthers = options.sharing == .group ? info.permissions & 0o002 != 0 : info.isWritableByGroupOrOthers
        if writableByOthers {
            let mode = String(info.permissions, radix: 8)
            throw CacheError(
                .unsafeDirectory,
                "the cache directory (mode \(mode)) is writable by \(options.sharing == .group ? "others" : "group or others"), who could read, replace or plant records; chmod it 700 (or set DiskCacheOptions.sharing to .group for a deliberately shared cache)",
                path: path)
        }
    }

    /// What opening learned of a folder: its layout, and whether it was detected from the files
    /// of a folder without metadata.
    struct FolderFacts {
        var layout: FolderLayout
        var wasDetected: Bool
    }

    /// Reads the metadata, refuses a mismatched key encoding, settles the layout (the one the
    /// metadata records; for a folder without metadata, the one its files show, else the
    /// options'), and (unless read-only) writes the metadata when it is missing or out of date.
    static func checkMetadata(layout: DiskLayout, options: DiskCacheOptions, io: FileIO) throws(CacheError) -> FolderFacts {
        let requested = options.keyEncoding.description
        let existing = try readMetadata(layout: layout, io: io)
        let facts: FolderFacts
        if let existing {
            guard existing.format <= DirectoryMetadata.currentFormat else {
                throw CacheError(
                    .unsupportedFormat,
                    "the directory has format \(existing.format); this Larder reads up to \(DirectoryMetadata.currentFormat)",
                    path: layout.metadataPath)
            }
            guard existing.keyEncoding == requested else {
                throw CacheError(
                    .keyEncodingMismatch, "the directory was created with key encoding '\(existing.keyEncoding)', not '\(requested)'",
                    path: layout.root)
            }
            guard let recorded = existing.folderLayout else {
                throw CacheError(
                    .unsupportedFormat, "the directory has layout '\(existing.layout)', which this Larder does not know",
                    path: layout.metadataPath)
            }
            facts = FolderFacts(layout: recorded, wasDetected: false)
        } else {
            // No metadata: a new directory, SPTPersistentCache's records (which use verbatim keys),
            // or (adopted, or read-only) a folder of other files, whose layout is the options'.
            let detected: FolderLayout?
            let holdsRecords: Bool
            do {
                switch try DiskLayout.recognize(root: layout.root, io: io) {
                case .spt(let shown):
                    // Records only at the root under short names fit both layouts: the options' decides.
                    detected = shown
                    holdsRecords = true
                case .empty, .other:
                    detected = nil
                    holdsRecords = false
                }
            } catch {
                throw CacheError(.ioFailure, "cannot list the cache directory", path: layout.root, errno: error.rawValue)
            }
            if holdsRecords, case .verbatim = options.keyEncoding {
            } else if holdsRecords {
                throw CacheError(
                    .keyEncodingMismatch,
                    "the directory holds records without Larder metadata, which read as SPTPersistentCache records with verbatim keys, not '\(requested)'",
                    path: layout.root)
            }
            facts = FolderFacts(layout: detected ?? options.layout, wasDetected: detected != nil)
        }
        guard !options.isReadOnly else { return facts }
        let metadata = DirectoryMetadata(
            keyEncoding: requested, layout: facts.layout, defaultExpiration: options.effectiveDefaultExpiration, name: options.name)
        guard metadata != existing else { return facts }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            let data = try encoder.encode(metadata)
            // Synced whatever the durability: records follow, and a power loss that kept them
            // but not the metadata (or kept its name but not its bytes) would leave a folder
            // that no longer opens (the power-loss tests check it, docs/RELIABILITY.md).
            try io.writeFileAtomically(layout.metadataPath, Array(data), sync: true)
        } catch let error as Errno {
            throw CacheError(.ioFailure, "cannot write the cache's metadata", path: layout.metadataPath, errno: error.rawValue)
        } catch {
            throw CacheError(.ioFailure, "cannot encode the cache's metadata", path: layout.metadataPath)
        }
        return facts
    }

    /// The folder's metadata, or `nil` when it has none.
    /// - Throws: ``CacheError/Code/unsafeDirectory`` for a link, FIFO, folder or huge file in its
    ///   place, ``CacheError/Code/unsupportedFormat`` for one that is not valid,
    ///   ``CacheError/Code/ioFailure``.
    package static func readMetadata(layout: DiskLayout, io: FileIO) throws(CacheError) -> DirectoryMetadata? {
        let bytes: [UInt8]
        do {
            bytes = try io.readFile(layout.metadataPath, limit: 64 * 1024)
        } catch let error where error == .noSuchFileOrDirectory {
            return nil
        } catch let error where error == .tooManySymbolicLinks || error == .notARegularFile || error == .fileTooLarge {
            throw CacheError(
                .unsafeDirectory, "the cache's metadata is a link, a FIFO, a folder or far too large, not the small file Larder writes",
                path: layout.metadataPath, errno: error.rawValue)
        } catch let error where error == .untrusted {
            throw CacheError(
                .unsafeDirectory,
                "the cache's metadata belongs to another user or others may write it, so it cannot be trusted; remove it if this is your cache",
                path: layout.metadataPath, errno: error.rawValue)
        } catch {
            throw CacheError(.ioFailure, "cannot read the cache's metadata", path: layout.metadataPath, errno: error.rawValue)
        }
        guard let metadata = try? JSONDecoder().decode(DirectoryMetadata.self, from: Data(bytes)) else {
            throw CacheError(.unsupportedFormat, "the cache's metadata file is not valid", path: layout.metadataPath)
        }
        return metadata
    }

    /// Creates the temporary folder and removes what a crashed writer left in it, and the
    /// temporary files of metadata and snapshot writes it left at the root. With
    /// `sharedWithWriters`, only the files of processes no longer running go: the names begin
    /// with their writer's pid, and the other writers sharing the folder are writing theirs.
    /// - Throws: ``CacheError/Code/unsafeDirectory`` when the temporary folder belongs to another
    ///   user or others may write it (``FolderTrust``): records written there could be swapped
    ///   before they are renamed into place. ``CacheError/Code/ioFailure``.
    static func prepareTemporaryFolder(layout: DiskLayout, io: FileIO, sharedWithWriters: Bool = false) throws(CacheError) {
        // "<pid>-<n>" in the temporary folder, "<name>.tmp-<pid>-<n>" at the root.
        func isAbandoned(_ name: String) -> Bool {
            guard sharedWithWriters else { return true }
            let tail = name.range(of: ".tmp-").map { name[$0.upperBound...] } ?? name[...]
            guard let pid = tail.split(separator: "-").first.flatMap({ Int32($0) }) else { return true }
            return !ProcessIdentity.isRunning(pid)
        }
        if let root = io.root, let problem = root.problem(withFolder: DiskLayout.temporaryFolderName) {
            throw CacheError(
                .unsafeDirectory,
                "the cache's temporary folder \(problem); whoever controls it could swap the records this cache writes; remove it if this is your cache",
                path: layout.temporaryFolder)
        }
        do {
            // A link, FIFO or file planted where the folder goes is removed (a link, never its
            // target), so that temporary files cannot be written through it.
            if let info = try io.info(atPath: layout.temporaryFolder), info.kind != .directory {
                try io.unlink(layout.temporaryFolder)
            }
            try io.mkdir(layout.temporaryFolder)
            // `unlink` removes files and links only: a folder in there stays, whatever it holds.
            // Each file by its exact name (``FileName``), whether or not it is UTF-8.
            let temporary = try io.listDirectory(layout.temporaryFolder)
            if !temporary.isEmpty {
                let folder = try io.openDirectory(layout.temporaryFolder)
                defer { io.close(folder) }
                for entry in temporary where entry.name.map(isAbandoned) ?? !sharedWithWriters {
                    _ = try? io.unlink(entry.fileName, inFolder: folder)
                }
            }
            // `FileIO.writeFileAtomically` writes `<path>.tmp-<pid>-<n>` beside its target; the
            // caller holds the directory lock, so no live writer owns one but those sharing it.
            for entry in try io.listDirectory(layout.root) where entry.isDirectory != true {
                guard let name = entry.name,
                    [DiskLayout.metadataName, DiskLayout.snapshotName, DiskLayout.outboxName].contains(where: {
                        name.hasPrefix($0 + ".tmp-")
                    })
                else { continue }
                if isAbandoned(name) { _ = try? io.unlink(layout.root + "/" + name) }
            }
        } catch {
            throw CacheError(.ioFailure, "cannot prepare the temporary folder", path: layout.temporaryFolder, errno: error.rawValue)
        }
    }
}
