/// A 64-bit hash of a string's UTF-8 bytes, taken 8 at a time: the same on every run (unlike
/// `hashValue`, seeded per process) and a multiply and a shift per word, where `Hasher` runs
/// SipHash over a string's bytes (the disk suite's `load-4k` and `load-miss` of `larder-bench`
/// measure the difference on a read). Bytes, not characters: two spellings of one canonical string hash apart,
/// as file names, which the disk tier compares byte for byte (``ExactName``), should.
///
/// Not for tables an attacker fills: unseeded, so colliding names can be made on purpose. Its
/// users pick a lock stripe or a slot whose owner compares the name itself.
enum NameHash {
    /// The hash of `string`'s UTF-8 bytes.
    static func of(_ string: String) -> UInt64 {
        var string = string
        return string.withUTF8 { of(UnsafeRawBufferPointer($0)) }
    }

    /// The hash of `bytes`.
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash = seed ^ UInt64(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = mix(hash ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for i in offset ..< bytes.count { tail |= UInt64(bytes[i]) << (8 * UInt64(i - offset)) }
            hash = mix(hash ^ tail)
        }
        return finalize(hash)
    }

    /// ``of(_:)`` of the 64 lowercase hex digits that spell a 32-byte digest (four words as
    /// loaded from memory), without writing the digits out: each word's 16 digits are the two
    /// words ``of(_:)`` would load from the text.
    static func ofHexDigits(of digest: (UInt64, UInt64, UInt64, UInt64)) -> UInt64 {
        var hash = seed ^ UInt64(64)
        func step(_ word: UInt64) {
            let digits = PackedName.hexDigits(word)
            hash = mix(hash ^ digits.0)
            hash = mix(hash ^ digits.1)
        }
        step(digest.0)
        step(digest.1)
        step(digest.2)
        step(digest.3)
        return finalize(hash)
    }

    /// The starting value, mixed with the length.
    @inline(__always)
    private static var seed: UInt64 { 0x9E37_79B9_7F4A_7C15 }

    /// SplitMix64's finalizer: every input bit reaches both 32-bit halves.
    @inline(__always)
    private static func finalize(_ value: UInt64) -> UInt64 {
        var hash = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        hash = (hash ^ (hash >> 27)) &* 0x94D0_49BB_1331_11EB
        return hash ^ (hash >> 31)
    }

    /// One step: a multiply and a shift, so that the next word lands on mixed bits.
    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        let product = value &* 0xFF51_AFD7_ED55_8CCD
        return product ^ (product >> 29)
    }
}
