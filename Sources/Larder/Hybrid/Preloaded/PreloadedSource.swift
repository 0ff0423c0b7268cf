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
    /// The directory, for the `records` and `files` formats; `nil` when it cannot be opened
    /// (then it holds nothing).
    private let folder: EntryFolder?
    private let root: String
    /// For ``PreloadedEntries/Format/records``: each key's file, found by a scan at open.
    private let recordPaths: [String: String]
    /// For ``PreloadedEntries/Format/cacheHandler``: the folder, read through its own rooted `FileIO`.
    private let cacheHandlerFolder: CacheHandlerFolder?

    /// Scans the directory (for read-through records), listing what it finds in `report`.
    init(entries: PreloadedEntries, report: inout PreloadReport) {
        self.entries = entries
        let path = entries.directory.standardizedFileURL.path
        let folder = entries.format == .cacheHandler ? nil : try? EntryFolder(path: path)
        let cacheHandlerFolder = entries.format == .cacheHandler ? try? CacheHandlerFolder(path: path) : nil
        self.folder = folder
        self.cacheHandlerFolder = cacheHandlerFolder
        root = folder?.root ?? cacheHandlerFolder?.root ?? path
        var paths: [String: String] = [:]
        if let folder, entries.mode == .readThrough, entries.format == .records {
            for path in folder.files(recursive: true) {
                switch Self.readRecord(path, readPayload: false, in: folder) {
                case .success(let entry):
                    if paths[entry.key] == nil { report.available.append(entry.key) }
                    paths[entry.key] = path
                case .failure(let failure):
                    report.failures.append(failure)
                }
            }
        }
        recordPaths = paths
    }

    /// Imports every entry missing from `disk` with a fresh update time; leaves present ones
    /// alone; lists unreadable files (and failed stores) in `report` and carries on.
    func importMissing(into disk: DiskCache, report: inout PreloadReport) {
        if entries.format == .cacheHandler { return importCacheHandlerFiles(into: disk, report: &report) }
        guard let folder else { return }
        for path in folder.files(recursive: entries.format == .records) {
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
        switch entries.format {
        case .files:
            // Only keys that are safe file names can name a file in the directory.
            guard (try? KeyEncoding.validateFileName(key, key: key)) != nil else { return nil }
            return try? read(root + "/" + key, name: key).get()
        case .records:
            guard let folder, let path = recordPaths[key], let entry = try? Self.readRecord(path, readPayload: true, in: folder).get(),
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
                    let updateTime = disk.expiryRule.headerSeconds(disk.options.clock.now)
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
        guard let folder else { return .failure(.init(path: path, reason: "the directory cannot be opened")) }
        switch entries.format {
        case .records:
            return Self.readRecord(path, readPayload: true, in: folder)
        case .cacheHandler:
            // Read by `importCacheHandlerFiles` and `entry(forKey:)`, which know the file's name.
            return .failure(.init(path: path, reason: "not a plain file or a record"))
        case .files:
            do {
                let bytes = try folder.readFile(path, limit: Self.maximumFileSize)
                return .success(PreloadedEntry(key: name, data: Data(bytes), expiry: entries.expiry, isLocked: false))
            } catch {
                return .failure(.init(path: path, reason: "cannot read it: \(error)"))
            }
        }
    }

    private static func readRecord(_ path: String, readPayload: Bool, in folder: EntryFolder) -> Result<
        PreloadedEntry, PreloadReport.Failure
    > {
        switch folder.readRecord(path, readPayload: readPayload) {
        case .failure(let failure):
            return .failure(.init(path: path, reason: failure.reason))
        case .success(let record):
            return .success(
                PreloadedEntry(
                    key: record.key, data: record.payload, expiry: record.ttl == 0 ? .default : .seconds(TimeInterval(record.ttl)),
                    isLocked: record.isLocked))
        }
    }
}
