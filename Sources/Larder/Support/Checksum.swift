#if canImport(CryptoKit)
import CryptoKit
#else
import CCrypto
#endif
import CZlib

/// CRC-32 (zlib's, ISO 3309), the checksum of SPTPersistentCache headers and Larder payloads.
package enum CRC32 {
    /// The CRC-32 of `bytes`, continuing from `seed` (0 to start).
    package static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        var crc = UInt(seed)
        var base = bytes.baseAddress
        var remaining = bytes.count
        // zlib takes a 32-bit length; feed larger buffers in pieces.
        while remaining > 0, let pointer = base {
            let chunk = min(remaining, Int(Int32.max))
            crc = UInt(CZlib.crc32(uLong(crc), pointer.assumingMemoryBound(to: Bytef.self), uInt(chunk)))
            base = pointer + chunk
            remaining -= chunk
        }
        return UInt32(truncatingIfNeeded: crc)
    }

    /// The CRC-32 of a byte collection.
    package static func checksum<Bytes: Sequence<UInt8>>(of bytes: Bytes) -> UInt32 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { checksum($0) }
    }
}

/// SHA-256: libcrypto on Linux, CryptoKit on Apple platforms.
package enum SHA256Hash {
    /// The 32-byte digest of `bytes`.
    package static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        #if canImport(CryptoKit)
        return Array(CryptoKit.SHA256.hash(data: bytes))
        #else
        var out = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        out.withUnsafeMutableBufferPointer { output in
            _ = CCrypto.SHA256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, output.baseAddress)
        }
        return out
        #endif
    }

    /// The lowercase hexadecimal digest of a string's UTF-8 bytes (64 characters).
    package static func hex(of string: String) -> String {
        var string = string
        return string.withUTF8 { hex(UnsafeRawBufferPointer($0)) }
    }

    /// The lowercase hexadecimal digest of `bytes` (64 characters).
    package static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        let digest = digest(bytes)
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 64) { buffer in
            for (i, byte) in digest.enumerated() {
                buffer[2 * i] = digits[Int(byte >> 4)]
                buffer[2 * i + 1] = digits[Int(byte & 0xF)]
            }
            return 64
        }
    }
}
