import Foundation

/// One entry read from a preloaded directory.
struct PreloadedEntry: Sendable {
    var key: String
    var data: Data
    var expiry: Expiry
    var isLocked: Bool
}

/// Reads a ``PreloadedEntries`` directory: imports it at open (``PreloadedEntries/Mode/copyIfMissing``)
/// or answers misses from it (``PreloadedEntries/Mode/readThrough``). Immutable once built.
final class PreloadedSource: Sendable {
    /// The largest preloaded file read, in bytes: reads take a size bound.
    static let maximumFileSize = 1 << 30

    let entries: PreloadedEntries
    /// Rooted at the directory, so that no link in it (a file or a folder) leads outside it and
    /// no FIFO blocks a read; `nil` when the directory cannot be opened (then it holds nothing).
    private let io: FileIO?
    private let root: String
    /// For ``PreloadedEntries/Format/records``: each key's file, found by a scan at open.
    private let recordPaths: [String: String]
    /// For ``PreloadedEntries/Format/cacheHandler``: the folder, read through its own rooted `FileIO`.
    private let cacheHandlerFolder: CacheHandlerFolder?

    /// Scans the directory (for read-through records), listing what it finds in `report`.
    init(entries: PreloadedEntries, report: inout PreloadReport) {
        self.entries = entries
        let root = DiskLayout(root: entries.directory.standardizedFileURL.path).root
        self.root = root
        let io = try? FileIO().rooted(at: root)
        self.io = io
        var paths: [String: String] = [:]
        if let io, entries.mode == .readThrough, entries.format == .records {
            for path in Self.files(under: root, recursive: true, io: io) {
                switch Self.readRecord(path, readPayload: false, io: io) {
                case .success(let entry):
                    if paths[entry.key] == nil { report.available.append(entry.key) }
                    paths[entry.key] = path
                case .failure(let failure):
                    report.failures.append(failure)
                }
            }
        }
        recordPaths = paths
        cacheHandlerFolder = entries.format == .cacheHandler ? try? CacheHandlerFolder(path: root) : nil
    }

    /// Imports every entry missing from `disk` with a fresh update time; leaves present ones
    /// alone; lists unreadable files (and failed stores) in `report` and carries on.
    func importMissing(into disk: DiskCache, report: inout PreloadReport) {
        if entries.format == .cacheHandler { return importCacheHandlerFiles(into: disk, report: &report) }
        guard let io else { return }
        let recursive = entries.format == .records
        for path in Self.files(under: root, recursive: recursive, io: io) {
            let name = String(path.split(separator: "/").last ?? "")
            // Plain files are named by their key: check before reading the payload.
            if entries.format == .files, disk.contains(name) {
                report.alreadyPresent.append(name)
                continue
            }
            let entry: PreloadedEntry
            switch read(path, name: name) {
            case .success(let read): entry = read
            case .failure(let failure):
                report.failures.append(failure)
                continue
            }
            if entries.format == .records, disk.contains(entry.key) {
                report.alreadyPresent.append(entry.key)
                continue
            }
            do {
                try disk.store(entry.data, forKey: entry.key, expiry: entry.expiry, locked: entry.isLocked)
                report.imported.append(entry.key)
            } catch {
                report.failures.append(.init(path: path, reason: "cannot store it under '\(entry.key)': \(error)"))
            }
        }
    }

    /// The preloaded entry for `key`, or `nil` when there is none or it cannot be read.
    func entry(forKey key: String) -> PreloadedEntry? {
        guard let io else { return nil }
        switch entries.format {
        case .files:
            // Only keys that are safe file names can name a file in the directory.
            guard (try? KeyEncoding.validateFileName(key, key: key)) != nil else { return nil }
            return try? read(root + "/" + key, name: key).get()
        case .records:
            guard let path = recordPaths[key], let entry = try? Self.readRecord(path, readPayload: true, io: io).get(),
                entry.key == key
            else { return nil }
            return entry
        case .cacheHandler:
            // The file CacheHandler would have written for this key.
            guard let folder = cacheHandlerFolder,
                case .entry(let found) = folder.read(SHA256Hash.hex(of: key), maximumPayloadSize: Self.maximumFileSize)
            else { return nil }
            return PreloadedEntry(key: key, data: found.payload, expiry: entries.expiry, isLocked: false)
        }
    }

    /// Copies CacheHandler's files the cache lacks, as its `copyPreloadedCacheIfNeeded` does:
    /// each under its own name (the SHA-256 of its key, which is the name the disk's `.sha256`
    /// encoding gives the key), with a fresh update time and ``PreloadedEntries/expiry``
    /// (CacheHandler gives each copy a fresh modification time, so it lives 6 days from the copy).
    private func importCacheHandlerFiles(into disk: DiskCache, report: inout PreloadReport) {
        guard let folder = cacheHandlerFolder, let survey = try? folder.survey() else { return }
        guard case .sha256 = disk.options.keyEncoding else {
            report.failures.append(
                .init(
                    path: root,
                    reason:
                        "CacheHandler files are named by the SHA-256 of their keys: they can only be copied into a cache with sha256 keys, not \(disk.options.keyEncoding)"
                ))
            return
        }
        let ttl: UInt64
        do { ttl = try ExpiryRule.headerTTL(for: entries.expiry, key: nil) } catch {
            report.failures.append(.init(path: root, reason: "the entries' expiry is invalid: \(error.message)"))
            return
        }
        // Folders are ignored, as in the other formats; every other file that is not an entry is listed.
        for skipped in survey.skipped where skipped.reason != .folder {
            report.failures.append(.init(path: folder.path(of: skipped.name), reason: "\(skipped.reason)"))
        }
        for name in survey.candidates {
            let path = folder.path(of: name)
            // Checked before the file is read: most launches find every entry present.
            if disk.containsLiveRecord(named: name) {
                report.alreadyPresent.append(name)
                continue
            }
            switch folder.read(name, maximumPayloadSize: disk.options.maximumRecordSize) {
            case .skipped(let reason):
                report.failures.append(.init(path: path, reason: "\(reason)"))
            case .entry(let entry):
                do {
                    let updateTime = DiskCache.seconds(disk.options.clock.now)
                    if try disk.storeUnkeyedRecord(entry.payload, name: name, updateTime: updateTime, ttl: ttl) {
                        report.imported.append(name)
                    } else {
                        report.alreadyPresent.append(name)
                    }
                } catch {
                    report.failures.append(.init(path: path, reason: "cannot store it: \(error)"))
                }
            }
        }
    }

    // MARK: - Reading files

    private func read(_ path: String, name: String) -> Result<PreloadedEntry, PreloadReport.Failure> {
        guard let io else { return .failure(.init(path: path, reason: "the directory cannot be opened")) }
        switch entries.format {
        case .records:
            return Self.readRecord(path, readPayload: true, io: io)
        case .cacheHandler:
            // Read by `importCacheHandlerFiles` and `entry(forKey:)`, which know the file's name.
            return .failure(.init(path: path, reason: "not a plain file or a record"))
        case .files:
            do {
                let bytes = try io.readFile(path, limit: Self.maximumFileSize)
                return .success(PreloadedEntry(key: name, data: Data(bytes), expiry: entries.expiry, isLocked: false))
            } catch {
                return .failure(.init(path: path, reason: "cannot read it: \(error)"))
            }
        }
    }

    private static func readRecord(_ path: String, readPayload: Bool, io: FileIO) -> Result<PreloadedEntry, PreloadReport.Failure> {
        let result: RecordReadResult
        do {
            result = try RecordFile(io: io).read(path, readPayload: readPayload, verifyPayload: true)
        } catch {
            return .failure(.init(path: path, reason: "cannot read it: \(error)"))
        }
        switch result {
        case .missing:
            return .failure(.init(path: path, reason: "it is missing"))
        case .corrupt(let reason):
            return .failure(.init(path: path, reason: "not a valid record (\(reason))"))
        case .foreign:
            return .failure(.init(path: path, reason: "not a record (no record magic, or not a regular file)"))
        case .record(let contents):
            let name = String(path.split(separator: "/").last ?? "")
            return .success(
                PreloadedEntry(
                    key: contents.storedKey ?? name, data: contents.payload ?? Data(),
                    expiry: contents.header.ttl == 0 ? .default : .seconds(TimeInterval(contents.header.ttl)),
                    isLocked: contents.header.refCount > 0))
        }
    }

    /// The paths of the non-hidden files in `folder` (and, when `recursive`, its non-hidden
    /// subfolders), sorted so that imports happen in a stable order.
    static func files(under folder: String, recursive: Bool, io: FileIO) -> [String] {
        guard let listing = try? io.listDirectory(folder) else { return [] }
        var result: [String] = []
        for entry in listing.sorted(by: { $0.fileName < $1.fileName }) {
            // A name that is not UTF-8 is no record's (no key could name it): never opened.
            guard let name = entry.name, !name.hasPrefix(".") else { continue }
            let path = folder + "/" + name
            var isDirectory = entry.isDirectory
            if isDirectory == nil, let info = try? io.info(atPath: path) { isDirectory = info.kind == .directory }
            if isDirectory == true {
                if recursive { result += files(under: path, recursive: true, io: io) }
            } else {
                result.append(path)
            }
        }
        return result
    }
}
