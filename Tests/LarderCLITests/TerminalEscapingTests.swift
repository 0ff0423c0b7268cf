import Foundation
import Larder
import Testing
@testable import LarderCLI

/// `TerminalText`: what it escapes, how, and what it leaves alone.
@Suite struct TerminalTextTests {
    @Test(arguments: [
        ("\n", #"\n"#), ("\r", #"\r"#), ("\t", #"\t"#), ("\u{1B}", #"\e"#), ("\\", #"\\"#),
        ("\u{0}", #"\x00"#), ("\u{7}", #"\x07"#), ("\u{8}", #"\x08"#), ("\u{1F}", #"\x1F"#), ("\u{7F}", #"\x7F"#),
        ("\u{80}", #"\u{80}"#), ("\u{85}", #"\u{85}"#), ("\u{9B}", #"\u{9B}"#), ("\u{9F}", #"\u{9F}"#),
        ("\u{202A}", #"\u{202A}"#), ("\u{202B}", #"\u{202B}"#), ("\u{202C}", #"\u{202C}"#), ("\u{202D}", #"\u{202D}"#),
        ("\u{202E}", #"\u{202E}"#), ("\u{2066}", #"\u{2066}"#), ("\u{2067}", #"\u{2067}"#), ("\u{2068}", #"\u{2068}"#),
        ("\u{2069}", #"\u{2069}"#), ("\u{200E}", #"\u{200E}"#), ("\u{200F}", #"\u{200F}"#), ("\u{061C}", #"\u{61C}"#),
        ("\u{2028}", #"\u{2028}"#), ("\u{2029}", #"\u{2029}"#),
    ])
    func eachControlHasAVisibleEscape(character: String, escape: String) {
        #expect(TerminalText.escaped(character) == escape)
        #expect(TerminalText.escaped("a\(character)b") == "a\(escape)b")
        #expect(TerminalText.escaped("a\(character)b").unicodeScalars.allSatisfy { (0x20 ..< 0x7F).contains($0.value) })
    }

    @Test func everyC0AndC1ControlIsEscapedToPrintableASCII() {
        for value in Array(0x00 ... 0x1F) + Array(0x7F ... 0x9F) {
            let scalar = Unicode.Scalar(UInt32(value))!
            let escaped = TerminalText.escaped(String(Character(scalar)))
            #expect(escaped.hasPrefix("\\"), "U+\(String(value, radix: 16))")
            #expect(escaped.unicodeScalars.allSatisfy { (0x20 ..< 0x7F).contains($0.value) }, "U+\(String(value, radix: 16))")
        }
    }

    @Test(arguments: ["plain-key", "café", "naïve façade", "über/ключ", "日本語のキー", "한국어", "🔑🍰", "👨‍👩‍👧", "🇸🇪", "e\u{301}", "a b", "%41", "", "“quoted”"])
    func readableTextStaysAsItIs(text: String) {
        #expect(TerminalText.escaped(text) == text)
        #expect(TerminalText.escaped(utf8: Array(text.utf8)) == text)
    }

    @Test func backslashesAreDoubledSoEscapesAreUnambiguous() {
        // A key that spells an escape differs from a key that holds the control.
        #expect(TerminalText.escaped(#"\e[2J"#) == #"\\e[2J"#)
        #expect(TerminalText.escaped("\u{1B}[2J") == #"\e[2J"#)
        #expect(TerminalText.escaped(#"C:\dir\n"#) == #"C:\\dir\\n"#)
    }

    @Test func attackSequencesBecomeOneInertLine() {
        let osc52 = "\u{1B}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\u{7}"
        #expect(TerminalText.escaped(osc52) == #"\e]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"#)
        let forgedRow = "a\nroot-token  1 B  0  default  now  now  in 30 d  ok"
        #expect(!TerminalText.escaped(forgedRow).contains("\n"))
        let c1CSI = "x\u{9B}2J"  // an 8-bit CSI
        #expect(TerminalText.escaped(c1CSI) == #"x\u{9B}2J"#)
        let spoof = "invoice_\u{202E}fdp.exe"
        #expect(TerminalText.escaped(spoof) == #"invoice_\u{202E}fdp.exe"#)
    }

    @Test func invalidUTF8BytesAreWrittenAsHexEscapes() {
        #expect(TerminalText.escaped(utf8: [0x61, 0xFF, 0x62]) == #"a\xFFb"#)
        #expect(TerminalText.escaped(utf8: [0xC3]) == #"\xC3"#, "a truncated sequence")
        #expect(TerminalText.escaped(utf8: [0xC3, 0xA9]) == "é")
        #expect(TerminalText.escaped(utf8: [0xC0, 0xAF]) == #"\xC0\xAF"#, "an overlong '/'")
        #expect(TerminalText.escaped(utf8: [0xED, 0xA0, 0x80]) == #"\xED\xA0\x80"#, "a UTF-16 surrogate")
        #expect(TerminalText.escaped(utf8: [0xE2, 0x82, 0x41]) == #"\xE2\x82A"#, "decoding resumes at the next byte")
        #expect(TerminalText.escaped(utf8: [0x1B, 0x5C, 0xC2, 0x85]) == #"\e\\\u{85}"#, "controls in bytes too")
        #expect(TerminalText.escaped(utf8: [UInt8]()) == "")
    }

    @Test func interpolationEscapesValuesAndKeepsLiterals() {
        let key = "k\n\u{1B}[31m"
        let line: TerminalText = "removed '\(key)' (\(3) B)\n"
        #expect(line.text == #"removed 'k\n\e[31m' (3 B)"# + "\n")
        let safe = TerminalText(verbatim: "\u{1B}[1mbold\u{1B}[0m")
        let combined: TerminalText = "\(safe) \(key)"
        #expect(combined.text == "\u{1B}[1mbold\u{1B}[0m " + #"k\n\e[31m"#, "safe text is not escaped twice")
        #expect((line + "x").text.hasSuffix("\nx"))
    }

    @Test func plainTextIsTextWithoutControls() {
        #expect(TerminalText.isPlainText(Data("line one\n\tline two\r\n".utf8)))
        #expect(TerminalText.isPlainText(Data("café 日本 🔑".utf8)))
        #expect(TerminalText.isPlainText(Data()))
        #expect(!TerminalText.isPlainText(Data("a\u{1B}]52;c;eA==\u{7}".utf8)))
        #expect(!TerminalText.isPlainText(Data("progress\rforged".utf8)), "a lone carriage return overwrites the line")
        #expect(!TerminalText.isPlainText(Data("ends with\r".utf8)))
        #expect(!TerminalText.isPlainText(Data("x\u{202E}y".utf8)))
        #expect(!TerminalText.isPlainText(Data([0x61, 0xFF])))
        #expect(!TerminalText.isPlainText(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])))
    }

    @Test func tablesAndFieldListsEscapeEveryCell() {
        var table = TextTable([.init(title: "KEY"), .init(title: "SIZE", alignment: .right)])
        table.append(["a\nforged  9 B", "1 B"])
        table.append(["\u{1B}]52;c;eA==\u{7}", "2 B"], colour: "31")
        let plain = table.render(colour: false).text
        #expect(plain.split(separator: "\n", omittingEmptySubsequences: false).count == 4, "header, two rows, final newline")
        #expect(!plain.contains("\u{1B}") && !plain.contains("\u{7}"))
        #expect(plain.contains(#"a\nforged  9 B"#))
        let coloured = table.render(colour: true).text
        #expect(withoutColourCodes(coloured) == plain, "colour adds SGR codes and nothing else")

        var fields = FieldList()
        fields.add("key", "x\u{9B}31m\u{202E}y")
        fields.add("pa\nth", "/tmp")
        #expect(fields.render().text == #"key     x\u{9B}31m\u{202E}y"# + "\n" + #"pa\nth  /tmp"# + "\n")
    }

    @Test func jsonStaysExactAndHoldsNoTerminalControls() throws {
        var key = "k"
        for value in Array(0x00 ... 0x1F) + Array(0x7F ... 0x9F) + [0x061C, 0x200E, 0x200F, 0x2028, 0x2029] + Array(0x202A ... 0x202E) + Array(0x2066 ... 0x2069) {
            key.unicodeScalars.append(Unicode.Scalar(UInt32(value))!)
        }
        key += "\"\\café🔑"
        let text = JSONValue.object([("key", .string(key))]).render()
        #expect(text.unicodeScalars.allSatisfy { TerminalText.isSafe($0) }, "\(text)")
        #expect(text.contains(#"\u2028"#) && text.contains(#"\u2029"#) && text.contains(#"\u001b"#) && text.contains(#"\u202e"#))
        let parsed = try #require(try parseJSON(text) as? [String: Any])
        #expect(parsed["key"] as? String == key)
    }
}

/// `text` without the SGR sequences (`ESC [ … m`) the table writes for colour.
func withoutColourCodes(_ text: String) -> String {
    text.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
}
