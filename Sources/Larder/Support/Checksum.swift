// Darwin-only branch: SHA-256 from CryptoKit on Apple platforms (libcrypto elsewhere), compiled
// only there and unverified by `.ci/run` (README, "Apple platforms, honestly").
#if canImport(CryptoKit)
import CryptoKit
#else
import CCrypto
#endif
import CLarderChecksum

/// CRC-32 (zlib's, ISO 3309), the checksum of SPTPersistentCache headers and Larder payloads.
package enum CRC32 {
    /// The CRC-32 of `bytes`, continuing from `seed` (0 to start): zlib's value, computed with
    /// carry-less multiplication where the processor has it (`Sources/CLarderChecksum`).
    package static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress else { return seed }
        return larder_crc32(seed, base, bytes.count)
    }

    /// ``checksum(_:seed:)`` folding in registers of at most `bits` bits (128, 256 or 512),
    /// whatever the processor has: for tests of each narrower path on a processor that would
    /// take a wider one.
    package static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0, foldingAtMost bits: Int) -> UInt32 {
        guard let base = bytes.baseAddress else { return seed }
        return larder_crc32_folding(seed, base, bytes.count, Int32(bits))
    }

    /// The widest registers ``checksum(_:seed:)`` folds in on this processor, in bits: 512, 256,
    /// 128, or 0 without carry-less multiplication.
    package static var widestFold: Int { Int(larder_crc32_widest_fold()) }

    /// The CRC-32 of a byte collection.
    package static func checksum<Bytes: Sequence<UInt8>>(of bytes: Bytes) -> UInt32 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { checksum($0) }
    }
}

#if !canImport(CryptoKit)
/// libcrypto's SHA-256 implementation, fetched once. The one-shot `SHA256()` fetches it again on
/// every call, behind a global read-write lock, which cost more than the hash of a short key.
/// `nonisolated(unsafe)`: an `EVP_MD` is immutable and reference-counted once fetched, and libcrypto
/// documents it as safe to share between threads.
nonisolated(unsafe) private let sha256Algorithm = EVP_MD_fetch(nil, "SHA256", nil)
#endif

/// SHA-256: libcrypto on Linux, CryptoKit on Apple platforms.
package enum SHA256Hash {
    /// The 32-byte digest of `bytes`.
    package static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { buffer, count in
            digest(bytes, into: UnsafeMutableRawBufferPointer(buffer))
            count = 32
        }
    }

    /// Writes the 32-byte digest of `bytes` into the first 32 bytes of `output`.
    package static func digest(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        #if canImport(CryptoKit)
        for (i, byte) in CryptoKit.SHA256.hash(data: bytes).enumerated() { output[i] = byte }
        #else
        var length: UInt32 = 0
        let done = EVP_Digest(
            bytes.baseAddress, bytes.count, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, sha256Algorithm, nil)
        precondition(done == 1 && length == 32, "libcrypto's SHA-256 failed")
        #endif
    }

    /// The lowercase hexadecimal digest of a string's UTF-8 bytes (64 characters).
    package static func hex(of string: String) -> String {
        var string = string
        return string.withUTF8 { hex(UnsafeRawBufferPointer($0)) }
    }

    /// The lowercase hexadecimal digest of `bytes` (64 characters).
    package static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { digestBuffer in
            digest(bytes, into: digestBuffer)
            return String(unsafeUninitializedCapacity: 64) { buffer in
                for i in 0 ..< 32 {
                    let byte = digestBuffer[i]
                    buffer[2 * i] = hexDigit(byte >> 4)
                    buffer[2 * i + 1] = hexDigit(byte & 0xF)
                }
                return 64
            }
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
