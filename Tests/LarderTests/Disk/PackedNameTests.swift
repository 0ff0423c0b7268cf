import Testing

@testable import Larder

@Suite struct PackedNameTests {
    /// The digits of a byte by the book: the high nibble, then the low one.
    private static func naiveHex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
    }

    /// Eight digits at a time spell every byte value in every position of a word, and lengths
    /// that end in a partial word spell their tail a byte at a time.
    @Test func hexSpellsEveryByteInEveryPosition() {
        for value in 0 ... 255 {
            for position in 0 ..< 32 {
                var bytes = [UInt8](repeating: UInt8(position * 7 & 0xFF), count: 32)
                bytes[position] = UInt8(value)
                let hex = bytes.withUnsafeBytes { PackedName.hex($0) }
                #expect(hex == Self.naiveHex(bytes), "value \(value), position \(position)")
            }
        }
        for length in 0 ... 20 {
            let bytes = (0 ..< length).map { UInt8(($0 * 37 + 11) & 0xFF) }
            #expect(bytes.withUnsafeBytes { PackedName.hex($0) } == Self.naiveHex(bytes), "length \(length)")
        }
    }

    /// `spells` accepts a name's own digits and rejects any one of them changed, or upper case.
    @Test func spellsRejectsEveryChangedDigit() {
        let bytes = (0 ..< 32).map { UInt8(($0 * 53 + 201) & 0xFF) }
        let text = Array(Self.naiveHex(bytes).utf8)
        let spells = { (text: [UInt8]) in
            bytes.withUnsafeBytes { b in text.withUnsafeBytes { PackedName.spells(b, hex: $0) } }
        }
        #expect(spells(text))
        for i in text.indices {
            var changed = text
            changed[i] = changed[i] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            #expect(!spells(changed), "digit \(i)")
        }
        #expect(!spells(Array(String(decoding: text, as: UTF8.self).uppercased().utf8)))
    }

    /// What a text of 64 characters spells by the book: its bytes, or `nil` unless every
    /// character is `0`-`9` or `a`-`f`.
    private static func naiveUnhex(_ text: [UInt8]) -> [UInt8]? {
        func value(_ c: UInt8) -> UInt8? {
            if c >= 0x30 && c <= 0x39 { return c - 0x30 }
            if c >= 0x61 && c <= 0x66 { return c - 0x61 + 10 }
            return nil
        }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: text.count, by: 2) {
            guard let high = value(text[i]), let low = value(text[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// Eight digits at a time, `unhex` reads every byte value in every position of a word as the
    /// book does: the sixteen digits, and a refusal for every other byte (upper case, the
    /// neighbours of each range, bytes above 0x7f), and round-trips `hex`.
    @Test func unhexReadsEveryByteInEveryPositionAsTheBookDoes() {
        let base = Array(Self.naiveHex((0 ..< 32).map { UInt8(($0 * 29 + 3) & 0xFF) }).utf8)
        for value in 0 ... 255 {
            for position in 0 ..< 64 {
                var text = base
                text[position] = UInt8(value)
                var out = [UInt8](repeating: 0, count: 32)
                let ok = text.withUnsafeBytes { t in out.withUnsafeMutableBytes { PackedName.unhex(t, into: $0) } }
                let expected = Self.naiveUnhex(text)
                #expect(ok == (expected != nil), "value \(value), position \(position)")
                if let expected { #expect(out == expected, "value \(value), position \(position)") }
            }
        }
        for seed in 0 ..< 64 {
            let bytes = (0 ..< 32).map { UInt8(($0 * 131 + seed * 17) & 0xFF) }
            let text = Array(bytes.withUnsafeBytes { PackedName.hex($0) }.utf8)
            var out = [UInt8](repeating: 0, count: 32)
            #expect(text.withUnsafeBytes { t in out.withUnsafeMutableBytes { PackedName.unhex(t, into: $0) } })
            #expect(out == bytes)
        }
        var short = [UInt8](repeating: 0, count: 32)
        #expect(!Array(base.dropLast()).withUnsafeBytes { t in short.withUnsafeMutableBytes { PackedName.unhex(t, into: $0) } })
    }
}
