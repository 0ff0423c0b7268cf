import Foundation
import Larder

/// Reads RESP2 replies (and RESP3's, `RedisReplyReader+RESP3.swift`) from a byte source, one at a time, through a buffer of its own.
///
/// Lines (types, lengths, simple strings) are parsed in the buffer. A bulk string is copied once:
/// out of the buffer when it arrived whole or is small (up to a quarter of the buffer: it is
/// gathered there), else what arrived is copied and the rest is read straight into the `Data` it
/// becomes, which grows as bytes arrive, not as the announced length
/// says. So what a reply makes the reader allocate is bounded by ``RedisReplyLimits`` and by what
/// the server actually sent, never by a length it merely claimed.
///
/// Any failure (of the source, or a reply that breaks the protocol or the limits) leaves the
/// stream at an unknown place: the reader is then unusable, and its owner discards it.
final class RedisReplyReader<Source: RedisByteSource> {
    /// Where the bytes come from.
    let source: Source
    /// What a reply may make the reader allocate.
    let limits: RedisReplyLimits
    /// The bytes read and not yet parsed are `buffer[start ..< end]`.
    private var buffer: UnsafeMutableRawBufferPointer
    private var start = 0
    private var end = 0

    /// The buffer's first size: one read takes a 4 KiB value and its header, and a dozen such
    /// replies of an `MGET` or a pipeline.
    static var initialCapacity: Int { 64 * 1024 }

    /// A reader of `source`'s bytes, within `limits`.
    init(source: Source, limits: RedisReplyLimits = RedisReplyLimits()) {
        self.source = source
        self.limits = limits
        buffer = .allocate(byteCount: Self.initialCapacity, alignment: 16)
    }

    deinit {
        buffer.deallocate()
    }

    /// Whether bytes that no reply has taken yet are buffered.
    var hasBufferedBytes: Bool { start < end }

    /// Reads the next reply, waiting for its bytes.
    /// - Throws: ``CacheError/Code/remoteFailure`` when the source fails or ends, or when the
    ///   bytes are not a reply within the limits.
    func readReply() throws(CacheError) -> RedisReply {
        try reply(depth: 0)
    }

    func reply(depth: Int) throws(CacheError) -> RedisReply {
        let line = try readLine()
        guard let type = line.first else { throw Self.protocolError("an empty line where a reply starts") }
        let body = line.dropFirst()
        switch type {
        case UInt8(ascii: "+"): return .status(String(decoding: body, as: UTF8.self))
        case UInt8(ascii: "-"): return .error(String(decoding: body, as: UTF8.self))
        case UInt8(ascii: ":"): return .integer(try Self.integer(body))
        case UInt8(ascii: "$"):
            let length = try Self.integer(body)
            if length == -1 { return .null }
            guard length >= 0, length <= limits.maxBulkLength else {
                throw Self.protocolError("a bulk string of \(length) bytes (the limit is \(limits.maxBulkLength))")
            }
            return .string(try readBulk(Int(length)))
        case UInt8(ascii: "*"):
            let count = try Self.integer(body)
            if count == -1 { return .null }
            guard count >= 0, count <= limits.maxArrayCount else {
                throw Self.protocolError("an array of \(count) elements (the limit is \(limits.maxArrayCount))")
            }
            guard depth < limits.maxDepth else {
                throw Self.protocolError("arrays nested more than \(limits.maxDepth) deep")
            }
            // Reserved for what a small reply needs; a long array grows as its elements arrive.
            var elements: [RedisReply] = []
            elements.reserveCapacity(min(Int(count), 1024))
            for _ in 0 ..< count { elements.append(try reply(depth: depth + 1)) }
            return .array(elements)
        default:
            return try resp3Reply(type: type, body: body, depth: depth)
        }
    }

    /// The next line, without its CRLF; consumed. The bytes stay valid until the next read.
    func readLine() throws(CacheError) -> UnsafeRawBufferPointer {
        var scanned = start
        while true {
            // A line ends at the first "\r\n"; a lone "\r" or "\n" inside it is a protocol error.
            while scanned < end, scanned - start <= limits.maxLineLength {
                let byte = buffer[scanned]
                if byte == UInt8(ascii: "\r") {
                    if scanned + 1 == end { break }
                    guard buffer[scanned + 1] == UInt8(ascii: "\n") else {
                        throw Self.protocolError("a carriage return not followed by a line feed")
                    }
                    let line = UnsafeRawBufferPointer(rebasing: buffer[start ..< scanned])
                    start = scanned + 2
                    return line
                }
                guard byte != UInt8(ascii: "\n") else { throw Self.protocolError("a line feed without a carriage return") }
                scanned += 1
            }
            guard scanned - start <= limits.maxLineLength else {
                throw Self.protocolError("a line longer than \(limits.maxLineLength) bytes")
            }
            let offset = scanned - start
            try fill()
            scanned = start + offset
        }
    }

    /// A bulk string's `length` bytes and its CRLF; consumed.
    func readBulk(_ length: Int) throws(CacheError) -> Data {
        // A value that fits the buffer a few times over is gathered there, each read taking what
        // has arrived (the values after it too): the replies of an `MGET` or a pipeline then
        // cost a read for many values, not one or two for each.
        if length + 2 <= buffer.count / 4 {
            while end - start < length + 2 {
                if buffer.count - start < length + 2 { compact() }
                try fill()
            }
        }
        let buffered = end - start
        if buffered >= length + 2 {
            let data = Data(bytes: buffer.baseAddress! + start, count: length)
            start += length
            try expectCRLF()
            return data
        }
        // What arrived, then the rest read straight into the value. The value grows by doubling
        // from what arrived (or 64 KiB), so a length the server announces but never sends costs
        // at most twice what it did send.
        let taken = min(buffered, length)
        var data = Data(count: min(length, max(taken, 64 * 1024)))
        data.withUnsafeMutableBytes { target in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[start ..< start + taken]))
        }
        var filled = taken
        start += taken
        while filled < length {
            if filled == data.count { data.count = min(length, data.count * 2) }
            let capacity = data.count
            let received = try data.withUnsafeMutableBytes { target in
                Result { () throws(CacheError) in
                    try source.read(into: UnsafeMutableRawBufferPointer(rebasing: target[filled ..< capacity]))
                }
            }.get()
            guard received > 0 else { throw Self.closedError }
            filled += received
        }
        try expectCRLF()
        return data
    }

    /// Consumes the CRLF that ends a bulk string.
    private func expectCRLF() throws(CacheError) {
        while end - start < 2 { try fill() }
        guard buffer[start] == UInt8(ascii: "\r"), buffer[start + 1] == UInt8(ascii: "\n") else {
            throw Self.protocolError("a bulk string not followed by CRLF")
        }
        start += 2
    }

    /// Moves the unparsed bytes to the front of the buffer.
    private func compact() {
        let count = end - start
        if count > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: count) }
        start = 0
        end = count
    }

    /// Reads more bytes after `end`: moves the unparsed bytes to the front first, and grows the
    /// buffer when they fill it (a line, bounded by the caller, is all it ever holds then).
    private func fill() throws(CacheError) {
        if start == end {
            start = 0
            end = 0
        } else if end == buffer.count {
            if start > 0 {
                let count = end - start
                buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: count)
                start = 0
                end = count
            } else {
                let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 16)
                larger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: end)
                buffer.deallocate()
                buffer = larger
            }
        }
        let received = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]))
        guard received > 0 else { throw Self.closedError }
        end += received
    }

    /// A decimal integer, with an optional minus sign, that fits an `Int64`.
    static func integer(_ bytes: UnsafeRawBufferPointer.SubSequence) throws(CacheError) -> Int64 {
        var digits = bytes[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.count <= 19 else { throw protocolError("a malformed integer") }
        // Accumulated with the sign, so that Int64.min, whose magnitude no Int64 holds, parses.
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw protocolError("a malformed integer") }
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { throw protocolError("an integer out of range") }
            value = next
        }
        return value
    }

    private static var closedError: CacheError {
        CacheError(.remoteFailure, "the Redis server closed the connection")
    }

    static func protocolError(_ what: String) -> CacheError {
        CacheError(.remoteFailure, "Redis sent something that is not a RESP reply: \(what)")
    }
}
