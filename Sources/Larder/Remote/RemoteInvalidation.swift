import Foundation

/// An invalidation one ``HybridCache`` publishes after a store or removal, so that the others
/// sharing its remote tier drop their local copies.
///
/// On the wire: the sender's id (36 characters), one letter for the scope (`k`ey, `p`refix,
/// `a`ll), then the key or prefix in UTF-8.
public struct RemoteInvalidation: Sendable, Hashable {
    /// What an invalidation covers.
    public enum Scope: Sendable, Hashable {
        /// One key.
        case key(String)
        /// Every key starting with the prefix.
        case prefix(String)
        /// Every key.
        case all
    }

    /// The instance that published it (a cache ignores its own).
    public var sender: UUID
    /// What it covers.
    public var scope: Scope

    /// Creates an invalidation.
    /// - Parameters:
    ///   - sender: The publishing instance's id.
    ///   - scope: What it covers.
    public init(sender: UUID, scope: Scope) {
        self.sender = sender
        self.scope = scope
    }

    /// The message's bytes.
    public var encoded: Data {
        var text = sender.uuidString
        switch scope {
        case .key(let key): text += "k" + key
        case .prefix(let prefix): text += "p" + prefix
        case .all: text += "a"
        }
        return Data(text.utf8)
    }

    /// Decodes a message; `nil` for one that is not an invalidation.
    ///
    /// The id is read from its bytes here: `UUID(uuidString:)` parses with `sscanf`, some 8,000
    /// instructions for each message every instance receives (callgrind of `larder-bench remote`).
    /// - Parameter message: The message's bytes.
    public init?(decoding message: Data) {
        guard message.count >= 37 else { return nil }
        let head = message.withUnsafeBytes { raw -> (UUID, UInt8)? in
            guard let id = Self.id(from: UnsafeRawBufferPointer(rebasing: raw[..<36])) else { return nil }
            return (id, raw[36])
        }
        guard let (sender, letter) = head,
            let body = String(data: message.dropFirst(37), encoding: .utf8)
        else { return nil }
        switch letter {
        case UInt8(ascii: "k"): scope = .key(body)
        case UInt8(ascii: "p"): scope = .prefix(body)
        case UInt8(ascii: "a") where body.isEmpty: scope = .all
        default: return nil
        }
        self.sender = sender
    }

    /// The UUID spelled by the 36 bytes of `text` (`8-4-4-4-12` hexadecimal digits, either case),
    /// or `nil`.
    private static func id(from text: UnsafeRawBufferPointer) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var digits = 0
        for (offset, character) in text.enumerated() {
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let value: UInt8
            switch character {
            case UInt8(ascii: "0") ... UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a") ... UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A") ... UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            bytes[digits / 2] |= digits % 2 == 0 ? value << 4 : value
            digits += 1
        }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10],
                bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
