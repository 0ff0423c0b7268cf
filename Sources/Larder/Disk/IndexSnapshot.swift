/// The persisted index: every entry in least-recently-used order, so a reopened cache knows its
/// records, totals and LRU order without reading each header.
///
/// Layout (little-endian): magic "LRDX", version u32 (1), count u32, then per entry:
/// name length u16, name, key length u32 (`0xFFFF_FFFF` for none), key, diskSize u64,
/// updateTime u64, lastAccessMs u64, ttl u64, lockCount u32; last, a CRC-32 of everything before it.
enum IndexSnapshot {
    static let magic: UInt32 = 0x5844_524C  // "LRDX"
    static let version: UInt32 = 1

    /// Encodes entries, least recently used first.
    /// - Complexity: O(*n*); one allocation of the exact size, written in place.
    static func encode(_ entries: [IndexEntry]) -> [UInt8] {
        var total = 12 + 4
        for entry in entries {
            total += 2 + entry.name.utf8.count + 4 + (entry.key?.utf8.count ?? 0) + 8 * 4 + 4
        }
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            let out = UnsafeMutableRawBufferPointer(buffer)
            var offset = 0
            func put<T: FixedWidthInteger>(_ value: T) {
                out.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
                offset += MemoryLayout<T>.size
            }
            func put(_ text: String) {
                var text = text
                text.withUTF8 { utf8 in
                    out.baseAddress!.advanced(by: offset).copyMemory(from: utf8.baseAddress!, byteCount: utf8.count)
                    offset += utf8.count
                }
            }
            put(magic)
            put(version)
            put(UInt32(entries.count))
            for entry in entries {
                put(UInt16(entry.name.utf8.count))
                if !entry.name.isEmpty { put(entry.name) }
                if let key = entry.key {
                    put(UInt32(key.utf8.count))
                    if !key.isEmpty { put(key) }
                } else {
                    put(UInt32.max)
                }
                put(UInt64(entry.diskSize))
                put(entry.updateTime)
                put(entry.lastAccessMs)
                put(entry.ttl)
                put(entry.lockCount)
            }
            put(CRC32.checksum(UnsafeRawBufferPointer(rebasing: out[0 ..< offset])))
            count = offset
        }
    }

    /// The largest disk size one entry may claim (1 PiB); a snapshot claiming more is damaged.
    static let maximumEntrySize: UInt64 = 1 << 50
    /// The largest total the entries may claim (2^62 bytes), so that no sum the index keeps overflows.
    static let maximumTotalSize = 1 << 62

    /// Decodes a snapshot, or returns `nil` when it is damaged or of another version.
    ///
    /// A snapshot is a file in the cache folder, so nothing in it is trusted: sizes are bounded
    /// (``maximumEntrySize`` each, ``maximumTotalSize`` summed with checked arithmetic, else the
    /// whole snapshot is ignored), times and ttls are clamped as a header's are, and, given
    /// `keyEncoding`, an entry whose key does not map to its name under that encoding is
    /// dropped (its record is then read from its header like any unknown file), so a crafted
    /// snapshot cannot make one key answer with another key's file.
    static func decode(_ bytes: [UInt8], keyEncoding: KeyEncoding? = nil) -> [IndexEntry]? {
        guard var entries = decodeUnchecked(bytes) else { return nil }
        var total = 0
        for entry in entries {
            let (sum, overflow) = total.addingReportingOverflow(entry.diskSize)
            guard !overflow, sum <= maximumTotalSize else { return nil }
            total = sum
        }
        if let keyEncoding {
            entries.removeAll { entry in
                guard let key = entry.key else { return false }
                if case .verbatim = keyEncoding { return key != entry.name }
                return (try? keyEncoding.fileName(for: key)) != entry.name
            }
        }
        return entries
    }

    private static func decodeUnchecked(_ bytes: [UInt8]) -> [IndexEntry]? {
        guard bytes.count >= 16 else { return nil }
        return bytes.withUnsafeBytes { buffer -> [IndexEntry]? in
            let body = UnsafeRawBufferPointer(rebasing: buffer[0 ..< buffer.count - 4])
            let crc = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: buffer.count - 4, as: UInt32.self))
            guard CRC32.checksum(body) == crc else { return nil }
            var offset = 0
            func get<T: FixedWidthInteger>(_: T.Type) -> T? {
                guard offset + MemoryLayout<T>.size <= body.count else { return nil }
                defer { offset += MemoryLayout<T>.size }
                return T(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: T.self))
            }
            func string(_ length: Int) -> String? {
                guard length >= 0, offset + length <= body.count else { return nil }
                defer { offset += length }
                return String(decoding: UnsafeRawBufferPointer(rebasing: body[offset ..< offset + length]), as: UTF8.self)
            }
            guard get(UInt32.self) == magic, get(UInt32.self) == version, let count = get(UInt32.self) else { return nil }
            var entries: [IndexEntry] = []
            // Each entry takes at least 42 bytes: a count the bytes cannot hold reserves no more than they can.
            entries.reserveCapacity(min(Int(count), body.count / 42))
            for _ in 0 ..< count {
                guard let nameLength = get(UInt16.self), let name = string(Int(nameLength)),
                    let keyLength = get(UInt32.self)
                else { return nil }
                var key: String?
                if keyLength != UInt32.max {
                    guard let k = string(Int(keyLength)) else { return nil }
                    key = k
                }
                guard let diskSize = get(UInt64.self), let updateTime = get(UInt64.self),
                    let lastAccessMs = get(UInt64.self), let ttl = get(UInt64.self),
                    let lockCount = get(UInt32.self), diskSize <= maximumEntrySize
                else { return nil }
                entries.append(
                    IndexEntry(
                        name: name, key: key, diskSize: Int(diskSize), updateTime: min(updateTime, RecordHeader.maximumTimestamp),
                        lastAccessMs: min(lastAccessMs, RecordHeader.maximumTimestamp * 1000),
                        ttl: min(ttl, RecordHeader.maximumTTL), lockCount: lockCount))
            }
            return offset == body.count ? entries : nil
        }
    }
}
