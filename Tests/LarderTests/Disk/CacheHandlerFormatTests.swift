import Foundation
import Testing
@testable import Larder

/// `CacheHandlerFormat`: which bytes are a CacheHandler entry, and where its response lies.
@Suite struct CacheHandlerFormatTests {
    func contents(_ text: String) -> CacheHandlerFormat.Contents {
        contents(Array(text.utf8))
    }

    func contents(_ bytes: [UInt8]) -> CacheHandlerFormat.Contents {
        bytes.withUnsafeBytes { CacheHandlerFormat.contents(of: $0) }
    }

    /// The response's text, or the outcome's name.
    func response(_ text: String) -> String {
        switch contents(text) {
        case .response(let range): String(decoding: Array(text.utf8)[range], as: UTF8.self)
        case .noResponse: "<no response>"
        case .notJSON: "<not JSON>"
        }
    }

    @Test(arguments: [
        (#"{"response":1}"#, "1"),
        (#"{"response":"a\"b\\c\/d\u00e9\ud83d\ude00"}"#, #""a\"b\\c\/d\u00e9\ud83d\ude00""#),
        (#" { "a" : [ {"response": 0} ] , "response" : { "x" : [ 1 , 2.5e-3 , -0 ] } } "#, #"{ "x" : [ 1 , 2.5e-3 , -0 ] }"#),
        (#"{"response":null}"#, "null"),
        (#"{"response":true,"b":false}"#, "true"),
        (#"{"response":[]}"#, "[]"),
        (#"{"response":{}}"#, "{}"),
        (#"{"response":1,"response":"last"}"#, #""last""#),
        (#"{"\u0072esponse":2}"#, "2"),
        ("\u{FEFF}{\"response\":3}", "3"),
        ("{\"response\":\"caf\u{E9} \u{1F955}\"}", "\"caf\u{E9} \u{1F955}\""),
        (#"{"response":1E+2}"#, "1E+2"),
        (#"{"responses":1}"#, "<no response>"),
        (#"{"respons":1}"#, "<no response>"),
        (#"{"data":{"response":1}}"#, "<no response>"),
        (#"[{"response":1}]"#, "<no response>"),
        (#""response""#, "<no response>"),
        (#"{}"#, "<no response>"),
        ("", "<not JSON>"),
        ("   ", "<not JSON>"),
        (#"{"response":1"#, "<not JSON>"),
        (#"{"response":1,}"#, "<not JSON>"),
        (#"{"response":[1,]}"#, "<not JSON>"),
        (#"{"response":01}"#, "<not JSON>"),
        (#"{"response":1.}"#, "<not JSON>"),
        (#"{"response":.5}"#, "<not JSON>"),
        (#"{"response":NaN}"#, "<not JSON>"),
        (#"{"response":1e999}"#, "<not JSON>"),
        (#"{"response":"\ud800"}"#, "<not JSON>"),
        (#"{"response":"\udc00"}"#, "<not JSON>"),
        (#"{"response":"\x"}"#, "<not JSON>"),
        ("{\"response\":\"a\tb\"}", "<not JSON>"),
        (#"{"response":tru}"#, "<not JSON>"),
        (#"{"response":1} x"#, "<not JSON>"),
        (#"{'response':1}"#, "<not JSON>"),
        (#"{"response" 1}"#, "<not JSON>"),
        (#"{"a":1 "response":2}"#, "<not JSON>"),
        (#"<html></html>"#, "<not JSON>"),
    ])
    func findsTheResponseOrSaysWhyNot(text: String, expected: String) {
        #expect(response(text) == expected, "\(text)")
    }

    @Test func invalidUTF8AndOtherEncodingsAreNotJSON() {
        #expect(contents([0x7B, 0x22, 0x72, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) == .notJSON)
        #expect(contents(Array(#"{"response":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8)) == .notJSON)
        let utf16 = Array(#"{"response":1}"#.utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        #expect(contents(utf16) == .notJSON)
    }

    @Test func nestingIsLimitedAtJSONSerializationsDepth() {
        let depth = CacheHandlerFormat.maximumDepth
        #expect(depth == 512)
        // The top-level object is one level.
        let within = #"{"response":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}"
        guard case .response(let range) = contents(within) else {
            Issue.record("\(depth) levels refused")
            return
        }
        #expect(range.count == 2 * (depth - 1))
        let beyond = #"{"response":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
        #expect(contents(beyond) == .notJSON)
        // Far deeper than any stack would allow for a recursive parser: refused, not a crash.
        #expect(contents(String(repeating: "[", count: 1_000_000)) == .notJSON)
    }

    @Test func entryNamesAreSixtyFourLowercaseHexDigits() {
        #expect(CacheHandlerFormat.isEntryName(SHA256Hash.hex(of: "https://example.com")))
        #expect(CacheHandlerFormat.isEntryName(String(repeating: "0", count: 64)))
        #expect(!CacheHandlerFormat.isEntryName(SHA256Hash.hex(of: "k").uppercased()))
        #expect(!CacheHandlerFormat.isEntryName(String(SHA256Hash.hex(of: "k").dropLast())))
        #expect(!CacheHandlerFormat.isEntryName(SHA256Hash.hex(of: "k") + "0"))
        #expect(!CacheHandlerFormat.isEntryName(String(repeating: "g", count: 64)))
        #expect(!CacheHandlerFormat.isEntryName("README.md"))
        #expect(CacheHandlerFormat.expiration == 6 * 24 * 60 * 60)
    }

    // MARK: - Against JSONSerialization

    /// A random JSON text with random whitespace; objects sometimes have a "response" member.
    func randomJSON(_ rng: inout SplitMix64, depth: Int = 0) -> String {
        let space = [" ", "", "", "\n", "\t", "  "]
        func ws() -> String { space[rng.below(space.count)] }
        let strings = ["response", "a", "", "caf\u{E9}", "\\\"q\\\"", "\\u0041", "\\ud83d\\ude00", "/\\/", "\u{1F955}"]
        let numbers = ["0", "-0", "1", "-12", "3.25", "1e3", "2E-2", "-0.5e+10", "123456789012345"]
        switch depth > 3 ? rng.below(4) : rng.below(6) {
        case 0: return "\"" + strings[rng.below(strings.count)] + "\""
        case 1: return numbers[rng.below(numbers.count)]
        case 2: return ["true", "false", "null"][rng.below(3)]
        case 3: return "\"" + strings[rng.below(strings.count)] + strings[rng.below(strings.count)] + "\""
        case 4:
            let items = (0 ..< rng.below(4)).map { _ in ws() + randomJSON(&rng, depth: depth + 1) + ws() }
            return "[" + items.joined(separator: ",") + ws() + "]"
        default:
            let members = (0 ..< rng.below(4)).map { _ in
                let name = rng.below(3) == 0 ? "response" : strings[rng.below(strings.count)]
                return ws() + "\"" + name + "\"" + ws() + ":" + ws() + randomJSON(&rng, depth: depth + 1) + ws()
            }
            return "{" + members.joined(separator: ",") + ws() + "}"
        }
    }

    /// Bytes that matter to the grammar, and a few that are not ASCII or not UTF-8.
    static let mutationBytes: [UInt8] = Array(#"{}[],:"\ 0123456789-+.eEtrufalsn"#.utf8) + [0x09, 0x0A, 0x01, 0xC3, 0xA9, 0xFF]

    func jsonSerializationValue(_ bytes: [UInt8]) -> Any?? {
        guard let value = try? JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed) else { return nil }
        return .some(value)
    }

    func canonical(_ value: Any) -> Data? {
        try? JSONSerialization.data(withJSONObject: ["v": value], options: [.sortedKeys])
    }

    /// A text with every comma before a closing bracket removed: JSONSerialization on Linux
    /// accepts trailing commas, which RFC 8259 (and Apple's JSONSerialization) refuse.
    func withoutTrailingCommas(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                out.append(byte)
                continue
            }
            if byte == UInt8(ascii: "\"") { inString = true }
            if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") {
                var end = out.count
                while end > 0, [0x20, 0x09, 0x0A, 0x0D].contains(out[end - 1]) { end -= 1 }
                if end > 0, out[end - 1] == UInt8(ascii: ",") { out.remove(at: end - 1) }
            }
            out.append(byte)
        }
        return out
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func agreesWithJSONSerializationOnRandomAndMutatedTexts(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var checked = (valid: 0, invalid: 0, responses: 0)
        for _ in 0 ..< 1500 {
            var bytes = Array(randomJSON(&rng).utf8)
            if rng.below(2) == 0, !bytes.isEmpty {
                for _ in 0 ... rng.below(3) {
                    let at = rng.below(bytes.count + 1)
                    let byte = Self.mutationBytes[rng.below(Self.mutationBytes.count)]
                    switch rng.below(3) {
                    case 0: bytes.insert(byte, at: at)
                    case 1: if at < bytes.count { bytes.remove(at: at) }
                    default: if at < bytes.count { bytes[at] = byte }
                    }
                }
            }
            let ours = contents(bytes)
            let theirs = jsonSerializationValue(bytes)
            let text = String(decoding: bytes, as: UTF8.self)
            switch (ours, theirs) {
            case (.notJSON, nil):
                checked.invalid += 1
            case (.notJSON, .some):
                // The one known difference: trailing commas.
                let fixed = withoutTrailingCommas(bytes)
                #expect(fixed != bytes && contents(fixed) != .notJSON, "refused, but JSONSerialization reads: \(text)")
            case (_, nil):
                Issue.record("accepted, but JSONSerialization refuses: \(text)")
            case (.noResponse, .some(let value)):
                checked.valid += 1
                #expect((value as? [String: Any])?["response"] == nil, "\(text)")
            case (.response(let range), .some(let value)):
                checked.responses += 1
                let expected = try #require((value as? [String: Any])?["response"], "\(text)")
                let slice = try JSONSerialization.jsonObject(with: Data(bytes[range]), options: .fragmentsAllowed)
                #expect(canonical(slice) == canonical(expected), "\(text)")
            }
        }
        // The run saw all three outcomes, not just one.
        #expect(checked.valid > 50 && checked.invalid > 50 && checked.responses > 50, "\(checked)")
    }
}
