import Foundation

/// What one record file says, read without the directory's lock and without changing anything,
/// judged by the disk tier's own validation and expiry rules.
package struct InspectedRecord: Sendable {
    /// `ok`, `expired`, `corrupt`, or `foreign`: a file at a record's place that is no record
    /// Larder or SPTPersistentCache could have written (``RecordReadResult/foreign``), which
    /// a cache leaves alone.
    package enum Status: String, Sendable, Comparable {
        case ok, expired, corrupt, foreign
        package static func < (a: Status, b: Status) -> Bool { a.rawValue < b.rawValue }
    }

    /// The file name.
    package var name: String
    /// The absolute path.
    package var path: String
    /// The key: the stored key, or the file name in verbatim directories; `nil` when unknown.
    package var key: String?
    /// The file's length in bytes.
    package var fileSize: Int
    /// The decoded header; `nil` when it failed validation.
    package var header: RecordHeader?
    /// Why the record is corrupt, if it is.
    package var corruption: CorruptionReason?
    /// What the cache would make of it now.
    package var status: Status
    /// The payload, when it was read.
    package var payload: Data?
    /// When it expires by the cache's rule, seconds since the epoch; `nil` while locked and for
    /// records without a sound header.
    package var expirationTime: Double?

    /// A record as read: every field given.
    init(
        name: String, path: String, key: String?, fileSize: Int, header: RecordHeader?, corruption: CorruptionReason?, status: Status,
        payload: Data?, expirationTime: Double?
    ) {
        self.name = name
        self.path = path
        self.key = key
        self.fileSize = fileSize
        self.header = header
        self.corruption = corruption
        self.status = status
        self.payload = payload
        self.expirationTime = expirationTime
    }

    /// A ``Status/foreign`` entry found where the layout puts no record (``DiskLayout/misplacedEntries(io:)``).
    package init(foreignAt path: String, name: String, fileSize: Int) {
        self.init(
            name: name, path: path, key: nil, fileSize: fileSize, header: nil, corruption: nil, status: .foreign, payload: nil,
            expirationTime: nil)
    }
}

/// Reads a cache directory's records the way ``DiskCache`` does (``RecordFile``, ``DiskLayout``,
/// ``KeyEncoding``, ``ExpiryRule``), without the directory's lock and without removing anything,
/// so corrupt records are reported rather than cleaned away: the `larder` command's one reader.
package struct RecordInspector: Sendable {
    /// Where the records are.
    package let layout: DiskLayout
    /// The directory's key encoding, when it can be computed (`nil` for custom encodings).
    package let keyEncoding: KeyEncoding?
    /// The expiry rule with the directory's default expiration.
    package let expiryRule: ExpiryRule
    private let records: RecordFile

    /// An inspector of the directory `layout` describes, reading through `io` (rooted at the
    /// directory, so that no read leaves it).
    package init(layout: DiskLayout, keyEncoding: KeyEncoding?, defaultExpiration: Double, io: FileIO) {
        self.layout = layout
        self.keyEncoding = keyEncoding
        self.expiryRule = ExpiryRule(defaultExpiration: defaultExpiration)
        self.records = RecordFile(io: io)
    }

    /// The file names of every record, sorted, found the way ``DiskCache`` finds them.
    package func recordNames() throws(Errno) -> [String] {
        try layout.recordNames(io: records.io).names.sorted()
    }

    /// Reads one record.
    /// - Parameters:
    ///   - name: Its file name.
    ///   - readPayload: Whether to read (and with `verifyPayload`, check) the payload, or only
    ///     the header and key.
    ///   - now: The time that decides expiry, seconds since the epoch.
    /// - Returns: What the file says, or `nil` when there is no such file.
    package func inspect(name: String, readPayload: Bool, verifyPayload: Bool = true, now: Double) -> InspectedRecord? {
        inspect(name: name, now: now) { path throws(Errno) in
            try records.read(path, readPayload: readPayload, verifyPayload: verifyPayload)
        }
    }

    /// Reads one record's header and key and checks its payload's CRC-32 in chunks, without
    /// holding the payload in memory (`larder verify`); the result carries no payload.
    /// - Parameters:
    ///   - name: Its file name.
    ///   - now: The time that decides expiry, seconds since the epoch.
    /// - Returns: What the file says, or `nil` when there is no such file.
    package func verify(name: String, now: Double) -> InspectedRecord? {
        inspect(name: name, now: now) { path throws(Errno) in try records.verify(path) }
    }

    private func inspect(name: String, now: Double, reading: (String) throws(Errno) -> RecordReadResult) -> InspectedRecord? {
        let path = layout.path(for: name)
        var record = InspectedRecord(
            name: name, path: path, key: keyEncoding.map { $0.storesKey ? nil : name } ?? nil,
            fileSize: 0, header: nil, corruption: nil, status: .ok, payload: nil, expirationTime: nil)
        let result: RecordReadResult
        do {
            result = try reading(path)
        } catch {
            // Unreadable (permissions, I/O): a cache would have to treat it as corrupt.
            record.corruption = .truncated
            record.status = .corrupt
            return record
        }
        switch result {
        case .missing:
            return nil
        case .foreign:
            record.key = nil
            record.status = .foreign
            record.fileSize = ((try? records.io.lstat(path)) ?? nil).map { Int($0.st_size) } ?? 0
        case .corrupt(let reason):
            record.corruption = reason
            record.status = .corrupt
            record.fileSize = (try? records.io.info(atPath: path))??.size ?? 0
            // Show what the header says where the header itself is sound.
            if reason == .badPayloadChecksum || reason == .badStoredKey,
                case .record(let contents)? = try? records.read(path, readPayload: false)
            {
                record.header = contents.header
                record.key = contents.storedKey ?? record.key
            }
        case .record(let contents):
            record.header = contents.header
            record.fileSize = contents.fileSize
            record.payload = contents.payload
            if let stored = contents.storedKey {
                record.key = stored
                // A stored key that does not name this file is what the cache calls a bad stored key.
                if let keyEncoding, (try? keyEncoding.fileName(for: stored)) != name {
                    record.corruption = .badStoredKey
                    record.status = .corrupt
                    return record
                }
            }
            let header = contents.header
            let anchor = header.updateTimeSec
            record.status = expiryRule.isExpired(lockCount: header.refCount, ttl: header.ttl, anchor: anchor, now: now) ? .expired : .ok
            record.expirationTime = expiryRule.expirationTime(lockCount: header.refCount, ttl: header.ttl, anchor: anchor)
        }
        return record
    }
}
