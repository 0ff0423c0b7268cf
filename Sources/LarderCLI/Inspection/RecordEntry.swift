import Foundation
import Larder

/// What a record's file says about it, read without changing anything: the library's
/// ``InspectedRecord`` and its place in the directory.
struct RecordEntry: Sendable {
    /// `ok`, `expired`, `corrupt` or `foreign` (not a record: the cache leaves it alone).
    typealias Status = InspectedRecord.Status

    /// What the library's inspector read.
    var record: InspectedRecord
    /// The path relative to the cache directory (`aa/aab…`), exactly; a folder's ends in a
    /// slash. Only a foreign entry's can be other than UTF-8 (see ``misplaced``).
    var relativePath: FileName
    /// Whether it is a folder (only a foreign entry can be).
    var isDirectory = false
    /// Where the entry is, by its exact name, when it is where the layout puts no record; the
    /// record's ``path`` and ``file`` hold no name that is not UTF-8, so removing goes by this.
    var misplaced: MisplacedEntry?

    init(_ record: InspectedRecord, relativePath: FileName) {
        self.record = record
        self.relativePath = relativePath
    }

    /// ``relativePath`` for people: escaped for a terminal, each byte that is not UTF-8 as `\xHH`.
    var shownPath: TerminalText { TerminalText(verbatim: TerminalText.escaped(utf8: relativePath.bytes)) }

    /// ``relativePath`` for JSON: the path, or, when it is not UTF-8, ``shownPath``'s text.
    var jsonPath: String { relativePath.string ?? shownPath.text }

    /// ``relativePath``'s bytes in lower-case hex when it is not UTF-8 (JSON's `fileBytes`), else `nil`.
    var undecodablePathHex: String? {
        relativePath.string == nil ? relativePath.bytes.map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined() : nil
    }

    /// The file name.
    var file: String { record.name }
    /// The absolute path.
    var path: String { record.path }
    /// The key: the stored key, or the file name in verbatim directories; `nil` when unknown.
    var key: String? { record.key }
    /// The file's length in bytes.
    var fileSize: Int { record.fileSize }
    /// The decoded header; `nil` when it failed validation.
    var header: RecordHeader? { record.header }
    /// Why the record is corrupt, if it is.
    var corruption: CorruptionReason? { record.corruption }
    /// What a cache would make of it now.
    var status: Status { record.status }
    /// The payload, when it was read.
    var payload: Data? {
        get { record.payload }
        set { record.payload = newValue }
    }
    /// When the record expires, or `nil` while locked (and for corrupt records).
    var expirationTime: Double? { record.expirationTime }

    /// The key, or the file name when the key is not known.
    var displayKey: String { key ?? file }
    var lockCount: Int? { header.map { Int($0.refCount) } }
    var ttl: Int? { header.map { Int(clamping: $0.ttl) } }
    var payloadSize: Int? { header.map { Int(clamping: $0.payloadSizeBytes) } }
    var updateTime: Double? { header.map { Double($0.updateTimeSec) } }
    /// The last access: the header's access time when it has one, else its update time.
    var lastAccessTime: Double? {
        guard let header else { return nil }
        return header.lastAccessMilliseconds.map { Double($0) / 1000 } ?? Double(header.updateTimeSec)
    }
}
