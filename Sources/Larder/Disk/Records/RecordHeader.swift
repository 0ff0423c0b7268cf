/// Flag bits in a record header's `flags` field.
///
/// Bit 0 is SPTPersistentCache's own; bits 8 and up are Larder's extensions, which SPT ignores.
/// See `docs/FORMAT.md`.
package struct RecordFlags: OptionSet, Sendable, Hashable {
    /// The raw 32-bit value.
    package var rawValue: UInt32
    /// Creates flags from their raw value.
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    /// SPT's "stream incomplete" flag: the payload was still being written. Larder never sets it
    /// and reads such a record as corrupt.
    package static let streamIncomplete = RecordFlags(rawValue: 1 << 0)
    /// `reserved1` holds the CRC-32 of the payload.
    package static let payloadChecksum = RecordFlags(rawValue: 1 << 8)
    /// `reserved2` holds the last access time, in milliseconds since the Unix epoch.
    package static let accessTime = RecordFlags(rawValue: 1 << 9)
    /// Layout extension v1: the original key follows the header; `reserved3` holds its length in
    /// bytes and `reserved4` its CRC-32. The payload starts after the key.
    package static let storedKey = RecordFlags(rawValue: 1 << 10)

    /// Every bit this version of Larder understands.
    package static let known: RecordFlags = [.streamIncomplete, .payloadChecksum, .accessTime, .storedKey]
}

/// Why a record failed validation.
public enum CorruptionReason: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The header does not start with "SPTF" (as a header is decoded). A cache never
    /// reports a file for it: a file without the magic is no record at all but a foreign file,
    /// which it leaves where it is.
    case badMagic = "magic"
    /// The header's `headerSize` is not 64.
    case badHeaderSize = "header-size"
    /// The header's CRC-32 does not match its first 60 bytes.
    case badHeaderChecksum = "crc"
    /// `payloadSizeBytes` (plus any stored key) does not match the file's length.
    case badPayloadSize = "payload-size"
    /// The file starts with the magic but is shorter than a header (a torn record).
    case truncated = "truncated"
    /// The payload's CRC-32 does not match the one in the header.
    case badPayloadChecksum = "payload-crc"
    /// The stored key's length or CRC-32 is wrong, or it does not match the file name.
    case badStoredKey = "stored-key"
    /// The header sets flag bits this version does not know, or SPT's stream-incomplete flag.
    case unsupportedFlags = "flags"
    /// Something other than a regular file (a folder, a symbolic link, a FIFO) sits where a
    /// record should. A cache never reports a file for it: such a file is foreign, and left
    /// where it is.
    case notARegularFile = "not-a-file"
    /// The record's payload is larger than ``DiskCacheOptions/maximumRecordSize``, or its file
    /// claims far more bytes than its blocks hold (a sparse file); it is not read.
    case tooLarge = "too-large"

    /// The reason's short name, as used in the fixtures' manifest and `larder verify`.
    public var description: String { rawValue }
}

/// The 64-byte little-endian header at the start of every record: SPTPersistentCache v1's layout.
///
/// | offset | field | Larder's use |
/// |---|---|---|
/// | 0 | magic `0x46545053` ("SPTF") | |
/// | 4 | headerSize (64) | |
/// | 8 | refCount | lock count |
/// | 12 | reserved1 | payload CRC-32 with ``RecordFlags/payloadChecksum`` |
/// | 16 | ttl (u64, seconds, 0 = default) | |
/// | 24 | updateTimeSec (u64) | |
/// | 32 | payloadSizeBytes (u64) | |
/// | 40 | reserved2 (u64) | last access, ms, with ``RecordFlags/accessTime`` |
/// | 48 | reserved3 | key length with ``RecordFlags/storedKey`` |
/// | 52 | reserved4 | key CRC-32 with ``RecordFlags/storedKey`` |
/// | 56 | flags | ``RecordFlags`` |
/// | 60 | crc: CRC-32 of bytes 0..<60 | |
package struct RecordHeader: Sendable, Hashable {
    /// The size of a header in bytes: 64.
    package static let size = 64
    /// The magic number, "SPTF" when its little-endian bytes are read as text.
    package static let magic: UInt32 = 0x4654_5053
    /// The largest stored key Larder writes or reads, in bytes: 8 KiB (8,192), room for the
    /// longest URLs servers and CDNs accept. Hashed and custom-encoded keys may be this long
    /// (verbatim keys are file names: at most 255 bytes, which SPT folders hold to as well); a
    /// record whose header claims a longer key is corrupt (`stored-key`) and none of it is read.
    package static let maximumKeyLength = 8 * 1024
    /// A record whose header and stored key end past this offset (one block) is asked for its
    /// first hole (`SEEK_HOLE`), unless the cache wrote or read that length itself: a hole before
    /// the payload makes it corrupt (`too-large`), as a sparse payload is (``FileInfo/looksSparse``).
    package static let sparseKeyAllowance = 4096
    /// The longest ttl Larder writes or reads, in seconds: 100 years (3_155_760_000). Longer
    /// ttls given to `store` are clamped to it (``Expiry/maximumSeconds``), and so is a longer ttl read from a header.
    package static let maximumTTL = UInt64(Expiry.maximumSeconds)
    /// The latest time Larder reads from a header or snapshot, in seconds since the epoch: the
    /// end of year 9999 (253_402_300_799). Later update and access times are clamped to it, so
    /// that no arithmetic on them can overflow.
    package static let maximumTimestamp: UInt64 = 253_402_300_799

    /// The lock count (SPT's refCount); the record is locked when it is above 0.
    package var refCount: UInt32
    /// SPT's reserved1: the payload's CRC-32 when ``flags`` contains ``RecordFlags/payloadChecksum``.
    package var reserved1: UInt32
    /// Time to live in seconds; 0 means the cache's default expiration, measured from the last update.
    package var ttl: UInt64
    /// The last update, in whole seconds since the Unix epoch. Anchors expiry.
    package var updateTimeSec: UInt64
    /// The payload's length in bytes.
    package var payloadSizeBytes: UInt64
    /// SPT's reserved2: the last access in milliseconds since the epoch, with ``RecordFlags/accessTime``.
    package var reserved2: UInt64
    /// SPT's reserved3: the stored key's length, with ``RecordFlags/storedKey``.
    package var reserved3: UInt32
    /// SPT's reserved4: the stored key's CRC-32, with ``RecordFlags/storedKey``.
    package var reserved4: UInt32
    /// Flag bits.
    package var flags: RecordFlags

    /// Creates a header from what it says; the reserved fields and flags follow from the
    /// optional facts (a payload checksum, a last access time, a stored key).
    /// - Parameters:
    ///   - refCount: The lock count.
    ///   - ttl: Seconds to live; 0 for the cache's default expiration.
    ///   - updateTimeSec: The last update, whole seconds since the epoch.
    ///   - payloadSizeBytes: The payload's length.
    ///   - payloadChecksum: The payload's CRC-32 (``RecordFlags/payloadChecksum``), if recorded.
    ///   - lastAccessMilliseconds: The last access (``RecordFlags/accessTime``), if recorded.
    ///   - storedKey: The key's bytes written after the header (``RecordFlags/storedKey``), if any.
    package init(
        refCount: UInt32 = 0, ttl: UInt64 = 0, updateTimeSec: UInt64, payloadSizeBytes: UInt64,
        payloadChecksum: UInt32? = nil, lastAccessMilliseconds: UInt64? = nil, storedKey: [UInt8]? = nil
    ) {
        self.init(
            refCount: refCount, ttl: ttl, updateTimeSec: updateTimeSec, payloadSizeBytes: payloadSizeBytes,
            flags: [], reserved1: 0, reserved2: 0, reserved3: 0, reserved4: 0)
        if let payloadChecksum {
            flags.insert(.payloadChecksum)
            reserved1 = payloadChecksum
        }
        self.lastAccessMilliseconds = lastAccessMilliseconds
        if let storedKey, !storedKey.isEmpty {
            flags.insert(.storedKey)
            reserved3 = UInt32(truncatingIfNeeded: storedKey.count)
            reserved4 = CRC32.checksum(of: storedKey)
        }
    }

    /// The fields as they stand in the file, for `decode(_:)`.
    private init(
        refCount: UInt32, ttl: UInt64, updateTimeSec: UInt64, payloadSizeBytes: UInt64,
        flags: RecordFlags, reserved1: UInt32, reserved2: UInt64, reserved3: UInt32, reserved4: UInt32
    ) {
        self.refCount = refCount
        self.ttl = ttl
        self.updateTimeSec = updateTimeSec
        self.payloadSizeBytes = payloadSizeBytes
        self.flags = flags
        self.reserved1 = reserved1
        self.reserved2 = reserved2
        self.reserved3 = reserved3
        self.reserved4 = reserved4
    }

    /// The payload CRC-32, when the header carries one.
    package var payloadChecksum: UInt32? { flags.contains(.payloadChecksum) ? reserved1 : nil }
    /// The last access in milliseconds since the epoch, when the header carries it.
    package var lastAccessMilliseconds: UInt64? {
        get { flags.contains(.accessTime) ? reserved2 : nil }
        set {
            if let newValue {
                flags.insert(.accessTime)
                reserved2 = newValue
            } else {
                flags.remove(.accessTime)
                reserved2 = 0
            }
        }
    }
    /// The stored key's length in bytes (0 when there is none).
    package var storedKeyLength: Int { flags.contains(.storedKey) ? Int(reserved3) : 0 }
    /// Where the payload starts: after the header and any stored key.
    package var payloadOffset: Int { Self.size + storedKeyLength }
    /// The record file's expected length: header, stored key and payload.
    package var expectedFileSize: UInt64 { UInt64(payloadOffset) &+ payloadSizeBytes }

    /// The 64 header bytes, little-endian, with the CRC filled in.
    package func encoded() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        bytes.withUnsafeMutableBytes { encode(into: $0) }
        return bytes
    }

    /// Writes the 64 header bytes, little-endian, with the CRC, into the first 64 bytes of `buffer`.
    /// - Precondition: `buffer.count >= 64`.
    package func encode(into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= Self.size, "a record header needs 64 bytes")
        buffer.storeBytes(of: Self.magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        buffer.storeBytes(of: UInt32(Self.size).littleEndian, toByteOffset: 4, as: UInt32.self)
        buffer.storeBytes(of: refCount.littleEndian, toByteOffset: 8, as: UInt32.self)
        buffer.storeBytes(of: reserved1.littleEndian, toByteOffset: 12, as: UInt32.self)
        buffer.storeBytes(of: ttl.littleEndian, toByteOffset: 16, as: UInt64.self)
        buffer.storeBytes(of: updateTimeSec.littleEndian, toByteOffset: 24, as: UInt64.self)
        buffer.storeBytes(of: payloadSizeBytes.littleEndian, toByteOffset: 32, as: UInt64.self)
        buffer.storeBytes(of: reserved2.littleEndian, toByteOffset: 40, as: UInt64.self)
        buffer.storeBytes(of: reserved3.littleEndian, toByteOffset: 48, as: UInt32.self)
        buffer.storeBytes(of: reserved4.littleEndian, toByteOffset: 52, as: UInt32.self)
        buffer.storeBytes(of: flags.rawValue.littleEndian, toByteOffset: 56, as: UInt32.self)
        let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: buffer[0 ..< 60]))
        buffer.storeBytes(of: crc.littleEndian, toByteOffset: 60, as: UInt32.self)
    }

    /// Parses and validates the first 64 bytes of `buffer`: length, magic, header size, CRC and flags.
    /// A ttl above ``maximumTTL`` and times after ``maximumTimestamp`` are clamped to them.
    /// - Throws: The ``CorruptionReason`` that failed.
    package static func decode(_ buffer: UnsafeRawBufferPointer) throws(CorruptionReason) -> RecordHeader {
        guard buffer.count >= size else { throw .truncated }
        func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
        func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        guard u32(0) == magic else { throw .badMagic }
        guard u32(4) == UInt32(size) else { throw .badHeaderSize }
        guard u32(60) == CRC32.checksum(UnsafeRawBufferPointer(rebasing: buffer[0 ..< 60])) else {
            throw .badHeaderChecksum
        }
        // Times and ttls out of range are clamped: any later arithmetic on them stays in range.
        let flags = RecordFlags(rawValue: u32(56))
        let header = RecordHeader(
            refCount: u32(8), ttl: min(u64(16), maximumTTL), updateTimeSec: min(u64(24), maximumTimestamp),
            payloadSizeBytes: u64(32), flags: flags, reserved1: u32(12),
            reserved2: flags.contains(.accessTime) ? min(u64(40), maximumTimestamp * 1000) : u64(40),
            reserved3: u32(48), reserved4: u32(52))
        // SPT ignores unknown bits; Larder refuses bits that could change how the bytes are laid out.
        guard header.flags.isSubset(of: .known), !header.flags.contains(.streamIncomplete) else {
            throw .unsupportedFlags
        }
        guard header.storedKeyLength <= maximumKeyLength else { throw .badStoredKey }
        return header
    }

    /// Parses a header from a byte array.
    package static func decode(_ bytes: [UInt8]) throws(CorruptionReason) -> RecordHeader {
        // `withUnsafeBytes` rethrows untyped errors; carry the typed one out in a Result.
        try bytes.withUnsafeBytes { buffer in Result { () throws(CorruptionReason) in try decode(buffer) } }.get()
    }

    /// Checks the header against the record file's length.
    /// - Throws: ``CorruptionReason/badPayloadSize`` when header, key and payload do not add up to `fileSize`.
    package func validate(fileSize: UInt64) throws(CorruptionReason) {
        guard fileSize >= UInt64(payloadOffset) else { throw .truncated }
        guard payloadSizeBytes <= UInt64(Int.max), expectedFileSize == fileSize else { throw .badPayloadSize }
    }

    /// Checks a stored key's bytes against the length and CRC in the header.
    package func validateStoredKey(_ keyBytes: UnsafeRawBufferPointer) throws(CorruptionReason) {
        guard keyBytes.count == storedKeyLength, CRC32.checksum(keyBytes) == reserved4 else { throw .badStoredKey }
    }

    /// Checks a payload against the CRC in the header; passes when the header carries none.
    package func validatePayload(_ payload: UnsafeRawBufferPointer) throws(CorruptionReason) {
        guard let expected = payloadChecksum else { return }
        guard CRC32.checksum(payload) == expected else { throw .badPayloadChecksum }
    }
}

extension CorruptionReason: Error {}
