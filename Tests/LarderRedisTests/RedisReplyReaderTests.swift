import Foundation
import Larder
import LarderTestSupport
import Synchronization
import Testing

@testable import LarderRedis

/// Bytes handed to a reader in the chunks a test chooses, then the end of the stream; records
/// the largest buffer the reader offered, which bounds what it allocated for a value.
final class ScriptedBytes: RedisByteSource {
    private var chunks: [[UInt8]]
    private(set) var largestOffer = 0

    init(_ chunks: [[UInt8]]) { self.chunks = chunks.reversed() }

    /// `bytes` cut into chunks of `size` bytes.
    convenience init(_ bytes: [UInt8], chunkSize size: Int) {
        self.init(stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0 ..< min($0 + size, bytes.count)]) })
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(CacheError) -> Int {
        largestOffer = max(largestOffer, buffer.count)
        guard var chunk = chunks.popLast() else { return 0 }
        let count = min(chunk.count, buffer.count)
        buffer.copyBytes(from: chunk[..<count])
        if count < chunk.count {
            chunk.removeFirst(count)
            chunks.append(chunk)
        }
        return count
    }
}

/// The reply parser, on scripted bytes: no server needed.
@Suite struct RedisReplyReaderTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Every reply of `input`, read until the stream ends.
    func replies(_ source: ScriptedBytes, count: Int, limits: RedisReplyLimits = RedisReplyLimits()) throws -> [RedisReply] {
        let reader = RedisReplyReader(source: source, limits: limits)
        return try (0 ..< count).map { _ in try reader.readReply() }
    }

    /// The error reading one reply of `input` throws, or `nil` when it parses.
    func failure(_ input: [UInt8], limits: RedisReplyLimits = RedisReplyLimits()) -> CacheError? {
        do {
            _ = try RedisReplyReader(source: ScriptedBytes([input]), limits: limits).readReply()
            return nil
        } catch {
            return error
        }
    }

    /// A reply of every kind, nested, with a binary value holding CR, LF and zeros.
    static let binary = Data([0, 13, 10, 36, 42, 255, 13, 10])
    static let sample: [(String, RedisReply)] = [
        ("+OK\r\n", .status("OK")),
        ("-ERR wrong type\r\n", .error("ERR wrong type")),
        (":0\r\n", .integer(0)),
        (":-9223372036854775808\r\n", .integer(.min)),
        (":9223372036854775807\r\n", .integer(.max)),
        ("$0\r\n\r\n", .string(Data())),
        ("$-1\r\n", .null),
        ("*-1\r\n", .null),
        ("*0\r\n", .array([])),
        ("$8\r\n\u{0}\r\n$*\u{FF}\r\n\r\n", .string(binary)),
        (
            "*3\r\n$5\r\nhello\r\n*2\r\n:1\r\n*1\r\n$-1\r\n+x\r\n",
            .array([.string(Data("hello".utf8)), .array([.integer(1), .array([.null])]), .status("x")])
        ),
    ]

    /// The sample's bytes (the binary value written as its bytes, not as UTF-8 text).
    static var sampleBytes: [UInt8] {
        sample.flatMap { text, _ in
            text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
        }
    }

    @Test(arguments: [1, 2, 3, 7, 4096])
    func everyKindParsesWhateverTheChunks(_ chunkSize: Int) throws {
        let parsed = try replies(ScriptedBytes(Self.sampleBytes, chunkSize: chunkSize), count: Self.sample.count)
        #expect(parsed == Self.sample.map(\.1))
    }

    @Test func seededRandomChunksParseTheSame() throws {
        var generator = SplitMix64(seed: 44)
        let input = Self.sampleBytes
        for _ in 0 ..< 50 {
            var chunks: [[UInt8]] = []
            var offset = 0
            while offset < input.count {
                let size = Int.random(in: 1 ... 40, using: &generator)
                chunks.append(Array(input[offset ..< min(offset + size, input.count)]))
                offset += size
            }
            #expect(try replies(ScriptedBytes(chunks), count: Self.sample.count) == Self.sample.map(\.1))
        }
    }

    @Test func everyTruncationFailsAsAClosedConnection() {
        let input = Self.sampleBytes
        // Each reply cut at each byte: never a reply, never a crash, always "closed".
        var offset = 0
        for (text, _) in Self.sample {
            let length = text.unicodeScalars.count
            for cut in 0 ..< length {
                let error = failure(Array(input[offset ..< offset + cut]))
                #expect(error?.code == .remoteFailure)
                #expect(error?.message.contains("closed the connection") == true, "cut at \(cut) of \(text.debugDescription)")
            }
            offset += length
        }
    }

    @Test(arguments: [
        ("?what\r\n", "starting with the byte 0x3f"),
        ("\r\n", "an empty line"),
        (":12a\r\n", "malformed integer"),
        (":\r\n", "malformed integer"),
        (":-\r\n", "malformed integer"),
        (":9223372036854775808\r\n", "out of range"),
        ("$abc\r\n", "malformed integer"),
        ("$-2\r\n", "a bulk string of -2 bytes"),
        ("*-5\r\n", "an array of -5 elements"),
        ("$3\r\nabcXY", "not followed by CRLF"),
        ("+OK\n", "a line feed without a carriage return"),
        ("+OK\rX\r\n", "a carriage return not followed by a line feed"),
    ])
    func garbledRepliesThrowNamingTheFault(_ input: String, _ fault: String) {
        let error = failure(bytes(input))
        #expect(error?.code == .remoteFailure)
        #expect(error?.message.contains(fault) == true, "\(input.debugDescription): \(error?.message ?? "parsed")")
    }

    @Test func aBulkLengthOverTheLimitIsRefusedBeforeAnyRead() {
        // Redis's own 512 MiB is the default; one byte more is refused from the header alone.
        let source = ScriptedBytes([bytes("$536870913\r\n")])
        #expect(RedisReplyLimits().maxBulkLength == 536_870_912)
        #expect(RedisReplyLimits().maxLineLength == 65536)
        #expect(throws: CacheError.self) { try RedisReplyReader(source: source).readReply() }
        #expect(source.largestOffer == RedisReplyReader<ScriptedBytes>.initialCapacity)
        let error = failure(bytes("$536870913\r\n"))
        #expect(error?.message.contains("a bulk string of 536870913 bytes (the limit is 536870912)") == true)
    }

    @Test func aLengthClaimedButNotSentCostsWhatArrivedNotWhatWasClaimed() {
        // 500 MiB announced, 10 bytes sent, then the end: the value grew to 64 KiB at most.
        let source = ScriptedBytes([bytes("$524288000\r\n0123456789")])
        #expect(throws: CacheError.self) { try RedisReplyReader(source: source).readReply() }
        #expect(source.largestOffer <= 64 * 1024)
    }

    @Test func arraysOverTheCountOrDepthLimitAreRefused() {
        var limits = RedisReplyLimits()
        limits.maxArrayCount = 3
        limits.maxDepth = 4
        #expect(failure(bytes("*4\r\n"), limits: limits)?.message.contains("an array of 4 elements (the limit is 3)") == true)
        #expect(failure(bytes("*1\r\n*1\r\n*1\r\n*0\r\n"), limits: limits) == nil)
        #expect(failure(bytes("*1\r\n*1\r\n*1\r\n*1\r\n*0\r\n"), limits: limits)?.message.contains("nested more than 4 deep") == true)
        // The default depth stops a hostile stream of nested headers long before the stack would.
        let deep = bytes(String(repeating: "*1\r\n", count: 10_000) + "*0\r\n")
        #expect(failure(deep)?.message.contains("nested more than 16 deep") == true)
        // A huge announced count reserves nothing: the elements that never come end the stream.
        #expect(failure(bytes("*16777216\r\n:1\r\n"))?.message.contains("closed the connection") == true)
        #expect(failure(bytes("*16777217\r\n"))?.message.contains("the limit is 16777216") == true)
    }

    @Test func aLineOverTheLimitIsRefusedAndOneUnderItParses() throws {
        var limits = RedisReplyLimits()
        limits.maxLineLength = 40 * 1024
        let long = String(repeating: "a", count: 30 * 1024)
        // Longer than the first buffer: the buffer grows to hold it.
        #expect(try replies(ScriptedBytes(bytes("+\(long)\r\n"), chunkSize: 1000), count: 1, limits: limits) == [.status(long)])
        let tooLong = String(repeating: "a", count: 50 * 1024)
        #expect(failure(bytes("+\(tooLong)\r\n"), limits: limits)?.message.contains("a line longer than 40960 bytes") == true)
    }

    @Test(arguments: [1 << 20, 5 << 20 + 3])
    func aLargeValueArrivingInPiecesIsReadWhole(_ size: Int) throws {
        var generator = SplitMix64(seed: UInt64(size))
        let value = (0 ..< size).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        let input = bytes("$\(size)\r\n") + value + bytes("\r\n:7\r\n")
        let parsed = try replies(ScriptedBytes(input, chunkSize: 10_007), count: 2)
        #expect(parsed == [.string(Data(value)), .integer(7)])
    }

    @Test func pipelinedRepliesInOneReadComeOutInOrder() throws {
        let input = bytes("+OK\r\n$1\r\nv\r\n$-1\r\n:3\r\n")
        let source = ScriptedBytes([input])
        let reader = RedisReplyReader(source: source)
        #expect(try reader.readReply() == .status("OK"))
        #expect(reader.hasBufferedBytes)
        #expect(try [reader.readReply(), reader.readReply(), reader.readReply()] == [.string(Data("v".utf8)), .null, .integer(3)])
        #expect(!reader.hasBufferedBytes)
    }

    @Test func commandsAreWrittenInRESP() {
        var arguments = RedisArguments(["SET", "k"])
        arguments.append(Data([0, 13, 10]))
        arguments.insert(Data("x".utf8), at: 1)
        var output: [UInt8] = []
        arguments.encode(into: &output)
        #expect(output == bytes("*4\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\nk\r\n$3\r\n") + [0, 13, 10] + bytes("\r\n"))
        #expect(arguments.name == "SET")
        for value in [0, 9, 10, 99, 100, 12_345, Int.max] {
            var digits: [UInt8] = []
            RESPEncoding.appendDecimal(value, to: &digits)
            #expect(String(decoding: digits, as: UTF8.self) == String(value))
        }
    }
}
