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
}
