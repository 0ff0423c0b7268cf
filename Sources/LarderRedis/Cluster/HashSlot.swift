/// Redis Cluster's hash slots: a key belongs to slot CRC16(key) mod 16384, where CRC16 is the
/// XMODEM variant (polynomial 0x1021, initial value 0) and only the key's hash tag is hashed when
/// it has one, so that keys sharing a tag land on one node.
enum HashSlot {
    /// The number of slots in a cluster.
    static let count = 16384

    /// The slot of `key`.
    static func slot(of key: String) -> Int {
        var key = key
        return key.withUTF8 { slot(ofBytes: $0) }
    }

    /// The slot of the key made of `bytes`: the hash of its tag when it has one (the bytes
    /// between the first `{` and the first `}` after it, when they are not empty), else of all of it.
    static func slot(ofBytes bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hashed = bytes[...]
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
            let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1
        {
            hashed = bytes[(open + 1) ..< close]
        }
        return Int(crc16(hashed) & UInt16(count - 1))
    }

    /// CRC16/XMODEM of `bytes`, a byte at a time through a 256-entry table.
    static func crc16<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// The CRC of each byte value, shifted into the high byte.
    private static let table: [UInt16] = (0 ..< 256).map { value in
        var crc = UInt16(value) << 8
        for _ in 0 ..< 8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
