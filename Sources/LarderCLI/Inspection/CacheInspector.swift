#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

/// Reads a cache directory's records with `RecordFile`, without the directory's lock and without
/// removing anything, so corrupt records are reported rather than cleaned away.
struct CacheInspector {
    let context: CacheContext
    let records: RecordFile
    private var io: FileIO { records.io }

    init(_ context: CacheContext) {
        self.context = context
        records = RecordFile(io: context.files)
    }

    /// The file names of every record, sorted, found the way `DiskCache` finds them.
    func recordNames() throws(CommandFailure) -> [String] {
        do {
            return try context.layout.recordNames(io: io).names.sorted()
        } catch {
            throw CommandFailure(.cacheError, "cannot read cache directory '\(context.layout.root)': \(String(cString: strerror(error.rawValue)))")
        }
    }

    /// Reads one record.
    /// - Parameters:
    ///   - name: Its file name.
    ///   - readPayload: Whether to read (and with `verify`, check) the payload, or only header and key.
    func entry(named name: String, readPayload: Bool, verify: Bool = true) -> RecordEntry? {
        entry(named: name) { path throws(Errno) in try records.read(path, readPayload: readPayload, verifyPayload: verify) }
    }

    /// Reads one record's header and key and checks its payload's CRC-32 in chunks, without
    /// reading the payload into memory (`larder verify`). The entry carries no payload.
    func verifiedEntry(named name: String) -> RecordEntry? {
        entry(named: name) { path throws(Errno) in try records.verify(path) }
    }

    private func entry(named name: String, reading: (String) throws(Errno) -> RecordReadResult) -> RecordEntry? {
        let path = context.layout.path(for: name)
        let relative = String(path.dropFirst(context.layout.root.count + 1))
        var entry = RecordEntry(
            file: name, relativePath: relative, path: path, key: context.encodingName == "verbatim" ? name : nil,
            fileSize: 0, header: nil, corruption: nil, status: .ok, payload: nil)
        let result: RecordReadResult
        do {
            result = try reading(path)
        } catch {
            // Unreadable (permissions, I/O): report it as corrupt with what stat says.
            entry.corruption = .truncated
            entry.status = .corrupt
            return entry
        }
        switch result {
        case .missing:
            return nil
        case .corrupt(let reason):
            entry.corruption = reason
            entry.status = .corrupt
            entry.fileSize = (try? io.info(atPath: path))?.size ?? 0
            // Show what the header says where the header itself is sound.
            if reason == .badPayloadChecksum || reason == .badStoredKey,
               case .record(let contents)? = try? records.read(path, readPayload: false) {
                entry.header = contents.header
                entry.key = contents.storedKey ?? entry.key
            }
        case .record(let contents):
            entry.header = contents.header
            entry.fileSize = contents.fileSize
            entry.payload = contents.payload
            if let stored = contents.storedKey {
                entry.key = stored
                // A stored key that does not name this file is what DiskCache calls a bad stored key.
                if let encoding = context.keyEncoding, (try? encoding.fileName(for: stored)) != name {
                    entry.corruption = .badStoredKey
                    entry.status = .corrupt
                    return entry
                }
            }
            entry.status = contents.header.isExpired(now: context.now, defaultExpiration: context.defaultExpiration) ? .expired : .ok
        }
        return entry
    }

    /// Every record, read with `readPayload`.
    /// - Parameter progress: Called after each record with (done, total).
    func entries(readPayload: Bool, progress: ((Int, Int) -> Void)? = nil) throws(CommandFailure) -> [RecordEntry] {
        let names = try recordNames()
        var result: [RecordEntry] = []
        result.reserveCapacity(names.count)
        for (i, name) in names.enumerated() {
            if var entry = entry(named: name, readPayload: readPayload) {
                if !readPayload { entry.payload = nil }
                result.append(entry)
            }
            progress?(i + 1, names.count)
        }
        return result
    }

    /// Finds the record for a key: through the directory's key encoding, else (custom encodings)
    /// by scanning stored keys; a record's file name is accepted too, for records whose key is unknown.
    func entry(forKey key: String, readPayload: Bool, verify: Bool = true) throws(CommandFailure) -> RecordEntry? {
        if let encoding = context.keyEncoding, let name = try? encoding.fileName(for: key),
           let found = entry(named: name, readPayload: readPayload, verify: verify) {
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
