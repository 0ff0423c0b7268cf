import Foundation

/// A command's arguments, gathered in one buffer, each with its length (binary safe), until
/// ``encode(into:)`` writes them in RESP2.
struct RedisArguments: Sendable {
    /// The arguments, one after the other.
    private var bytes: [UInt8] = []
    /// Each argument's length, in order.
    private var lengths: [Int] = []

    /// The arguments `strings`, as UTF-8.
    init(_ strings: [String]) {
        lengths.reserveCapacity(strings.count + 1)
        bytes.reserveCapacity(strings.reduce(1) { $0 + $1.utf8.count })
        for string in strings { append(string) }
    }

    /// How many arguments there are.
    var count: Int { lengths.count }

    /// The command's name (its first argument), for messages: never the others, which may be
    /// secrets (`AUTH`) or payloads.
    var name: String { String(decoding: bytes.prefix(lengths.first ?? 0), as: UTF8.self) }

    /// Adds `string`, as UTF-8.
    mutating func append(_ string: String) {
        bytes.append(contentsOf: string.utf8)
        lengths.append(string.utf8.count)
    }

    /// Adds `data` as it is.
    mutating func append(_ data: Data) {
        bytes.append(contentsOf: data)
        lengths.append(data.count)
    }

    /// Adds `data` before the argument at `index` (or at the end).
    mutating func insert(_ data: Data, at index: Int) {
        let offset = lengths.prefix(index).reduce(0, +)
        bytes.insert(contentsOf: data, at: offset)
        lengths.insert(data.count, at: min(index, lengths.count))
    }

    /// Appends the command in RESP2 to `output`: an array of bulk strings, each prefixed with
    /// its length, so that any bytes (binary values, keys with spaces) go through as they are.
    func encode(into output: inout [UInt8]) {
        output.reserveCapacity(output.count + bytes.count + 16 * (lengths.count + 1))
        RESPEncoding.appendHeader(UInt8(ascii: "*"), lengths.count, to: &output)
        var offset = 0
        for length in lengths {
            RESPEncoding.appendHeader(UInt8(ascii: "$"), length, to: &output)
            output.append(contentsOf: bytes[offset ..< offset + length])
            output.append(contentsOf: RESPEncoding.crlf)
            offset += length
        }
    }
}

/// The pieces of RESP2 a command is written with.
enum RESPEncoding {
    static let crlf: [UInt8] = [13, 10]

    /// Appends `type`, `value` in decimal and CRLF: an array's or a bulk string's header.
    static func appendHeader(_ type: UInt8, _ value: Int, to output: inout [UInt8]) {
        output.append(type)
        appendDecimal(value, to: &output)
        output.append(13)
        output.append(10)
    }

    /// Appends `value` (at least 0) in decimal, without making a `String`: the digits are
    /// appended lowest first, then turned around in place.
    static func appendDecimal(_ value: Int, to output: inout [UInt8]) {
        let start = output.count
        var rest = value
        repeat {
            output.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        output[start...].reverse()
    }
}
