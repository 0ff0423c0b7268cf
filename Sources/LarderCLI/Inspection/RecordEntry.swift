import Foundation
import Larder

/// What a record's file says about it, read without changing anything.
struct RecordEntry: Sendable {
    /// `ok`, `expired` or `corrupt`.
    enum Status: String, Sendable, Comparable {
        case ok, expired, corrupt
        static func < (a: Status, b: Status) -> Bool { a.rawValue < b.rawValue }
    }

    /// The file name.
    var file: String
    /// The path relative to the cache directory (`aa/aab…`).
    var relativePath: String
    /// The absolute path.
    var path: String
    /// The key: the stored key, or the file name in verbatim directories; `nil` when unknown.
    var key: String?
    /// The file's length in bytes.
    var fileSize: Int
    /// The decoded header; `nil` when it failed validation.
    var header: RecordHeader?
    /// Why the record is corrupt, if it is.
    var corruption: CorruptionReason?
    var status: Status
    /// The payload, when it was read.
    var payload: Data?

    /// The key, or the file name when the key is not known.
    var displayKey: String { key ?? file }
    var lockCount: Int? { header.map { Int($0.refCount) } }
    var ttl: Int? { header.map { Int($0.ttl) } }
    var payloadSize: Int? { header.map { Int($0.payloadSizeBytes) } }
    var updateTime: Double? { header.map { Double($0.updateTimeSec) } }
    /// The last access: the header's access time when it has one, else its update time.
    var lastAccessTime: Double? {
        guard let header else { return nil }
        return header.lastAccessMilliseconds.map { Double($0) / 1000 } ?? Double(header.updateTimeSec)
    }

    /// When the record expires, or `nil` while locked (and for corrupt records).
    func expirationTime(defaultExpiration: Double) -> Double? {
        guard let header, header.refCount == 0 else { return nil }
        let threshold = header.ttl > 0 ? Double(header.ttl) : defaultExpiration.rounded(.down)
        return Double(header.updateTimeSec) + threshold
    }
}
