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
    /// - Parameter message: The message's bytes.
    public init?(decoding message: Data) {
        guard let text = String(data: message, encoding: .utf8), text.utf8.count >= 37 else { return nil }
        let idEnd = text.utf8.index(text.utf8.startIndex, offsetBy: 36)
        guard let sender = UUID(uuidString: String(text[..<idEnd])) else { return nil }
        let rest = text[idEnd...]
        let body = String(rest.dropFirst())
        switch rest.first {
        case "k": scope = .key(body)
        case "p": scope = .prefix(body)
        case "a" where body.isEmpty: scope = .all
        default: return nil
        }
        self.sender = sender
    }
}
