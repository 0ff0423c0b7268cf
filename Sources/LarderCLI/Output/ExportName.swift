/// File names for exported payloads that round-trip to their keys.
///
/// Bytes of the key's UTF-8 outside `[A-Za-z0-9._-]` become `%XX` (uppercase hex), and so does a
/// leading `.` (no hidden files, no `.` or `..`). `%` itself is always encoded, so decoding is
/// unambiguous. The empty key is written as `%` alone.
enum ExportName {
    static func encode(_ key: String) -> String {
        if key.isEmpty { return "%" }
        var out = ""
        let digits = Array("0123456789ABCDEF")
        for (i, byte) in key.utf8.enumerated() {
            let safe =
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x5F || (byte == 0x2E && i > 0)
            if safe {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out.append("%")
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0xF)])
            }
        }
        return out
    }

    /// The key a file name stands for, or `nil` when it is not a name ``encode(_:)`` produces.
    static func decode(_ name: String) -> String? {
        if name == "%" { return "" }
        var bytes: [UInt8] = []
        var iterator = Array(name.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let h = hexValue(high), let l = hexValue(low)
                else { return nil }
                bytes.append(h << 4 | l)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
