#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
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

    @Test(arguments: [
        "plain-key", "café", "naïve façade", "über/ключ", "日本語のキー", "한국어", "🔑🍰", "👨‍👩‍👧", "🇸🇪", "e\u{301}", "a b", "%41", "", "“quoted”",
    ])
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
        for value in Array(0x00 ... 0x1F) + Array(0x7F ... 0x9F) + [0x061C, 0x200E, 0x200F, 0x2028, 0x2029] + Array(0x202A ... 0x202E)
            + Array(0x2066 ... 0x2069)
        {
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

/// Every command, run on records whose keys, payloads, paths and metadata carry terminal attacks:
/// human output and error messages hold no control character the tool did not write itself,
/// and `--json` gives the exact keys back.
@Suite struct TerminalInjectionTests {
    /// OSC 52 (set the clipboard), cursor moves and colour, a newline that forges a table row, an
    /// 8-bit CSI and NEL, a right-to-left override, DEL, a carriage return, a tab, a backslash.
    static let hostileKeys = [
        "\u{1B}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\u{7}clip",
        "\u{1B}[2J\u{1B}[H\u{1B}[31mred\u{1B}[0m",
        "a\nforged-row      1 B      0  default  now  now  in 30 d  ok",
        "c1\u{9B}2J\u{85}next",
        "invoice_\u{202E}fdp.exe\u{2066}x\u{2069}\u{200F}\u{061C}",
        "del\u{7F}cr\rover\ttab\\e",
    ]
    static let now = 1_700_000_000
    static let at = ["--now", String(now)]

    /// Checks one run: its output is UTF-8, its only control characters are the newlines of its
    /// layout (and, with `colour`, the SGR sequences of its table), and no DEL, C1 or bidi control.
    static func expectSafe(_ result: RunResult, colour: Bool = false, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for (stream, data) in [("stdout", result.stdoutData), ("stderr", result.stderrData)] {
            guard let text = String(validating: data, as: UTF8.self) else {
                Issue.record("\(what): \(stream) is not UTF-8", sourceLocation: sourceLocation)
                continue
            }
            let plain = colour ? withoutColourCodes(text) : text
            let bad = plain.unicodeScalars.filter { $0 != "\n" && !TerminalText.isSafe($0) }
            #expect(
                bad.isEmpty, "\(what): \(stream) holds \(bad.map { "U+" + String($0.value, radix: 16) }): \(text.debugDescription)",
                sourceLocation: sourceLocation)
        }
    }

    /// A directory with one record per hostile key, stored by `larder put`.
    static func hostileCache(in temp: TemporaryDirectory, keys: String = "sha256", ttl: Int? = nil) -> String {
        let dir = temp.path("c-\(keys)")
        for key in hostileKeys {
            let result = larder(
                ["put", "--dir", dir, "--keys", keys] + (ttl.map { ["--ttl", String($0)] } ?? []) + at + [key],
                input: Data("payload of \(key)".utf8))
            #expect(result.code == 0, "\(result.stderr)")
            expectSafe(result, "put")
            #expect(result.stdout.contains("stored '\(TerminalText.escaped(key))'"))
        }
        return dir
    }

    @Test(arguments: ["sha256", "verbatim"])
    func lsShowsOneLinePerRecordAndJSONGivesTheExactKeys(keys: String) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = Self.hostileCache(in: temp, keys: keys)
        let ls = larder(["ls", "--dir", dir] + Self.at)
        #expect(ls.code == 0)
        Self.expectSafe(ls, "ls")
        let lines = ls.stdout.split(separator: "\n")
        #expect(lines.count == Self.hostileKeys.count + 2, "header, one line per record, totals: no forged row")
        for key in Self.hostileKeys {
            #expect(lines.contains { $0.hasPrefix(TerminalText.escaped(key)) }, "\(key.debugDescription)")
        }
        #expect(!lines.contains { $0.hasPrefix("forged-row") })

        let coloured = larder(["ls", "--dir", dir] + Self.at, terminal: true)
        Self.expectSafe(coloured, colour: true, "ls on a terminal")
        #expect(withoutColourCodes(coloured.stdout) == ls.stdout)

        let json = larder(["ls", "--dir", dir, "--json"] + Self.at)
        #expect(json.code == 0)
        Self.expectSafe(json, "ls --json")
        let rows = try #require(try parseJSON(json.stdout) as? [[String: Any]])
        #expect(Set(rows.compactMap { $0["key"] as? String }) == Set(Self.hostileKeys), "JSON is exact")
    }

    @Test func showStatsLockUnlockRmAndTheirErrorsAreEscaped() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = Self.hostileCache(in: temp)
        for key in Self.hostileKeys {
            let show = larder(["show", "--dir", dir, key] + Self.at)
            #expect(show.code == 0, "\(show.stderr)")
            Self.expectSafe(show, "show")
            #expect(show.stdout.contains("key               \(TerminalText.escaped(key))\n"), "\(show.stdout)")
            let preview = ("payload of " + key).replacingOccurrences(of: "\n", with: "⏎").unicodeScalars.prefix(30)
            #expect(
                show.stdout.contains("text: " + TerminalText.escaped(String(String.UnicodeScalarView(preview)))),
                "the preview is escaped too")
        }
        let stats = larder(["stats", "--dir", dir] + Self.at)
        #expect(stats.code == 0)
        Self.expectSafe(stats, "stats")

        let lock = larder(["lock", "--dir", dir] + Self.hostileKeys + ["\u{1B}]52;c;bWlzc2luZw==\u{7}"] + Self.at)
        #expect(lock.code == 1, "the last key is missing")
        Self.expectSafe(lock, "lock")
        #expect(lock.stdout.split(separator: "\n").count == Self.hostileKeys.count)
        #expect(lock.stderr.contains(#"not locked '\e]52;c;bWlzc2luZw==\x07'"#))
        for expected in [0, 1] {
            let unlock = larder(["unlock", "--dir", dir] + Self.hostileKeys + Self.at)
            #expect(unlock.code == Int32(expected), "the second unlock finds them unlocked")
            Self.expectSafe(unlock, "unlock")
            #expect((expected == 0 ? unlock.stdout : unlock.stderr).split(separator: "\n").count == Self.hostileKeys.count)
        }

        let rm = larder(["rm", "--dir", dir] + Self.hostileKeys + ["gone\u{1B}[2K\r"] + Self.at)
        #expect(rm.code == 1)
        Self.expectSafe(rm, "rm")
        for key in Self.hostileKeys { #expect(rm.stdout.contains("removed '\(TerminalText.escaped(key))'\n")) }
        #expect(rm.stderr == #"larder rm: no record for key 'gone\e[2K\r'"# + "\n")

        let missing = larder(["show", "--dir", dir, Self.hostileKeys[0]] + Self.at)
        #expect(missing.code == 1)
        Self.expectSafe(missing, "show of a missing key")
        #expect(missing.stderr.contains(TerminalText.escaped(Self.hostileKeys[0])))
    }

    @Test func gcListsExpiredHostileKeysOnePerLine() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = Self.hostileCache(in: temp, ttl: 10)
        let gc = larder(["gc", "--list", "--dir", dir, "--now", String(Self.now + 100)])
        #expect(gc.code == 0, "\(gc.stderr)")
        Self.expectSafe(gc, "gc")
        let lines = gc.stdout.split(separator: "\n")
        #expect(lines.count == Self.hostileKeys.count + 2, "summary, one line per record, remaining")
        for key in Self.hostileKeys { #expect(lines.contains("  \(TerminalText.escaped(key))  expired")) }
    }

    @Test func verifyAndExportListCorruptHostileKeysEscaped() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = Self.hostileCache(in: temp)
        for key in Self.hostileKeys {
            let path = DiskLayout(root: dir).path(for: SHA256Hash.hex(of: key))
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes[bytes.count - 1] ^= 0xFF
            try bytes.write(to: URL(fileURLWithPath: path))
        }
        let verify = larder(["verify", "--dir", dir] + Self.at)
        #expect(verify.code == 1)
        Self.expectSafe(verify, "verify")
        #expect(verify.stdout.split(separator: "\n").count == 1 + 1 + Self.hostileKeys.count, "summary, header, one row each")
        for key in Self.hostileKeys { #expect(verify.stdout.contains(TerminalText.escaped(key))) }
        Self.expectSafe(larder(["verify", "--dir", dir] + Self.at, terminal: true), colour: true, "verify on a terminal")
        let json = larder(["verify", "--dir", dir, "--json"] + Self.at)
        let report = try #require(try parseJSON(json.stdout) as? [String: Any])
        let corrupt = try #require(report["corrupt"] as? [[String: Any]])
        #expect(Set(corrupt.compactMap { $0["key"] as? String }) == Set(Self.hostileKeys))

        let export = larder(["export", "--dir", dir, temp.path("out")] + Self.at)
        #expect(export.code == 1)
        Self.expectSafe(export, "export")
        #expect(export.stdout.split(separator: "\n").count == 1 + Self.hostileKeys.count)
        let repair = larder(["verify", "--dir", dir, "--repair"] + Self.at)
        Self.expectSafe(repair, "verify --repair")
        #expect(repair.stdout.contains("removed \(Self.hostileKeys.count) corrupt records"))
    }

    @Test func pathsAndMetadataValuesAreEscaped() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("dir\u{1B}]52;c;eA==\u{7}\nforged\u{202E}")
        let escapedDir = TerminalText.escaped(dir)
        let absent = larder(["ls", "--dir", dir])
        #expect(absent.code == 3)
        Self.expectSafe(absent, "ls of a missing directory")
        #expect(absent.stderr.contains("'\(escapedDir)' does not exist"))

        let put = larder(["put", "--dir", dir, "k"], input: Data("v".utf8))
        #expect(put.code == 0, "\(put.stderr)")
        for arguments in [
            ["stats"], ["verify"], ["export", temp.path("out\u{1B}[2J")], ["report", "--html", temp.path("r\u{1B}[2J.html")], ["gc"],
        ] {
            let result = larder([arguments[0], "--dir", dir] + arguments.dropFirst())
            #expect(result.code == 0, "\(arguments): \(result.stderr)")
            Self.expectSafe(result, "\(arguments[0]) on a hostile path")
        }
        #expect(larder(["stats", "--dir", dir]).stdout.contains("directory           \(escapedDir)\n"))
        let held = try DiskCache(options: DiskCacheOptions(directory: URL(fileURLWithPath: dir)))
        let busy = larder(["rm", "--dir", dir, "k"])
        held.close()
        #expect(busy.code == 3)
        Self.expectSafe(busy, "a held directory")
        #expect(busy.stderr.contains(escapedDir))

        // Metadata naming a key encoding of its own: shown by stats, named in put's refusal.
        let metadata = DiskLayout(root: dir).metadataPath
        let crafted = #"{"format": 1, "keyEncoding": "custom:\u001b]52;c;eA==\u0007\n\u202eevil", "layout": "shard2"}"#
        try Data(crafted.utf8).write(to: URL(fileURLWithPath: metadata))
        let stats = larder(["stats", "--dir", dir])
        #expect(stats.code == 0, "\(stats.stderr)")
        Self.expectSafe(stats, "stats with crafted metadata")
        #expect(stats.stdout.contains(#"keys custom:\e]52;c;eA==\x07\n\u{202E}evil"#))
        let refused = larder(["put", "--dir", dir, "k2"], input: Data("v".utf8))
        #expect(refused.code == 3)
        Self.expectSafe(refused, "put with crafted metadata")
        let json = try #require(try parseJSON(larder(["stats", "--dir", dir, "--json"]).stdout) as? [String: Any])
        #expect(json["keyEncoding"] as? String == "custom:\u{1B}]52;c;eA==\u{7}\n\u{202E}evil")
    }

    @Test func argumentErrorsAndInvalidKeysAreEscaped() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        for arguments in [
            ["\u{1B}[2J"], ["ls", "--\u{1B}[2J"], ["ls", "--sort", "\u{9B}2J"], ["show", "a", "\u{1B}]52;c;eA==\u{7}"],
            ["gc", "--size-limit", "\n1"],
        ] {
            let result = larder(arguments)
            #expect(result.code == 2, "\(arguments)")
            Self.expectSafe(result, "\(arguments)")
        }
        let invalid = larder(["put", "--dir", temp.path("v"), "--keys", "verbatim", "a/\u{1B}[2J\n"], input: Data("v".utf8))
        #expect(invalid.code == 2)
        Self.expectSafe(invalid, "an invalid key")
        #expect(invalid.stderr.contains(#"(key 'a/\e[2J\n')"#), "\(invalid.stderr)")
    }

    @Test func fileNamesThatAreNotUTF8NeverReachTheTerminalRaw() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = Self.hostileCache(in: temp, keys: "verbatim")
        // A shard folder's file and a root file whose names are not UTF-8 (with an ESC after them).
        for name: [UInt8] in [[0x61, 0x62, 0xFF, 0x1B, 0x5B, 0x32, 0x4A], [0xC3]] {
            if name.count > 2 { try FileManager.default.createDirectory(atPath: dir + "/ab", withIntermediateDirectories: true) }
            let folder = Array((name.count > 2 ? dir + "/ab/" : dir + "/").utf8)
            let fd = (folder + name + [0]).withUnsafeBufferPointer { path in
                path.withMemoryRebound(to: CChar.self) { creat($0.baseAddress!, 0o600) }
            }
            #expect(fd >= 0)
            close(fd)
        }
        for arguments in [["ls"], ["stats"], ["verify"], ["export", temp.path("out")]] {
            let result = larder([arguments[0], "--dir", dir] + arguments.dropFirst() + Self.at)
            Self.expectSafe(result, "\(arguments[0]) beside names that are not UTF-8")
        }
    }

    @Test func catWritesThePayloadExactlyButNotControlsToATerminal() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        let hostile = Data("title\u{1B}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\u{7}\u{1B}[2J".utf8)
        let binary = Data([0x00, 0x01, 0xFF, 0x1B, 0x63])
        let text = Data("plain text, café 🔑\r\nsecond line\n".utf8)
        for (key, payload) in [("hostile", hostile), ("binary", binary), ("text", text)] {
            #expect(larder(["put", "--dir", dir, key], input: payload).code == 0)
        }
        for (key, payload) in [("hostile", hostile), ("binary", binary), ("text", text)] {
            let piped = larder(["cat", "--dir", dir, key])
            #expect(piped.code == 0)
            #expect(piped.stdoutData == payload, "a pipe gets the payload as it is")
            let forced = larder(["cat", "--dir", dir, "--force", key], terminal: true)
            #expect(forced.stdoutData == payload, "--force writes it even to a terminal")
        }
        let shown = larder(["cat", "--dir", dir, "text"], terminal: true)
        #expect(shown.code == 0)
        #expect(shown.stdoutData == text, "plain text goes to a terminal as it is")
        for key in ["hostile", "binary"] {
            let refused = larder(["cat", "--dir", dir, key], terminal: true)
            #expect(refused.code == 2)
            #expect(refused.stdoutData.isEmpty)
            #expect(refused.stderr.contains("--force"))
            Self.expectSafe(refused, "cat refusing")
        }
        #expect(larder(["cat", "--help"]).stdout.contains("byte for byte"))
        #expect(larder(["--help"]).stdout.contains(#"\e for ESC"#))
    }

    @Test func demoOnAHostilePathEscapesIt() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("demo\u{1B}]52;c;eA==\u{7}\n\u{202E}")
        let result = larder(["demo", "--dir", dir])
        #expect(result.code == 0, "\(result.stderr)")
        Self.expectSafe(result, "demo")
        #expect(result.stdout.hasPrefix("Larder demo in \(TerminalText.escaped(dir))\n"))
    }

    @Test func theHTMLReportShowsControlsAsEscapes() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = Self.hostileCache(in: temp)
        let output = temp.path("report.html")
        #expect(larder(["report", "--dir", dir, "--html", output] + Self.at).code == 0)
        let html = try String(contentsOfFile: output, encoding: .utf8)
        #expect(!html.unicodeScalars.contains { $0 != "\n" && !TerminalText.isSafe($0) })
        #expect(html.contains("invoice_\\u{202E}fdp.exe"))
        #expect(html.contains(#"\e]52;c;"#))
        #expect(!html.contains("<forged") && html.contains(#"a\nforged-row"#))
    }
}
