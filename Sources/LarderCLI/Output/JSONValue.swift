import Foundation

/// A JSON value with ordered object keys, so output is stable and readable.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func == (a: JSONValue, b: JSONValue) -> Bool { a.render() == b.render() }

    /// An integer, or null.
    static func int(_ value: Int?) -> JSONValue { value.map { .number(Double($0)) } ?? .null }
    /// A number, or null.
    static func double(_ value: Double?) -> JSONValue { value.map { .number($0) } ?? .null }
    /// A string, or null.
    static func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }

    /// The JSON text; arrays of objects get one object per line.
    func render(indent: String = "") -> String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n):
            if n == n.rounded(), abs(n) < 1e15 { return String(Int64(n)) }
            return String(n)
        case .string(let s): return Self.quote(s)
        case .array(let items):
            if items.isEmpty { return "[]" }
            let inner = indent + "  "
            return "[\n" + items.map { inner + $0.render(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let members):
            return "{" + members.map { Self.quote($0.0) + ": " + $0.1.render(indent: indent) }.joined(separator: ", ") + "}"
        }
    }

    /// A JSON string literal. Besides what JSON requires (quote, backslash, C0 controls), DEL, C1
    /// controls, U+2028, U+2029 and the bidirectional controls are written as `\uXXXX`: the value
    /// parses back to the same text, and the raw output is safe on a terminal (``TerminalText``)
    /// and inside JavaScript.
    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where !TerminalText.isSafe(c):
                out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
