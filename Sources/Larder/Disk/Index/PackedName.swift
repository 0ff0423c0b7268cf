/// A file name as the index keeps it: 64 lowercase hex digits as the 32 bytes they spell, any
/// other name as its UTF-8 bytes.
struct PackedName {
    var isHex: Bool
    var bytes: UnsafeRawBufferPointer

    var hashValue: Int {
        var hasher = Hasher()
        hasher.combine(isHex)
        hasher.combine(bytes: bytes)
        return hasher.finalize()
    }

    /// Calls `body` with `name` packed. Always inlined: a specialization that takes `body`'s
    /// context as arguments copies the whole ``DiskIndex`` (retaining each of its buffers) on
    /// every lookup by name (`larder-bench gc`).
    @inline(__always)
    static func with<T>(_ name: String, _ body: (PackedName) -> T) -> T {
        var name = name
        return name.withUTF8 { utf8 in
            withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { digest in
                if unhex(UnsafeRawBufferPointer(utf8), into: digest) {
                    return body(PackedName(isHex: true, bytes: UnsafeRawBufferPointer(digest)))
                }
                return body(PackedName(isHex: false, bytes: UnsafeRawBufferPointer(utf8)))
            }
        }
    }

    /// Calls `body` with a slot's name as stored in `arena`.
    static func stored<T>(_ s: DiskIndex.Slot, in arena: [UInt8], _ body: (PackedName) -> T) -> T {
        arena.withUnsafeBytes { bytes in
            body(
                PackedName(
                    isHex: s.flags.contains(.hexName),
                    bytes: UnsafeRawBufferPointer(rebasing: bytes[s.arenaOffset ..< s.arenaOffset + Int(s.nameLength)])))
        }
    }

    /// Writes the 32 bytes 64 lowercase hex digits spell; `false` for anything else. Eight
    /// digits at a time (`unhexWord`): a lookup by name unpacks its name first, once a load and
    /// once a removal (`larder-bench gc`).
    static func unhex(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard text.count == 64 else { return false }
        for i in 0 ..< 8 {
            guard let four = unhexWord(UInt64(littleEndian: text.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self))) else {
                return false
            }
            out.storeBytes(of: four.littleEndian, toByteOffset: 4 * i, as: UInt32.self)
        }
        return true
    }

    /// The four bytes eight lowercase hex digits spell (the first digit in the lowest byte of
    /// `word`, the first byte in the lowest byte of the result), or `nil` when a byte is no such
    /// digit. Each byte is checked against both ranges at once: adding `0x80 - c` to a byte
    /// below `0x80` sets its high bit exactly when it is at least `c`, and carries into no
    /// other byte.
    @inline(__always)
    static func unhexWord(_ word: UInt64) -> UInt32? {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        guard word & high == 0 else { return nil }
        func atLeast(_ c: UInt64) -> UInt64 { (word &+ (0x80 - c) &* ones) & high }
        let digit = atLeast(0x30) & ~atLeast(0x3A)  // 0-9
        let letter = atLeast(0x61) & ~atLeast(0x67)  // a-f
        guard digit | letter == high else { return nil }
        // A digit's value is its low nibble; a letter's (bit 6 set) its low nibble plus 9.
        let nibbles = (word & 0x0F0F_0F0F_0F0F_0F0F) &+ 9 &* ((word >> 6) & ones)
        // Each even byte takes its digit as the high nibble and the next one's as the low,
        // then the four even bytes close up.
        var packed = ((nibbles << 4) | (nibbles >> 8)) & 0x00FF_00FF_00FF_00FF
        packed = (packed | (packed >> 8)) & 0x0000_FFFF_0000_FFFF
        packed = (packed | (packed >> 16)) & 0xFFFF_FFFF
        return UInt32(truncatingIfNeeded: packed)
    }

    /// Whether `text` is the 64 lowercase hex digits of the 32 `bytes`.
    static func spells(_ bytes: UnsafeRawBufferPointer, hex text: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == 32, text.count == 64 else { return false }
        for i in 0 ..< 4 {
            let digits = hexDigits(bytes.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self))
            guard text.loadUnaligned(fromByteOffset: 16 * i, as: UInt64.self) == digits.0,
                text.loadUnaligned(fromByteOffset: 16 * i + 8, as: UInt64.self) == digits.1
            else { return false }
        }
        return true
    }

    /// The lowercase hex digits of `bytes`, two a byte.
    static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            let raw = UnsafeMutableRawBufferPointer(out)
            var i = 0
            while i + 8 <= bytes.count {
                let digits = hexDigits(bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                raw.storeBytes(of: digits.0, toByteOffset: 2 * i, as: UInt64.self)
                raw.storeBytes(of: digits.1, toByteOffset: 2 * i + 8, as: UInt64.self)
                i += 8
            }
            let table: StaticString = "0123456789abcdef"
            while i < bytes.count {
                out[2 * i] = table.utf8Start[Int(bytes[i] >> 4)]
                out[2 * i + 1] = table.utf8Start[Int(bytes[i] & 0xF)]
                i += 1
            }
            return bytes.count * 2
        }
    }

    /// The 16 hex digits of the 8 bytes of `word` (as loaded from memory, little-endian), as
    /// two words to store in that order: a byte's high digit first, eight digits a word.
    @inline(__always)
    static func hexDigits(_ word: UInt64) -> (UInt64, UInt64) {
        let little = UInt64(littleEndian: word)
        return (
            UInt64(littleEndian: hexDigits(UInt32(truncatingIfNeeded: little))),
            UInt64(littleEndian: hexDigits(UInt32(truncatingIfNeeded: little >> 32)))
        )
    }

    /// Four bytes' eight digits, a byte each, lowest byte first: each byte spread to 16 bits,
    /// its nibbles split high first, then `0`–`9` or `a`–`f` added to all eight at once.
    @inline(__always)
    private static func hexDigits(_ value: UInt32) -> UInt64 {
        var x = UInt64(value)
        x = (x | x << 16) & 0x0000_FFFF_0000_FFFF
        x = (x | x << 8) & 0x00FF_00FF_00FF_00FF
        let nibbles = (x >> 4) & 0x000F_000F_000F_000F | (x & 0x000F_000F_000F_000F) << 8
        // 1 in each byte whose nibble is 10 or more (adding 6 carries it into bit 4).
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 0x27
    }
}
