import Foundation
import LarderTestSupport

/// A cache folder written byte by byte the way SPTPersistentCache writes one (its layout and
/// header, no Larder metadata), with corruption planted where asked.
struct SPTFolder {
    /// Damage planted in a record file.
    enum Corruption: CaseIterable, Sendable, CustomStringConvertible {
        /// Cut to fewer than 64 bytes, the magic kept (a torn record; without the magic a file is
        /// no record at all).
        case truncated
        /// The header's CRC does not match.
        case badCRC
        /// The magic is not "SPTF": no record at all, a foreign file, which Larder leaves alone.
        case badMagic
        /// headerSize is not 64 (CRC recomputed).
        case badHeaderSize
        /// payloadSizeBytes disagrees with the file's length (CRC recomputed).
        case badPayloadSize

        var description: String { "\(reasonName)" }

        /// Larder's name for the damage (`CorruptionReason`'s raw value).
        var reasonName: String {
            switch self {
            case .truncated: "truncated"
            case .badCRC: "crc"
            case .badMagic: "magic"
            case .badHeaderSize: "header-size"
            case .badPayloadSize: "payload-size"
            }
        }
    }

    /// One record as SPT would have stored it.
    struct Record: Sendable {
        var key: String
        var payload: Data
        var ttl: UInt64
        var refCount: UInt32
        var updateTime: UInt64
        var corruption: Corruption?

        /// SPT's rule (`isDataCanBeReturnedWithHeader:`, SPTPersistentCache.m:816-836): expired
        /// when unlocked and `llrint(now) - updateTime > (ttl > 0 ? ttl : defaultExpiration)`,
        /// `llrint` rounding to the nearest second, halves to even.
        func isExpired(now: Double, defaultExpiration: Double) -> Bool {
            refCount == 0 && Int64(now.rounded(.toNearestOrEven)) - Int64(updateTime) > Int64(ttl > 0 ? Double(ttl) : defaultExpiration)
        }
    }

    let root: String
    let useDirectorySeparation: Bool

    /// The record file's path: SPT's `pathForKey:`.
    func path(for key: String) -> String { SPTPaths.path(root: root, key: key, useDirectorySeparation: useDirectorySeparation) }

    /// Writes `record` (SPT's `storeDataSync:`: header then payload), then damages it as asked.
    func write(_ record: Record, random: inout SplitMix64) throws {
        var header = SPTHeader.make(
            ttl: record.ttl, payloadSize: UInt64(record.payload.count), updateTime: record.updateTime, locked: record.refCount > 0)
        header.refCount = record.refCount
        header.crc = header.calculatedCRC
        var bytes = header.bytes + [UInt8](record.payload)
        switch record.corruption {
        case nil: break
        case .truncated: bytes = Array(bytes.prefix(4 + random.below(SPTHeader.size - 4)))
        case .badCRC: header.crc ^= UInt32(1 + random.below(0xFFFF))
        case .badMagic: header.magic = 0xFFFF_5454
        case .badHeaderSize:
            header.headerSize = UInt32(SPTHeader.size + 1 + random.below(106))
            header.crc = header.calculatedCRC
        case .badPayloadSize:
            header.payloadSizeBytes += UInt64(1 + random.below(100))
            header.crc = header.calculatedCRC
        }
        if let corruption = record.corruption, corruption != .truncated { bytes.replaceSubrange(0 ..< SPTHeader.size, with: header.bytes) }
        let path = path(for: record.key)
        // The folder by concatenation: a key may start with a combining mark, which Foundation's
        // path functions would read as part of the slash before it.
        if let shard = SPTPaths.shard(for: record.key, useDirectorySeparation: useDirectorySeparation) {
            try FileManager.default.createDirectory(atPath: root + "/" + shard, withIntermediateDirectories: true)
        }
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }

    /// Random records: keys of one to a dozen pieces, ASCII and not (accents, a lone combining
    /// mark, CJK, emoji outside the Basic Multilingual Plane), some only one UTF-16 unit long;
    /// ttls, locks, update times up to six hours back (and a few ahead); a fifth corrupt.
    static func randomRecords(count: Int, now: Double, random: inout SplitMix64) -> [Record] {
        let pieces = ["a", "b", "c", "x", "Z", "0", "9", "-", "_", "é", "ü", "日", "本", "\u{301}", "😀", "🎉", "ab", "cover", "@2x"]
        var keys: Set<String> = []
        var records: [Record] = []
        while records.count < count {
            var key = ""
            for _ in 0 ..< 1 + random.below(records.count % 4 == 0 ? 2 : 12) { key += pieces[random.below(pieces.count)] }
            let units = Array(key.utf16)
            // SPT can make no folder for a key whose second unit starts a surrogate pair.
            if units.count >= 2, UTF16.isLeadSurrogate(units[1]) { continue }
            guard key.utf8.count <= 255, !keys.contains(key) else { continue }
            keys.insert(key)
            let payload = Data((0 ..< random.below(3000)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            let ttl: UInt64 = random.below(2) == 0 ? 0 : UInt64(1 + random.below(10_000))
            let refCount: UInt32 = random.below(5) == 0 ? UInt32(1 + random.below(3)) : 0
            let age = random.below(10) == 0 ? -random.below(600) : random.below(6 * 3600)
            let corruption: Corruption? = random.below(5) == 0 ? Corruption.allCases[random.below(Corruption.allCases.count)] : nil
            records.append(
                Record(key: key, payload: payload, ttl: ttl, refCount: refCount, updateTime: UInt64(Int(now) - age), corruption: corruption)
            )
        }
        return records
    }
}
