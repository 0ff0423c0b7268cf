import Foundation
import Testing
@testable import Larder

@Suite struct ChecksumTests {
    /// CRC-32 bit by bit, straight from the polynomial: slow, and independent of zlib and of the
    /// carry-less-multiplication path.
    static func bitwiseCRC32(_ bytes: ArraySlice<UInt8>, seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0 ..< 8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }

    @Test func knownValues() {
        #expect(CRC32.checksum(of: Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(of: [UInt8]()) == 0)
        #expect(CRC32.checksum(of: Array("hello".utf8)) == 0x3610_A686)
    }

    /// Every length from 0 to 1,100 (below, at and above the 16-, 64-, 128- and 256-byte folding
    /// thresholds, every 16-byte tail and every count of 32- and 64-byte blocks after the wide
    /// loops), at three alignments and with a chained seed, then large buffers; folding at most
    /// 128, 256 and 512 bits at a time (each up to what the processor has).
    @Test(arguments: [128, 256, 512])
    func matchesTheBitwiseDefinitionAtEveryLengthAndAlignment(foldingAtMost bits: Int) {
        func crc(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
            bits == 512 ? CRC32.checksum(bytes, seed: seed) : CRC32.checksum(bytes, seed: seed, foldingAtMost: bits)
        }
        var random = SplitMix64(seed: 42)
        let bytes = (0 ..< 300_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        var mismatches = 0
        for length in 0 ... 1_100 {
            for offset in 0 ..< 3 {
                let slice = bytes[offset ..< offset + length]
                let seed = UInt32(truncatingIfNeeded: length &* 2_654_435_761)
                let fast = slice.withUnsafeBytes { crc($0, seed: seed) }
                if fast != Self.bitwiseCRC32(slice, seed: seed) { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
        for length in [4096, 4160, 65_536 + 13, 262_144, 299_999] {
            let slice = bytes[1 ..< 1 + length]
            #expect(slice.withUnsafeBytes { crc($0) } == Self.bitwiseCRC32(slice), "length \(length)")
        }
        // Chaining two pieces gives the CRC of the whole.
        let first = bytes[0 ..< 1000].withUnsafeBytes { CRC32.checksum($0) }
        let chained = bytes[1000 ..< 5000].withUnsafeBytes { CRC32.checksum($0, seed: first) }
        #expect(chained == bytes[0 ..< 5000].withUnsafeBytes { CRC32.checksum($0) })
    }

    /// The widest folding the processor takes is one the code has (the paths above are then the
    /// ones it takes up to that width).
    @Test func theWidestFoldingIsAKnownWidth() {
        #expect([0, 128, 256, 512].contains(CRC32.widestFold))
    }

    @Test func sha256KnownValues() {
        #expect(SHA256Hash.hex(of: "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Hash.hex(of: "") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256Hash.digest(UnsafeRawBufferPointer(start: nil, count: 0)).count == 32)
    }
}
