#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
@testable import Larder

/// Looks at a cache directory from outside the cache: which record files exist, what else lies
/// around, and whether the cache's index agrees with the files.
enum DiskAudit {
    /// Every regular file where the layout puts records: `<root>/<shard>/<name>` and one-character
    /// names at the root; with their lengths.
    static func recordFiles(in root: String) -> [String: Int] {
        var files: [String: Int] = [:]
        let manager = FileManager.default
        for name in (try? manager.contentsOfDirectory(atPath: root)) ?? [] where !name.hasPrefix(".") {
            let path = root + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                for file in (try? manager.contentsOfDirectory(atPath: path)) ?? [] {
                    var fileInfo = stat()
                    if lstat(path + "/" + file, &fileInfo) == 0, (fileInfo.st_mode & S_IFMT) == S_IFREG {
                        files[file] = Int(fileInfo.st_size)
                    }
                }
            } else if (info.st_mode & S_IFMT) == S_IFREG {
                files[name] = Int(info.st_size)
            }
        }
        return files
    }

    /// Files that should not be there once a cache has opened: anything in the temporary folder,
    /// and any hidden file at the root other than Larder's metadata, lock and snapshot.
    static func strayFiles(in root: String) -> [String] {
        let manager = FileManager.default
        var stray = ((try? manager.contentsOfDirectory(atPath: root + "/" + DiskLayout.temporaryFolderName)) ?? [])
            .map { DiskLayout.temporaryFolderName + "/" + $0 }
        let known: Set = [
            DiskLayout.metadataName, DiskLayout.lockName, DiskLayout.snapshotName, DiskLayout.journalName, DiskLayout.temporaryFolderName,
        ]
        for name in (try? manager.contentsOfDirectory(atPath: root)) ?? [] where name.hasPrefix(".") && !known.contains(name) {
            stray.append(name)
        }
        return stray.sorted()
    }

    /// The index image on disk (the base with its journal applied), as a reopened cache would
    /// read it; `nil` when it is absent (no base, or a journal that does not end in a commit).
    static func indexImage(_ cache: DiskCache) -> IndexJournal.Image? {
        guard let base = try? cache.io.readFile(cache.layout.snapshotPath, limit: 1 << 30) else { return nil }
        let journal = try? cache.io.readFile(cache.layout.journalPath, limit: 1 << 30)
        return IndexJournal.load(base: base, journal: journal, keyEncoding: cache.options.keyEncoding)
    }

    /// The index image's entries, least recently used first, as name, key, size, lock count
    /// and times; `nil` when the image is absent.
    static func imageFacts(_ cache: DiskCache) -> [EntryFacts]? {
        indexImage(cache).map { $0.index.entriesLeastRecentFirst.map(EntryFacts.init) }
    }

    /// The cache's index entries in the same form, least recently used first.
    static func indexFacts(_ cache: DiskCache) -> [EntryFacts] {
        cache.state.withLock { $0.index.entriesLeastRecentFirst.map(EntryFacts.init) }
    }

    /// What an image promises of one entry.
    struct EntryFacts: Equatable, CustomStringConvertible {
        var name: String
        var key: String?
        var diskSize: Int
        var lockCount: UInt32
        var ttl: UInt64
        var updateTime: UInt64
        var lastAccessMs: UInt64

        init(_ entry: IndexEntry) {
            (name, key, diskSize, lockCount, ttl) = (entry.name, entry.key, entry.diskSize, entry.lockCount, entry.ttl)
            (updateTime, lastAccessMs) = (entry.updateTime, entry.lastAccessMs)
        }

        var description: String { "\(key ?? name):\(diskSize)/\(lockCount)" }
    }

    /// Differences between the cache's index totals and the record files on disk (empty when they agree).
    static func indexMismatches(_ cache: DiskCache) -> [String] {
        let files = recordFiles(in: cache.layout.root)
        let onDiskSize = files.values.reduce(0) { $0 + cache.diskSize($1) }
        var problems: [String] = []
        let (count, size, lockedSize, names) = cache.state.withLock { s -> (Int, Int, Int, Set<String>) in
            s.index._checkInvariants()
            return (s.index.count, s.index.totalSize, s.index.lockedSize, Set(s.index.entriesLeastRecentFirst.map(\.name)))
        }
        if count != files.count { problems.append("index count \(count) != \(files.count) files") }
        if size != onDiskSize { problems.append("index size \(size) != \(onDiskSize) bytes on disk") }
        if lockedSize < 0 { problems.append("negative locked size \(lockedSize)") }
        let missing = Set(files.keys).subtracting(names)
        let phantom = names.subtracting(files.keys)
        if !missing.isEmpty { problems.append("files not in the index: \(missing.sorted().prefix(5))") }
        if !phantom.isEmpty { problems.append("index entries without files: \(phantom.sorted().prefix(5))") }
        return problems
    }
}
