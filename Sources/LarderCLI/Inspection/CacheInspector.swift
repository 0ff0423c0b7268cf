#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

/// The `larder` command's view of a directory's records: the library's ``RecordInspector``
/// (its own validation and expiry rules), with failures turned into command failures.
struct CacheInspector {
    let context: CacheContext
    let inspector: RecordInspector

    init(_ context: CacheContext) {
        self.context = context
        self.inspector = RecordInspector(
            layout: context.layout, keyEncoding: context.keyEncoding, defaultExpiration: context.defaultExpiration,
            roundsTimeToNearestSecond: context.roundsTimeToNearestSecond, io: context.files)
    }

    /// The file names of every record, sorted, found the way `DiskCache` finds them.
    func recordNames() throws(CommandFailure) -> [String] {
        do {
            return try inspector.recordNames()
        } catch {
            throw CommandFailure(
                .cacheError, "cannot read cache directory '\(context.layout.root)': \(String(cString: strerror(error.rawValue)))")
        }
    }

    /// Reads one record.
    /// - Parameters:
    ///   - name: Its file name.
    ///   - readPayload: Whether to read (and with `verify`, check) the payload, or only header and key.
    func entry(named name: String, readPayload: Bool, verify: Bool = true) -> RecordEntry? {
        entry(inspector.inspect(name: name, readPayload: readPayload, verifyPayload: verify, now: context.now))
    }

    /// Reads one record's header and key and checks its payload's CRC-32 in chunks, without
    /// reading the payload into memory (`larder verify`). The entry carries no payload.
    func verifiedEntry(named name: String) -> RecordEntry? {
        entry(inspector.verify(name: name, now: context.now))
    }

    private func entry(_ record: InspectedRecord?) -> RecordEntry? {
        guard let record else { return nil }
        return RecordEntry(record, relativePath: FileName(String(record.path.dropFirst(context.layout.root.count + 1))))
    }

    /// Every record, read with `readPayload`; files that are not records are left out (see ``inventory(readPayload:progress:)``).
    /// - Parameter progress: Called after each record with (done, total).
    func entries(readPayload: Bool, progress: ((Int, Int) -> Void)? = nil) throws(CommandFailure) -> [RecordEntry] {
        try inventory(readPayload: readPayload, progress: progress).records
    }

    /// Every record, read with `readPayload`, and apart from them every foreign entry: files at
    /// a record's place that are not records (no record magic, not a regular file) and entries
    /// where the layout puts no record (``foreignEntries()``). A cache never removes either.
    /// - Parameter progress: Called after each record with (done, total).
    func inventory(readPayload: Bool, progress: ((Int, Int) -> Void)? = nil) throws(CommandFailure) -> (
        records: [RecordEntry], foreign: [RecordEntry]
    ) {
        let names = try recordNames()
        var records: [RecordEntry] = []
        var foreign: [RecordEntry] = []
        records.reserveCapacity(names.count)
        for (i, name) in names.enumerated() {
            if var entry = entry(named: name, readPayload: readPayload) {
                if !readPayload { entry.payload = nil }
                if entry.status == .foreign { foreign.append(entry) } else { records.append(entry) }
            }
            progress?(i + 1, names.count)
        }
        foreign += try foreignEntries()
        foreign.sort { $0.relativePath < $1.relativePath }
        return (records, foreign)
    }

    /// The entries where the directory's layout puts no record and that are not Larder's own
    /// files (``DiskLayout/misplacedEntries(io:)``), as foreign entries: a folder is listed, not
    /// entered. Each is measured by its exact name, which need not be UTF-8.
    func foreignEntries() throws(CommandFailure) -> [RecordEntry] {
        let root = context.layout.root
        let misplaced: [MisplacedEntry]
        do { misplaced = try context.layout.misplacedEntries(io: context.files) } catch {
            throw CommandFailure(.cacheError, "cannot read cache directory '\(root)': \(String(cString: strerror(error.rawValue)))")
        }
        var folders: [String: Int32] = [:]
        defer { for fd in folders.values { context.files.close(fd) } }
        return misplaced.map { item in
            let folder = context.layout.folder(of: item)
            var size = 0
            if !item.isDirectory {
                if folders[folder] == nil { folders[folder] = try? context.files.openDirectory(folder) }
                if let fd = folders[folder], let info = (try? context.files.lstat(item.name, inFolder: fd)) ?? nil {
                    size = Int(info.st_size)
                }
            }
            // The library's record holds strings; a name that is not UTF-8 is kept in `misplaced`.
            let name = item.name.string ?? ""
            let record = InspectedRecord(foreignAt: folder + "/" + name, name: name, fileSize: size)
            let path = item.relativePath
            var entry = RecordEntry(record, relativePath: item.isDirectory ? FileName(bytes: path.bytes + [UInt8(ascii: "/")]) : path)
            entry.isDirectory = item.isDirectory
            entry.misplaced = item
            return entry
        }
    }

    /// Finds the record for a key: through the directory's key encoding, else (custom encodings)
    /// by scanning stored keys; a record's file name is accepted too, for records whose key is
    /// unknown. A file there that is not a record (foreign) is no record.
    func entry(forKey key: String, readPayload: Bool, verify: Bool = true) throws(CommandFailure) -> RecordEntry? {
        let found = try anyEntry(forKey: key, readPayload: readPayload, verify: verify)
        return found?.status == .foreign ? nil : found
    }

    private func anyEntry(forKey key: String, readPayload: Bool, verify: Bool) throws(CommandFailure) -> RecordEntry? {
        if let encoding = context.keyEncoding, let name = try? encoding.fileName(for: key),
            let found = entry(named: name, readPayload: readPayload, verify: verify)
        {
            return found
        }
        if context.keyEncoding == nil {
            for name in try recordNames() {
                if let found = entry(named: name, readPayload: false), found.key == key {
                    return entry(named: name, readPayload: readPayload, verify: verify)
                }
            }
        }
        if (try? KeyEncoding.verbatim.fileName(for: key)) != nil {
            return entry(named: key, readPayload: readPayload, verify: verify)
        }
        return nil
    }
}
