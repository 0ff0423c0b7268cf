import Foundation

/// A record read from its file.
package struct RecordContents: Sendable {
    /// The validated header.
    package var header: RecordHeader
    /// The key stored in the record, when it stores one.
    package var storedKey: String?
    /// The payload, when it was asked for.
    package var payload: Data?
    /// The file's length in bytes.
    package var fileSize: Int

    /// The length an index may hand back to ``RecordFile/read(_:readPayload:verifyPayload:expectedKey:expectedFileSize:beneath:keptAs:nameHash:)``
    /// as one it can vouch for (exempt from the sparse-file check): this read's length when it
    /// read the payload (which passed that check, or was vouched for itself) or when it equals
    /// `previous`, a vouched length; else 0, unknown.
    package func vouchedFileSize(previous: Int) -> Int {
        vouch.fileSize(previous: previous)
    }

    /// What ``vouchedFileSize(previous:)`` needs, without the payload and key: a copy of it
    /// costs no reference count (two atomic operations a copy on a read's path).
    package var vouch: FileSizeVouch {
        // `payload != nil` would copy the payload (a retain and a release) to compare it.
        if case .some = payload { return FileSizeVouch(fileSize: fileSize, readPayload: true) }
        return FileSizeVouch(fileSize: fileSize, readPayload: false)
    }
}

/// A read's word on its file's length (``RecordContents/vouch``).
package struct FileSizeVouch: Sendable {
    /// The file's length in bytes as the read found it.
    package var fileSize: Int
    /// Whether the read read the payload (and with it checked the length).
    package var readPayload: Bool

    /// ``RecordContents/vouchedFileSize(previous:)``.
    package func fileSize(previous: Int) -> Int {
        readPayload || previous == fileSize ? fileSize : 0
    }
}

/// The outcome of reading a record file.
package enum RecordReadResult: Sendable {
    /// No file by that name.
    case missing
    /// The file failed validation.
    case corrupt(CorruptionReason)
    /// What sits there is not a record this version reads: not a regular file (a folder, a
    /// link, a FIFO, a socket), a file that does not start with the record magic "SPTF" (shorter
    /// than it, or other bytes), or a record whose header sets flags this version does not know
    /// (``CorruptionReason/unsupportedFlags``). A cache never removes it (see ``DiskCache`` and
    /// `docs/SECURITY.md`): a miss, left where it is.
    case foreign
    /// The record.
    case record(RecordContents)
}
