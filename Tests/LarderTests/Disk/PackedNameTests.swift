import Testing
import LarderTestSupport

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

/// A slot's mark (`DiskIndex.SlotMark`) says whether the slot still holds the name it held when
/// marked, as a comparison of the name with the one stored would.
@Suite struct SlotMarkTests {
    @Test("randomized: a mark holds exactly while its slot holds the name it was taken for, hashed or text")
    func markAgreesWithTheNameComparison() {
        var random = SplitMix64(seed: 33)
        var index = DiskIndex()
        // Hashed names (64 hex digits, packed to 32 bytes) that differ in one byte only (the
        // first, a middle or the last, so that every word of the comparison counts), and text
        // names; few enough that removed slots are reused.
        let base = (0 ..< 32).map { UInt8(truncatingIfNeeded: $0 &* 91 &+ 7) }
        let hashed = [0, 13, 31].flatMap { position in
            (0 ..< 4).map { value in
                var bytes = base
                bytes[position] = UInt8(value)
                return bytes.withUnsafeBytes { PackedName.hex($0) }
            }
        }
        let names = Set(hashed + (0 ..< 6).map { "text-\($0)" }).sorted()
        var marks: [(mark: DiskIndex.SlotMark, name: String)] = []
        var checked = (held: 0, lost: 0, hashed: 0)
        for step in 0 ..< 4_000 {
            let name = names[Int(random.next() % UInt64(names.count))]
            switch random.next() % 3 {
            case 0:
                index.upsert(IndexEntry(name: name, key: name, diskSize: 4096, updateTime: 1, lastAccessMs: 1, ttl: 0, lockCount: 0))
            case 1:
                _ = index.removeEntry(named: name)
            default:
                if let slot = index.slot(of: name) { marks.append((index.mark(ofSlot: slot), name)) }
            }
            for (mark, name) in marks {
                let expected = index.slot(mark.slot, holds: name)
                #expect(index.slot(mark, holds: name) == expected, "step \(step): \(name)")
                if expected { checked.held += 1 } else { checked.lost += 1 }
                if name.count == 64 { checked.hashed += 1 }
            }
            if marks.count > 40 { marks.removeFirst(20) }
        }
        // Both outcomes were exercised, hashed names among them.
        #expect(checked.held > 1_000 && checked.lost > 1_000 && checked.hashed > 1_000)
    }
}

/// A hashed name carried as its 32 bytes (`RecordName`) is, to everything a read does with it,
/// the name as text: the same string, bytes, hash, comparisons and relative path.
@Suite struct RecordNameTests {
    @Test("randomized: a digest's name spells, hashes, compares and paths as its text does")
    func digestActsAsItsText() throws {
        var random = SplitMix64(seed: 41)
        for _ in 0 ..< 500 {
            let words = (random.next(), random.next(), random.next(), random.next())
            let bytes = withUnsafeBytes(of: words) { Array($0) }
            let text = bytes.withUnsafeBytes { PackedName.hex($0) }
            let name = RecordName(digest: words)
            #expect(name.string == text)
            #expect(name.hash == NameHash.of(text))
            #expect(name.withUTF8 { Array($0) } == Array(text.utf8))
            #expect(name.spells(text))
            // One digit changed, or the text in capitals, is another name.
            var other = Array(text.utf8)
            let position = Int(random.next() % 64)
            other[position] = other[position] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            #expect(!name.spells(String(decoding: other, as: UTF8.self)))
            #expect(!name.spells(text.uppercased()))
            for layout in [FolderLayout.sharded, .flat] {
                let paths = DiskLayout(root: "/r", layout: layout)
                let relative = paths.withRelativePath(for: name) { path, _ in String(cString: path) }
                #expect(relative == paths.relativePath(for: text))
                #expect(paths.withRelativePath(for: RecordName(text)) { path, _ in String(cString: path) } == relative)
            }
        }
        // A name given as text is that text, whatever it holds.
        for text in ["a", "", "caf\u{E9}", "cafe\u{301}", "x/../y"] {
            let name = RecordName(text)
            #expect(name.string.utf8.elementsEqual(text.utf8))
            #expect(name.hash == NameHash.of(text))
        }
        #expect(!RecordName("caf\u{E9}").spells("cafe\u{301}"))
        // Text names take the stack path when their first two bytes are ASCII, the string path
        // otherwise; both are the layout's relative path.
        for text in ["a", "ab", "abc", "\u{E9}t\u{E9}", "a\u{301}bc", "x\u{1F600}"] {
            for layout in [FolderLayout.sharded, .flat] {
                let paths = DiskLayout(root: "/r", layout: layout)
                #expect(paths.withRelativePath(for: RecordName(text)) { path, _ in String(cString: path) } == paths.relativePath(for: text))
            }
        }
    }
}
