import Foundation

// SPTPersistentCache's record format, written and read the way SPT does it, independently of
// Larder's own `RecordHeader`: the judge must not share the code it judges.

/// CRC-32 (ISO 3309, zlib's: reflected polynomial 0xEDB88320), SPT's `spt_crc32`, from a table.
enum SPTCRC32 {
    private static let table: [UInt32] = (0 ..< 256).map { n in
        var c = UInt32(n)
        for _ in 0 ..< 8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC-32 of `bytes`.
    static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// SPT's `SPTPersistentCacheLoadingError` codes that a record file can earn
/// (`SPTPersistentCacheImplementation.h`), in the order `SPTPersistentCacheValidateHeader` checks.
enum SPTLoadingError: Int, CaseIterable, Sendable, CustomStringConvertible {
    case magicMismatch = 100
    case wrongHeaderSize = 102
    case wrongPayloadSize = 103
    case invalidHeaderCRC = 104
    case notEnoughDataToGetHeader = 105

    var description: String {
        switch self {
        case .magicMismatch: "MagicMismatch"
        case .wrongHeaderSize: "WrongHeaderSize"
        case .wrongPayloadSize: "WrongPayloadSize"
        case .invalidHeaderCRC: "InvalidHeaderCRC"
        case .notEnoughDataToGetHeader: "NotEnoughDataToGetHeader"
        }
    }
}

/// `SPTPersistentCacheRecordHeader`: 64 bytes, little-endian on every platform SPT runs on.
struct SPTHeader: Equatable, Sendable {
    /// `SPTPersistentCacheMagicValue`, "SPTF".
    static let magicValue: UInt32 = 0x4654_5053
    /// `SPTPersistentCacheRecordHeaderSize`.
    static let size = 64

    var magic: UInt32 = magicValue
    var headerSize = UInt32(size)
    var refCount: UInt32 = 0
    var reserved1: UInt32 = 0
    var ttl: UInt64 = 0
    var updateTimeSec: UInt64 = 0
    var payloadSizeBytes: UInt64 = 0
    var reserved2: UInt64 = 0
    var reserved3: UInt32 = 0
    var reserved4: UInt32 = 0
    var flags: UInt32 = 0
    var crc: UInt32 = 0

    /// `SPTPersistentCacheRecordHeaderMake(ttl, payloadSize, updateTime, isLocked)`.
    static func make(ttl: UInt64, payloadSize: UInt64, updateTime: UInt64, locked: Bool) -> SPTHeader {
        var header = SPTHeader()
        header.refCount = locked ? 1 : 0
        header.ttl = ttl
        header.payloadSizeBytes = payloadSize
        header.updateTimeSec = updateTime
        header.crc = header.calculatedCRC
        return header
    }

    /// The 64 bytes, as they stand in a file.
    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.size)
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out += $0 } }
        put(magic)
        put(headerSize)
        put(refCount)
        put(reserved1)
        put(ttl)
        put(updateTimeSec)
        put(payloadSizeBytes)
        put(reserved2)
        put(reserved3)
        put(reserved4)
        put(flags)
        put(crc)
        return out
    }

    /// `SPTPersistentCacheCalculateHeaderCRC`: the CRC-32 of the first 60 bytes.
    var calculatedCRC: UInt32 { SPTCRC32.checksum(bytes.prefix(60)) }

    /// `SPTPersistentCacheGetHeaderFromData`: `nil` for fewer than 64 bytes.
    init?(bytes: [UInt8]) {
        guard bytes.count >= Self.size else { return nil }
        func u32(_ at: Int) -> UInt32 { (0 ..< 4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }
        func u64(_ at: Int) -> UInt64 { (0 ..< 8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        magic = u32(0)
        headerSize = u32(4)
        refCount = u32(8)
        reserved1 = u32(12)
        ttl = u64(16)
        updateTimeSec = u64(24)
        payloadSizeBytes = u64(32)
        reserved2 = u64(40)
        reserved3 = u32(48)
        reserved4 = u32(52)
        flags = u32(56)
        crc = u32(60)
    }

    init() {}

    /// `SPTPersistentCacheValidateHeader`: magic, then CRC, then header size; `nil` when valid.
    var validationError: SPTLoadingError? {
        if magic != Self.magicValue { return .magicMismatch }
        if calculatedCRC != crc { return .invalidHeaderCRC }
        if headerSize != UInt32(Self.size) { return .wrongHeaderSize }
        return nil
    }

    /// SPT's tests' `spt_test_ReadHeaderForFile(path, validate, &header)`
    /// (SPTPersistentCacheTests.m:2019): the header of the file at `path` when 64 bytes could be
    /// read, it validates (when asked) and its CRC matches; else `nil` (no file, short, corrupt).
    static func read(atPath path: String, validate: Bool = true) -> SPTHeader? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: size), let header = SPTHeader(bytes: [UInt8](data)) else { return nil }
        if validate, header.validationError != nil { return nil }
        return header.calculatedCRC == header.crc ? header : nil
    }

    /// Overwrites the first 64 bytes of the file at `path` with this header.
    func write(toFileAtPath path: String) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: bytes)
    }
}

/// SPT's `SPTPersistentCacheFileManager` paths (SPTPersistentCacheFileManager.m:60-78).
enum SPTPaths {
    /// `subDirectoryPathForKey:`'s folder name: with `useDirectorySeparation` and a key of at
    /// least two UTF-16 code units, its first two (`substringToIndex:2`); else `nil`, the root.
    /// Keys whose second unit starts a surrogate pair have no such folder: SPT cannot name it.
    static func shard(for key: String, useDirectorySeparation: Bool = true) -> String? {
        let units = Array(key.utf16)
        guard useDirectorySeparation, units.count >= 2 else { return nil }
        precondition(!UTF16.isLeadSurrogate(units[1]), "SPT cannot shard \(key.debugDescription): two units split a surrogate pair")
        return String(decoding: units[0 ..< 2], as: UTF16.self)
    }

    /// `pathForKey:`: `<root>/<shard>/<key>`, or `<root>/<key>`.
    static func path(root: String, key: String, useDirectorySeparation: Bool = true) -> String {
        guard let shard = shard(for: key, useDirectorySeparation: useDirectorySeparation) else { return root + "/" + key }
        return root + "/" + shard + "/" + key
    }
}

/// SPT's tests' `getFilesNumberAtPath:` (SPTPersistentCacheTests.m:1960): regular files beneath
/// `root`, hidden files and folders (Larder's own, among them) skipped.
func sptFileCount(atPath root: String) -> Int {
    sptFiles(atPath: root).count
}

/// The relative paths of the regular files beneath `root`, hidden ones skipped, sorted. Paths
/// are joined by concatenation: a name may start with a combining mark, which Foundation's path
/// functions (and its directory enumerator) would read as part of the slash before it.
func sptFiles(atPath root: String) -> [String] {
    var files: [String] = []
    func walk(_ relative: String) {
        let folder = relative.isEmpty ? root : root + "/" + relative
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where !name.hasPrefix(".") {
            let item = relative.isEmpty ? name : relative + "/" + name
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + item, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue { walk(item) } else { files.append(item) }
        }
    }
    walk("")
    return files.sorted()
}

/// The last component of a path, split at its last slash byte (not by `Character`: a name may
/// start with a combining mark, which joins the slash before it).
func lastPathComponent(_ path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
    return String(path[path.utf8.index(after: slash)...])
}
