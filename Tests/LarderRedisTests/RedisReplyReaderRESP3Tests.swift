import Foundation
import Larder
import LarderTestSupport
import Testing

@testable import LarderRedis

/// The RESP3 types, on scripted bytes: each parses, in any chunks; hostile input (cut short,
/// over a limit, nested too deep, an unknown type) throws a typed error naming the fault.
@Suite struct RedisReplyReaderRESP3Tests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The error reading one reply of `input` throws, or `nil` when it parses.
    func failure(_ input: String, limits: RedisReplyLimits = RedisReplyLimits()) -> CacheError? {
        do {
            _ = try RedisReplyReader(source: ScriptedBytes([bytes(input)]), limits: limits).readReply()
            return nil
        } catch {
            return error
        }
    }

    static let sample: [(String, RedisReply)] = [
        ("_\r\n", .null),
        ("#t\r\n", .boolean(true)),
        ("#f\r\n", .boolean(false)),
        (",3.25\r\n", .double(3.25)),
        (",-1e3\r\n", .double(-1000)),
        (",10\r\n", .double(10)),
        (",inf\r\n", .double(.infinity)),
        (",-inf\r\n", .double(-.infinity)),
        ("(3492890328409238509324850943850943825024385\r\n", .bigNumber("3492890328409238509324850943850943825024385")),
        ("(-7\r\n", .bigNumber("-7")),
        ("!21\r\nSYNTAX invalid syntax\r\n", .error("SYNTAX invalid syntax")),
        ("=15\r\ntxt:Some string\r\n", .verbatim(format: "txt", text: Data("Some string".utf8))),
        ("=4\r\nmkd:\r\n", .verbatim(format: "mkd", text: Data())),
        (
            "%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n~2\r\n#t\r\n_\r\n",
            .map([.status("first"), .integer(1), .string(Data("second".utf8)), .set([.boolean(true), .null])])
        ),
        ("~0\r\n", .set([])),
        // An attribute is read and dropped: the reply is what follows it.
        ("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2\r\n:3\r\n", .array([.integer(2), .integer(3)])),
        (
            ">2\r\n$10\r\ninvalidate\r\n*2\r\n$3\r\nn:a\r\n$3\r\nn:b\r\n",
            .push([.string(Data("invalidate".utf8)), .array([.string(Data("n:a".utf8)), .string(Data("n:b".utf8))])])
        ),
        (">2\r\n$10\r\ninvalidate\r\n_\r\n", .push([.string(Data("invalidate".utf8)), .null])),
    ]

    @Test(arguments: [1, 2, 5, 4096])
    func everyRESP3TypeParsesWhateverTheChunks(_ chunkSize: Int) throws {
        let input = Self.sample.flatMap { bytes($0.0) }
        let reader = RedisReplyReader(source: ScriptedBytes(input, chunkSize: chunkSize))
        let parsed = try Self.sample.map { _ in try reader.readReply() }
        #expect(parsed == Self.sample.map(\.1))
    }

    @Test func nanParses() throws {
        let reply = try RedisReplyReader(source: ScriptedBytes([bytes(",nan\r\n")])).readReply()
        guard case .double(let value) = reply else {
            Issue.record("not a double: \(reply)")
            return
        }
        #expect(value.isNaN)
    }

    @Test func everyTruncationFailsAsAClosedConnection() {
        // Each reply cut at each byte: never a reply, never a crash, always "closed".
        for (text, _) in Self.sample {
            let input = bytes(text)
            for cut in 0 ..< input.count {
                let error = failure(String(decoding: input[..<cut], as: UTF8.self))
                #expect(error?.code == .remoteFailure)
                #expect(error?.message.contains("closed the connection") == true, "cut at \(cut) of \(text.debugDescription)")
            }
        }
    }

    @Test(arguments: [
        ("@what\r\n", "starting with the byte 0x40"),
        ("_x\r\n", "a null with a body"),
        ("#x\r\n", "a boolean that is neither t nor f"),
        ("#tt\r\n", "a boolean that is neither t nor f"),
        (",\r\n", "a malformed double"),
        (",0x1p3\r\n", "a malformed double"),
        (",infinity\r\n", "a malformed double"),
        (",1.2.3\r\n", "a malformed double"),
        ("(\r\n", "a malformed big number"),
        ("(-\r\n", "a malformed big number"),
        ("(12a\r\n", "a malformed big number"),
        ("!-1\r\n", "a blob error of -1 bytes"),
        ("=3\r\ntxt\r\n", "a verbatim string without its format"),
        ("=5\r\ntxt-a\r\n", "a verbatim string without its format"),
        ("%-1\r\n", "a map of -1 entries"),
        ("~-1\r\n", "a set of -1 entries"),
        (">-1\r\n", "a push of -1 entries"),
        ("|-1\r\n", "an attribute of -1 entries"),
        ("!3\r\nabcXY", "not followed by CRLF"),
    ])
    func garbledRESP3RepliesThrowNamingTheFault(_ input: String, _ fault: String) {
        let error = failure(input)
        #expect(error?.code == .remoteFailure)
        #expect(error?.message.contains(fault) == true, "\(input.debugDescription): \(error?.message ?? "parsed")")
    }

    @Test func blobsOverTheLengthLimitAreRefusedBeforeAnyRead() {
        var limits = RedisReplyLimits()
        limits.maxBulkLength = 10
        #expect(failure("!11\r\n", limits: limits)?.message.contains("a blob error of 11 bytes (the limit is 10)") == true)
        #expect(failure("=11\r\n", limits: limits)?.message.contains("a verbatim string of 11 bytes (the limit is 10)") == true)
        #expect(failure("!10\r\n0123456789\r\n", limits: limits) == nil)
    }

    @Test func aggregatesOverTheCountOrDepthLimitAreRefused() {
        var limits = RedisReplyLimits()
        limits.maxArrayCount = 4
        limits.maxDepth = 3
        // A map's entries are pairs: 2 pairs fill 4 elements, a third is over.
        #expect(failure("%3\r\n", limits: limits)?.message.contains("a map of 3 entries (the limit is 2)") == true)
        #expect(failure("~5\r\n", limits: limits)?.message.contains("a set of 5 entries (the limit is 4)") == true)
        #expect(failure(">5\r\n", limits: limits)?.message.contains("a push of 5 entries (the limit is 4)") == true)
        #expect(failure("|3\r\n", limits: limits)?.message.contains("an attribute of 3 entries (the limit is 2)") == true)
        #expect(failure(">1\r\n%1\r\n~1\r\n_\r\n_\r\n", limits: limits) == nil)
        #expect(failure(">1\r\n%1\r\n_\r\n~1\r\n~0\r\n", limits: limits)?.message.contains("nested more than 3 deep") == true)
        // Mixed RESP2 and RESP3 nesting counts as one depth; the default stops a hostile stream
        // of nested headers long before the stack would.
        let deep = String(repeating: "~1\r\n*1\r\n%1\r\n_\r\n", count: 5_000) + "_\r\n"
        #expect(failure(deep)?.message.contains("nested more than 16 deep") == true)
        // A chain of attributes before one reply is bounded the same way.
        let attributes = String(repeating: "|1\r\n_\r\n_\r\n", count: 5_000) + "_\r\n"
        #expect(failure(attributes)?.message.contains("nested more than 16 deep") == true)
        #expect(failure(String(repeating: "|1\r\n_\r\n_\r\n", count: 3) + "_\r\n") == nil)
        let nestedAttributes = String(repeating: "|1\r\n", count: 5_000)
        #expect(failure(nestedAttributes)?.message.contains("nested more than 16 deep") == true)
        // A huge announced count reserves nothing: the elements that never come end the stream.
        #expect(failure("%8388608\r\n:1\r\n")?.message.contains("closed the connection") == true)
        #expect(failure("%8388609\r\n")?.message.contains("the limit is 8388608") == true)
    }
}
