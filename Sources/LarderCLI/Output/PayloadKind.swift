import Foundation

/// What a payload looks like, from its first bytes.
enum PayloadKind: Equatable {
    case png, jpeg, gif, json, text, binary

    /// The image MIME type, for kinds a browser shows.
    var imageMIMEType: String? {
        switch self {
        case .png: "image/png"
        case .jpeg: "image/jpeg"
        case .gif: "image/gif"
        default: nil
        }
    }

    /// Sniffs magic bytes: PNG `89 50 4E 47 0D 0A 1A 0A`, JPEG `FF D8 FF`, GIF `GIF87a`/`GIF89a`;
    /// else UTF-8 text (JSON when it starts with `{` or `[`), else binary.
    static func of(_ data: Data) -> PayloadKind {
        let head = Array(data.prefix(8))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) { return .gif }
        let sample = Array(data.prefix(4096))
        if !sample.isEmpty, !sample.contains(0),
            String(validating: sample.count < 4096 ? sample : Array(sample.prefix(4000)), as: UTF8.self) != nil
        {
            let first = sample.first { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }
            return first == UInt8(ascii: "{") || first == UInt8(ascii: "[") ? .json : .text
        }
        return .binary
    }

    /// One line about a payload: its kind and a preview.
    static func describe(_ data: Data) -> String {
        switch of(data) {
        case .png: return "PNG image" + (pngSize(data).map { ", \($0.width)×\($0.height)" } ?? "")
        case .jpeg: return "JPEG image"
        case .gif: return "GIF image"
        case .json, .text:
            var preview = String(decoding: data.prefix(60), as: UTF8.self).replacingOccurrences(of: "\n", with: "⏎")
            if data.count > 60 { preview += "…" }
            return "\(of(data) == .json ? "JSON" : "text"): \(preview)"
        case .binary:
            return "binary: " + data.prefix(16).map { String($0, radix: 16).leftPadded(to: 2) }.joined(separator: " ")
                + (data.count > 16 ? " …" : "")
        }
    }

    /// A PNG's width and height, from its IHDR chunk.
    static func pngSize(_ data: Data) -> (width: Int, height: Int)? {
        let bytes = Array(data.prefix(24))
        guard bytes.count == 24, of(data) == .png else { return nil }
        func u32(_ i: Int) -> Int { Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]) }
        return (u32(16), u32(20))
    }
}
