import Foundation
import Larder

// The RESP3 types a connection that said `HELLO 3` receives, under the same bounds as RESP2's:
// a blob's length by `maxBulkLength`, an aggregate's elements by `maxArrayCount`, its nesting by
// `maxDepth`, every line by `maxLineLength`.
extension RedisReplyReader {
    /// The reply of a RESP3 type byte, whose line's rest is `body` (valid until the next read).
    /// - Throws: ``CacheError/Code/remoteFailure`` naming what broke the protocol or a limit,
    ///   an unknown type byte included.
    func resp3Reply(type: UInt8, body: UnsafeRawBufferPointer.SubSequence, depth: Int) throws(CacheError) -> RedisReply {
        switch type {
        case UInt8(ascii: "_"):
            guard body.isEmpty else { throw Self.protocolError("a null with a body") }
            return .null
        case UInt8(ascii: "#"):
            switch Array(body) {
            case [UInt8(ascii: "t")]: return .boolean(true)
            case [UInt8(ascii: "f")]: return .boolean(false)
            default: throw Self.protocolError("a boolean that is neither t nor f")
            }
        case UInt8(ascii: ","):
            return .double(try Self.double(body))
        case UInt8(ascii: "("):
            return .bigNumber(try Self.bigNumber(body))
        case UInt8(ascii: "!"):
            return .error(String(decoding: try blob(body, what: "a blob error"), as: UTF8.self))
        case UInt8(ascii: "="):
            let blob = try blob(body, what: "a verbatim string")
            guard blob.count >= 4, blob[blob.startIndex + 3] == UInt8(ascii: ":") else {
                throw Self.protocolError("a verbatim string without its format")
            }
            let format = String(decoding: blob.prefix(3), as: UTF8.self)
            return .verbatim(format: format, text: Data(blob.dropFirst(4)))
        case UInt8(ascii: "%"):
            let count = try aggregateCount(body, what: "a map", perElement: 2, depth: depth)
            return .map(try elements(count * 2, depth: depth))
        case UInt8(ascii: "~"):
            return .set(try elements(try aggregateCount(body, what: "a set", perElement: 1, depth: depth), depth: depth))
        case UInt8(ascii: ">"):
            return .push(try elements(try aggregateCount(body, what: "a push", perElement: 1, depth: depth), depth: depth))
        case UInt8(ascii: "|"):
            // Attributes describe the reply that follows them; nothing here asks for them, so
            // they are read (within the limits) and dropped. The reply counts one level deeper,
            // so that a chain of attributes is bounded by the depth limit, as nesting is.
            let count = try aggregateCount(body, what: "an attribute", perElement: 2, depth: depth)
            _ = try elements(count * 2, depth: depth)
            return try reply(depth: depth + 1)
        default:
            throw Self.protocolError("a reply starting with the byte 0x\(String(type, radix: 16))")
        }
    }

    /// A blob's bytes, whose length is `body`.
    private func blob(_ body: UnsafeRawBufferPointer.SubSequence, what: String) throws(CacheError) -> Data {
        let length = try Self.integer(body)
        guard length >= 0, length <= limits.maxBulkLength else {
            throw Self.protocolError("\(what) of \(length) bytes (the limit is \(limits.maxBulkLength))")
        }
        return try readBulk(Int(length))
    }

    /// The number of entries an aggregate header `body` announces, each of `perElement` replies,
    /// checked against the element and depth limits.
    private func aggregateCount(
        _ body: UnsafeRawBufferPointer.SubSequence, what: String, perElement: Int, depth: Int
    ) throws(CacheError) -> Int {
        let count = try Self.integer(body)
        let limit = limits.maxArrayCount / perElement
        guard count >= 0, count <= limit else {
            throw Self.protocolError("\(what) of \(count) entries (the limit is \(limit))")
        }
        guard depth < limits.maxDepth else {
            throw Self.protocolError("aggregates nested more than \(limits.maxDepth) deep")
        }
        return Int(count)
    }

    /// `count` replies, one level deeper; storage grows as they arrive, not as announced.
    private func elements(_ count: Int, depth: Int) throws(CacheError) -> [RedisReply] {
        var elements: [RedisReply] = []
        elements.reserveCapacity(min(count, 1024))
        for _ in 0 ..< count { elements.append(try reply(depth: depth + 1)) }
        return elements
    }

    /// A RESP3 double: `inf`, `-inf`, `nan`, or a decimal with an optional exponent.
    static func double(_ bytes: UnsafeRawBufferPointer.SubSequence) throws(CacheError) -> Double {
        let text = String(decoding: bytes, as: UTF8.self)
        switch text {
        case "inf": return .infinity
        case "-inf": return -.infinity
        case "nan": return .nan
        default: break
        }
        // `Double(_:)` alone would also take hexadecimal and spelled-out words.
        let allowed = bytes.allSatisfy { byte in
            (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
        }
        guard allowed, let value = Double(text) else { throw protocolError("a malformed double") }
        return value
    }

    /// A RESP3 big number: an optional minus sign, then decimal digits.
    static func bigNumber(_ bytes: UnsafeRawBufferPointer.SubSequence) throws(CacheError) -> String {
        let digits = bytes.first == UInt8(ascii: "-") ? bytes.dropFirst() : bytes[...]
        guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains($0) }) else {
            throw protocolError("a malformed big number")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
