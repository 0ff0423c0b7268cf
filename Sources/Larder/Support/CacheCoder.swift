import Foundation

/// Turns values into the bytes a cache stores, and back: the pluggable coder behind the typed
/// `store(_:forKey:)` and `value(_:forKey:)` calls. ``json`` is the default.
///
/// ```swift
/// let plist = CacheCoder(
///     encode: { try PropertyListEncoder().encode($0) },
///     decode: { type, data in try PropertyListDecoder().decode(type, from: data) })
/// try cache.store(settings, forKey: "settings", coder: plist)
/// ```
public struct CacheCoder: Sendable {
    /// Encodes a value into bytes.
    public var encode: @Sendable (any Encodable) throws -> Data
    /// Decodes bytes into a value of the given type.
    public var decode: @Sendable (any Decodable.Type, Data) throws -> any Decodable

    /// Creates a coder from two closures.
    /// - Parameters:
    ///   - encode: Encodes a value into bytes; throws when it cannot.
    ///   - decode: Decodes bytes into a value of the type given, which it must return; throws when it cannot.
    public init(
        encode: @escaping @Sendable (any Encodable) throws -> Data,
        decode: @escaping @Sendable (any Decodable.Type, Data) throws -> any Decodable
    ) {
        self.encode = encode
        self.decode = decode
    }

    /// JSON through Foundation's `JSONEncoder` and `JSONDecoder` with their default settings.
    public static let json = CacheCoder(
        encode: { try JSONEncoder().encode($0) },
        decode: { type, data in try JSONDecoder().decode(type, from: data) })

    /// Encodes `value`, wrapping any failure in ``CacheError/Code/encodingFailed``.
    func encoded<T: Encodable>(_ value: T, key: String) throws(CacheError) -> Data {
        do {
            return try encode(value)
        } catch {
            throw CacheError(
                .encodingFailed, "cannot encode a value of type \(String(reflecting: T.self)) for key '\(key)'",
                key: key, underlying: error)
        }
    }

    /// Decodes `data` as a `T`, wrapping any failure (and a coder returning another type) in
    /// ``CacheError/Code/decodingFailed``.
    func decoded<T: Decodable>(_ type: T.Type, from data: Data, key: String) throws(CacheError) -> T {
        let failure = { (error: (any Error)?) in
            CacheError(
                .decodingFailed, "cannot decode the bytes stored under '\(key)' as \(String(reflecting: T.self))",
                key: key, underlying: error)
        }
        let value: any Decodable
        do { value = try decode(type, data) } catch { throw failure(error) }
        guard let typed = value as? T else { throw failure(nil) }
        return typed
    }
}
