import Foundation

/// A command's arguments, gathered in one buffer: what hiredis's `...Argv` calls take (binary
/// safe, each argument with its length).
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

    /// Calls `body` with hiredis's `argc`, `argv` and `argvlen`.
    func withArgv<T>(_ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> T) -> T {
        // Arguments that are all empty still need an address.
        let joined = bytes.isEmpty ? [0] : bytes
        return joined.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            var pointers: [UnsafePointer<CChar>?] = []
            pointers.reserveCapacity(lengths.count)
            var offset = 0
            for length in lengths {
                pointers.append((base + offset).assumingMemoryBound(to: CChar.self))
                offset += length
            }
            return body(Int32(lengths.count), &pointers, lengths)
        }
    }
}
