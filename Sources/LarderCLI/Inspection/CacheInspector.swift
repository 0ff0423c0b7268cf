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
            layout: context.layout, keyEncoding: context.keyEncoding, defaultExpiration: context.defaultExpiration, io: context.files)
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
        return RecordEntry(record, relativePath: String(record.path.dropFirst(context.layout.root.count + 1)))
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
