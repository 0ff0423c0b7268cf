import Foundation
import Testing
@testable import LarderCLI

@Suite struct OutputTests {
    @Test(arguments: [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (35021, "34.2 KiB"), (1_572_864, "1.5 MiB"), (3 << 30, "3.0 GiB")])
    func humanSizes(bytes: Int, text: String) {
        #expect(HumanFormat.size(bytes) == text)
    }

    @Test func humanTimes() {
        #expect(HumanFormat.relative(1000 + 3 * 86400, now: 1000) == "in 3 d")
        #expect(HumanFormat.relative(1000 - 300, now: 1000) == "5 min ago")
        #expect(HumanFormat.relative(1000, now: 1000) == "now")
        #expect(HumanFormat.ttl(0) == "default")
        #expect(HumanFormat.ttl(7200) == "2 h")
        #expect(HumanFormat.date(1_700_000_000) == "2023-11-14 22:13:20 UTC")
    }

    @Test(arguments: ["plain", "https://a.example/x.png?size=2&v=%41", ".hidden", "..", "über/ключ 🔑", "a.b-c_d", "%", ""])
    func exportNamesRoundTrip(key: String) {
        let name = ExportName.encode(key)
        #expect(ExportName.decode(name) == key)
        #expect(!name.hasPrefix("."))
        #expect(!name.contains("/"))
        #expect(name.utf8.allSatisfy { $0 < 0x80 })
    }

    @Test func exportNameScheme() {
        #expect(ExportName.encode("https://a.example/x.png") == "https%3A%2F%2Fa.example%2Fx.png")
        #expect(ExportName.encode(".x") == "%2Ex")
        #expect(ExportName.decode("%zz") == nil)
    }

    @Test func tableAlignsColumnsAndColoursOnlyOnRequest() {
        var table = TextTable([.init(title: "KEY"), .init(title: "SIZE", alignment: .right)])
        table.append(["a", "1 B"])
        table.append(["longer", "10.0 KiB"], colour: "31")
        let plain = table.render(colour: false)
        #expect(plain == "KEY         SIZE\na            1 B\nlonger  10.0 KiB\n")
        #expect(!plain.text.contains("\u{1B}"))
        #expect(table.render(colour: true).text.contains("\u{1B}[31m"))
    }

    @Test func jsonEscapesAndKeepsOrder() throws {
        let value = JSONValue.object([("b", .string("q\"\n\u{1}")), ("a", .null), ("n", .int(3))])
        let text = value.render()
        #expect(text == #"{"b": "q\"\n\u0001", "a": null, "n": 3}"#)
        let parsed = try #require(try parseJSON(text) as? [String: Any])
        #expect(parsed["b"] as? String == "q\"\n\u{1}")
    }

    @Test func payloadKindsFromMagicBytes() {
        #expect(PayloadKind.of(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0])) == .png)
        #expect(PayloadKind.of(Data([0xFF, 0xD8, 0xFF, 0xE0])) == .jpeg)
        #expect(PayloadKind.of(Data("GIF89a...".utf8)) == .gif)
        #expect(PayloadKind.of(Data("{\"a\":1}".utf8)) == .json)
        #expect(PayloadKind.of(Data([0, 1, 2])) == .binary)
        let png = DemoData.gradientPNG(width: 5, height: 3, seed: 1)
        #expect(PayloadKind.pngSize(png)! == (5, 3))
    }

    @Test func progressBarOnlyOnTerminalsAndLargeJobs() {
        let quiet = OutputCapture()
        var bar = ProgressBar(io: quiet.io(), label: "verify", total: 1000)
        bar.update(500, of: 1000)
        bar.finish()
        #expect(quiet.stderr.isEmpty)
        let loud = OutputCapture()
        var shown = ProgressBar(io: loud.io(terminal: true), label: "verify", total: 1000)
        shown.update(500, of: 1000)
        #expect(loud.stderr.contains("500/1000"))
        let small = OutputCapture()
        var tiny = ProgressBar(io: small.io(terminal: true), label: "verify", total: ProgressBar.threshold - 1)
        tiny.update(1, of: ProgressBar.threshold - 1)
        #expect(small.stderr.isEmpty)
    }
}
