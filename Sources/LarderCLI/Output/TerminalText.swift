/// Text that is safe to write to a terminal: the tool's own words and layout as written, and every
/// value that came from outside (keys, file names, paths, payload previews, metadata, error
/// messages) with its control characters written as visible escapes.
///
/// A cache folder is a trust boundary: a key or file name can hold `ESC ] 52 ; c ; … BEL` (which
/// asks the terminal to replace the clipboard), cursor moves, or a newline followed by a forged
/// table row. ``CommandIO/out(_:)`` and ``CommandIO/err(_:)`` take only this type, and a string
/// literal converts to it with each interpolated value escaped, so
/// `io.out("removed '\(key)'\n")` is safe as written: the literal's `\n` is the tool's own, the
/// key's is not. Text that is safe by construction (help, JSON from ``JSONValue``, rendered
/// tables) is wrapped with ``init(verbatim:)``.
///
/// The escapes (``escaped(_:)``):
/// - `\\` for a backslash, so that every escape below is unambiguous;
/// - `\n`, `\r`, `\t`, `\e` (ESC), and `\xHH` for the other C0 controls and DEL, each one byte;
/// - `\u{H…}`, the scalar's hex value as in a Swift literal (`\u{85}`, `\u{202E}`), for C1
///   controls (U+0080–U+009F; some terminals read U+009B as CSI), the Unicode line and paragraph
///   separators (U+2028, U+2029), and the bidirectional marks, embeddings, overrides and isolates
///   (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which reorder what follows them;
/// - `\xHH` for each byte that is not UTF-8, by ``escaped(utf8:)``.
///
/// Everything else, including accented letters, CJK, emoji and the joiners inside emoji, stays as
/// it is.
struct TerminalText: Sendable, Hashable, CustomStringConvertible {
    /// The text to write.
    let text: String

    /// Text written as is: only for text the tool composed from safe parts.
    init(verbatim text: String) { self.text = text }

    var description: String { text }

    /// Joins two safe texts.
    static func + (lhs: TerminalText, rhs: TerminalText) -> TerminalText {
        TerminalText(verbatim: lhs.text + rhs.text)
    }

    /// Whether a scalar may be written to a terminal as it is.
    static func isSafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00 ... 0x1F, 0x7F ... 0x9F: false  // C0, DEL, C1
        case 0x061C, 0x200E, 0x200F, 0x2028 ... 0x202E, 0x2066 ... 0x2069: false  // line breaks and bidi controls
        default: true
        }
    }

    /// `text` with every character that could move the cursor, change the terminal's state, end a
    /// line or reorder the text after it written as a visible escape, and backslashes doubled.
    /// - Complexity: O(*n*) in the length of `text`; returns `text` itself when nothing needs escaping.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\\" || !isSafe($0) }) else { return text }
        // Built as UTF-8 bytes in one array: appending scalar by scalar to a
        // `String.UnicodeScalarView` was quadratic (64 KiB of control characters took seconds).
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + text.utf8.count / 2)
        for scalar in text.unicodeScalars { append(scalar, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes read as UTF-8, escaped like ``escaped(_:)``; each byte that is not part of a valid
    /// UTF-8 sequence is written as `\xHH`, never as itself or as U+FFFD.
    /// - Complexity: O(*n*) in the number of bytes.
    static func escaped(utf8 bytes: some Collection<UInt8>) -> String {
        let bytes = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 2)
        var index = 0
        while index < bytes.count {
            // A fresh decoder at each position, so an invalid byte costs one `\xHH` and decoding
            // resumes at the next byte (the decoder would otherwise skip a maximal invalid run).
            var decoder = UTF8()
            var iterator = bytes[index...].makeIterator()
            if case .scalarValue(let scalar) = decoder.decode(&iterator) {
                append(scalar, to: &out)
                index += UTF8.width(scalar)
            } else {
                appendHexEscape(bytes[index], to: &out)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether bytes can go to a terminal as they are: UTF-8 whose only controls are line feeds,
    /// tabs, and carriage returns before line feeds (a lone one can overwrite a line).
    /// - Complexity: O(*n*) in the number of bytes.
    static func isPlainText(_ bytes: some Collection<UInt8>) -> Bool {
        guard let text = String(validating: bytes, as: UTF8.self) else { return false }
        var previousIsCarriageReturn = false
        for scalar in text.unicodeScalars {
            if previousIsCarriageReturn, scalar != "\n" { return false }
            previousIsCarriageReturn = scalar == "\r"
            guard isSafe(scalar) || scalar == "\n" || scalar == "\t" || scalar == "\r" else { return false }
        }
        return !previousIsCarriageReturn
    }

    /// Appends `scalar`, or its escape, to `out` as UTF-8. O(1) per scalar.
    private static func append(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
        func ascii(_ text: StaticString) {
            out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }
        switch scalar {
        case "\\": ascii(#"\\"#)
        case "\n": ascii(#"\n"#)
        case "\r": ascii(#"\r"#)
        case "\t": ascii(#"\t"#)
        case "\u{1B}": ascii(#"\e"#)
        case _ where scalar.value < 0x80 && !isSafe(scalar):
            appendHexEscape(UInt8(scalar.value), to: &out)
        case _ where !isSafe(scalar):
            ascii(#"\u{"#)
            appendHex(scalar.value, to: &out)
            out.append(UInt8(ascii: "}"))
        default:
            out.append(contentsOf: UTF8.encode(scalar)!)
        }
    }

    /// `\xHH` for `byte`, in upper-case hex.
    private static func appendHexEscape(_ byte: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        out.append(hexDigit(byte >> 4))
        out.append(hexDigit(byte & 0xF))
    }

    /// `value` in upper-case hex, without leading zeros (at least one digit).
    private static func appendHex(_ value: UInt32, to out: inout [UInt8]) {
        var shift = 28
        while shift > 0, value >> UInt32(shift) == 0 { shift -= 4 }
        while shift >= 0 {
            out.append(hexDigit(UInt8((value >> UInt32(shift)) & 0xF)))
            shift -= 4
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }
}

extension TerminalText: ExpressibleByStringInterpolation {
    /// A literal: the tool's own text, written as is.
    init(stringLiteral value: String) { text = value }

    /// A literal with interpolations: the literal parts as written, each interpolated value escaped.
    init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    /// Builds an interpolated ``TerminalText``.
    struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var text = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        /// The tool's own text.
        mutating func appendLiteral(_ literal: String) { text += literal }

        /// A value from outside (or any value): its description, escaped.
        mutating func appendInterpolation<T>(_ value: T) { text += TerminalText.escaped(String(describing: value)) }

        /// Text already safe: as it is.
        mutating func appendInterpolation(_ value: TerminalText) { text += value.text }
    }
}
