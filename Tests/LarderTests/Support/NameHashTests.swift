import Testing
@testable import Larder

@Suite struct NameHashTests {
    /// Every byte of a name counts, wherever it falls: in a whole word or in the tail, at every
    /// length up to three words and a bit.
    @Test func everyByteAtEveryLengthChangesTheHash() {
        let base = Array("0123456789abcdef0123456789abcdef".utf8)
        for length in 0 ... base.count {
            let name = Array(base[0 ..< length])
            let hash = name.withUnsafeBytes { NameHash.of($0) }
            for i in 0 ..< length {
                var changed = name
                changed[i] ^= 0x01
                #expect(changed.withUnsafeBytes { NameHash.of($0) } != hash, "length \(length), byte \(i)")
            }
            // A name and the same bytes plus one zero byte: the length is part of the hash.
            let longer = name + [0]
            #expect(longer.withUnsafeBytes { NameHash.of($0) } != hash, "length \(length)")
        }
    }

    /// The same on every run and from any string holding the same bytes; bytes, not characters:
    /// two spellings of one canonical string are two file names.
    @Test func bytesNotCharacters() {
        let name = String(repeating: "ab", count: 32)
        let rebuilt = String(decoding: Array(name.utf8), as: UTF8.self)
        let sliced = String(("x" + name).dropFirst())
        #expect(NameHash.of(name) == NameHash.of(rebuilt))
        #expect(NameHash.of(name) == NameHash.of(sliced))
        #expect(NameHash.of("\u{E9}") != NameHash.of("e\u{301}"))
        #expect("\u{E9}" == "e\u{301}")
        // Pinned: which names share a sketch counter or a lock stripe stays put from run to run
        // (words are loaded little-endian, as on every platform Larder builds for).
        #expect(NameHash.of(name) == Self.pinnedHashOfAB32)
    }

    static let pinnedHashOfAB32: UInt64 = 484_922_841_390_218_452
}
