/// CacheHandler's disk format, as its `saveResponseToDisk` writes it: one file per key in
/// `Caches/URLCache/` (and the same shape in the bundle's `PreloadedCache/`), named by the
/// lowercase hex SHA-256 of the key's UTF-8, holding the JSON text `{"response": <value>}`
/// (`JSONSerialization`), and read back for 6 days after the file's modification time.
///
/// Only the bytes are judged here; reading the files is ``CacheHandlerFolder``'s.
package enum CacheHandlerFormat {
    /// How long CacheHandler serves a file after its modification time: 6 days (518,400 s), its
    /// fixed `diskCacheExpiration`.
    package static let expiration: UInt64 = 6 * 24 * 60 * 60

    /// Bytes a file may hold around its response value (`{"response":` and `}`, and whitespace
    /// in hand-written files) on top of the largest payload accepted.
    package static let wrapperAllowance = 4096

    /// The deepest nesting of arrays and objects accepted: 512, `JSONSerialization`'s limit.
    package static let maximumDepth = 512

    /// Whether `name` is what CacheHandler names a file: 64 lowercase hex digits. A file with any
    /// other name cannot be found by key, and is not an entry.
    package static func isEntryName(_ name: String) -> Bool {
        let utf8 = name.utf8
        return utf8.count == 64 && utf8.allSatisfy { (0x30 ... 0x39).contains($0) || (0x61 ... 0x66).contains($0) }
    }

    /// What a file's bytes hold.
    package enum Contents: Equatable {
        /// The byte range of the top-level `"response"` member's value (the last one, when the
        /// object repeats the name, as `JSONSerialization` keeps the last).
        case response(Range<Int>)
        /// Valid JSON, but not an object with a `"response"` member.
        case noResponse
        /// Not JSON: not UTF-8, or not a JSON text by RFC 8259's grammar.
        case notJSON
    }

    /// Validates `bytes` as one JSON text and finds the value of its top-level `"response"` member.
    ///
    /// The text is what both RFC 8259 and `JSONSerialization` (CacheHandler's reader) accept:
    /// UTF-8 (an optional byte order mark), no trailing commas, no unpaired surrogate escapes, no
    /// number beyond `Double`'s range, and at most ``maximumDepth`` nested arrays and objects.
    /// The scan is iterative and allocates one byte per open container at most.
    /// - Complexity: O(*n*) in the number of bytes.
    package static func contents(of bytes: UnsafeRawBufferPointer) -> Contents {
        // Outside strings the grammar allows ASCII only, so one pass over the whole text checks
        // the UTF-8 inside strings.
        guard !transcode(bytes.makeIterator(), from: UTF8.self, to: UTF32.self, stoppingOnError: true, into: { _ in }) else {
            return .notJSON
        }
        var scanner = JSONScanner(bytes: bytes)
        return scanner.scanDocument()
    }
}

/// An RFC 8259 validator that also notes where the top-level object's `"response"` value lies.
private struct JSONScanner {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    /// The containers open around the current position: `true` for an object, `false` for an array.
    private var open: [Bool] = []

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    mutating func scanDocument() -> CacheHandlerFormat.Contents {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        let topIsObject = current == UInt8(ascii: "{")
        var response: Range<Int>?
        // Where the value of a top-level "response" member starts, while it is being scanned.
        var responseStart: Int?
        var capturesNext = false

        // Each turn scans one value; containers push and continue with their first element.
        scanning: while true {
            skipWhitespace()
            if capturesNext {
                responseStart = index
                capturesNext = false
            }
            guard let byte = current else { return .notJSON }
            switch byte {
            case UInt8(ascii: "{"):
                index += 1
                open.append(true)
                guard open.count <= CacheHandlerFormat.maximumDepth else { return .notJSON }
                skipWhitespace()
                if current == UInt8(ascii: "}") {
                    index += 1
                    open.removeLast()
                } else {
                    guard let isResponse = scanMemberName() else { return .notJSON }
                    capturesNext = isResponse && open.count == 1
                    continue scanning
                }
            case UInt8(ascii: "["):
                index += 1
                open.append(false)
                guard open.count <= CacheHandlerFormat.maximumDepth else { return .notJSON }
                skipWhitespace()
                if current == UInt8(ascii: "]") {
                    index += 1
                    open.removeLast()
                } else {
                    continue scanning
                }
            case UInt8(ascii: "\""):
                guard scanString() != nil else { return .notJSON }
            case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"):
                guard scanNumber() else { return .notJSON }
            case UInt8(ascii: "t"):
                guard scanLiteral("true") else { return .notJSON }
            case UInt8(ascii: "f"):
                guard scanLiteral("false") else { return .notJSON }
            case UInt8(ascii: "n"):
                guard scanLiteral("null") else { return .notJSON }
            default:
                return .notJSON
            }
            // A value ended; close every container that ends with it.
            while true {
                if open.count == 1, let start = responseStart {
                    response = start ..< index
                    responseStart = nil
                }
                skipWhitespace()
                guard let isObject = open.last else {
                    // The top-level value ended: nothing but whitespace may follow.
                    guard index == bytes.count else { return .notJSON }
                    break scanning
                }
                switch current {
                case UInt8(ascii: ","):
                    index += 1
                    if isObject {
                        skipWhitespace()
                        guard let isResponse = scanMemberName() else { return .notJSON }
                        capturesNext = isResponse && open.count == 1
                    }
                    continue scanning
                case UInt8(ascii: "}") where isObject, UInt8(ascii: "]") where !isObject:
                    index += 1
                    open.removeLast()
                default:
                    return .notJSON
                }
            }
        }
        guard topIsObject, let response else { return .noResponse }
        return .response(response)
    }

    /// Scans `"name" :` in an object; returns whether the name is `response`, `nil` when invalid.
    private mutating func scanMemberName() -> Bool? {
        guard current == UInt8(ascii: "\""), let name = scanString() else { return nil }
        skipWhitespace()
        guard current == UInt8(ascii: ":") else { return nil }
        index += 1
        return Self.spellsResponse(UnsafeRawBufferPointer(rebasing: bytes[name]))
    }

    /// Scans a string starting at its opening quote; returns the range between the quotes.
    private mutating func scanString() -> Range<Int>? {
        index += 1
        let start = index
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return start ..< index - 1
            case UInt8(ascii: "\\"):
                index += 1
                guard let escaped = current else { return nil }
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 1
                case UInt8(ascii: "u"):
                    guard let unit = scanEscapedUnit() else { return nil }
                    if (0xDC00 ... 0xDFFF).contains(unit) { return nil }
                    if (0xD800 ... 0xDBFF).contains(unit) {
                        // A high surrogate must be followed by an escaped low one.
                        guard current == UInt8(ascii: "\\") else { return nil }
                        index += 1
                        guard current == UInt8(ascii: "u"), let low = scanEscapedUnit(), (0xDC00 ... 0xDFFF).contains(low) else {
                            return nil
                        }
                    }
                default:
                    return nil
                }
            case 0x00 ..< 0x20:
                return nil
            default:
                index += 1
            }
        }
        return nil
    }

    /// Scans the `uXXXX` of an escape (at the `u`); returns the code unit.
    private mutating func scanEscapedUnit() -> UInt32? {
        index += 1
        var unit: UInt32 = 0
        for _ in 0 ..< 4 {
            guard let digit = current, let value = Self.hexValue(digit) else { return nil }
            unit = unit << 4 | value
            index += 1
        }
        return unit
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, within `Double`'s range.
    private mutating func scanNumber() -> Bool {
        let start = index
        guard scanNumberGrammar() else { return false }
        // Only an exponent or more than 308 digits can overflow; JSONSerialization refuses those numbers.
        let token = UnsafeRawBufferPointer(rebasing: bytes[start ..< index])
        guard token.contains(UInt8(ascii: "e")) || token.contains(UInt8(ascii: "E")) || token.count > 308 else { return true }
        return Double(String(decoding: token, as: UTF8.self))?.isFinite ?? false
    }

    private mutating func scanNumberGrammar() -> Bool {
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, Self.isDigit(first) else { return false }
        index += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let digit = current, Self.isDigit(digit) else { return false }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let digit = current, Self.isDigit(digit) else { return false }
            skipDigits()
        }
        return true
    }

    private mutating func skipDigits() {
        while let byte = current, Self.isDigit(byte) { index += 1 }
    }

    private mutating func scanLiteral(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0 ..< count where bytes[index + offset] != literal.utf8Start[offset] { return false }
        index += count
        return true
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30 ... 0x39).contains(byte) }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30 ... 0x39: UInt32(byte - 0x30)
        case 0x41 ... 0x46: UInt32(byte - 0x41 + 10)
        case 0x61 ... 0x66: UInt32(byte - 0x61 + 10)
        default: nil
        }
    }

    /// Whether the raw (still escaped, already validated) bytes of a member name decode to
    /// `response`. Each of its letters is either itself or a `\uXXXX` escape of it.
    private static func spellsResponse(_ raw: UnsafeRawBufferPointer) -> Bool {
        let target = Array("response".utf8)
        var matched = 0
        var i = 0
        while i < raw.count {
            var unit = UInt32(raw[i])
            if raw[i] == UInt8(ascii: "\\") {
                // Only `\uXXXX` can spell a letter; every other escape is punctuation.
                guard i + 5 < raw.count, raw[i + 1] == UInt8(ascii: "u") else { return false }
                unit = 0
                for k in 2 ... 5 { unit = unit << 4 | (hexValue(raw[i + k]) ?? 0) }
                i += 6
            } else {
                i += 1
            }
            guard matched < target.count, unit == UInt32(target[matched]) else { return false }
            matched += 1
        }
        return matched == target.count
    }
}
