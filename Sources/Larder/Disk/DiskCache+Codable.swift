import Foundation

extension DiskCache {
    /// Encodes `value` with `coder` and stores the bytes under `key`, like `store(_:forKey:expiry:locked:)`.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key.
    ///   - expiry: When it expires (``Expiry/default``: the cache's default expiration).
    ///   - locked: Whether to store it locked against expiry.
    ///   - coder: How to turn the value into bytes (``CacheCoder/json``).
    /// - Throws: ``CacheError/Code/encodingFailed`` naming the key and type, or what
    ///   `store(_:forKey:expiry:locked:)` throws.
    public func store<T: Encodable>(
        _ value: T, forKey key: String, expiry: Expiry = .default, locked: Bool = false, coder: CacheCoder = .json
    ) throws(CacheError) {
        try store(coder.encoded(value, key: key), forKey: key, expiry: expiry, locked: locked)
    }

    /// Reads the record under `key` and decodes its payload as a `T` with `coder`.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - key: The key.
    ///   - coder: How to turn bytes into the value (``CacheCoder/json``).
    /// - Returns: The value, or `nil` when no live record is stored under `key`.
    /// - Throws: ``CacheError/Code/decodingFailed`` naming the key and type when the bytes do not
    ///   decode (never a silent miss), or what `value(forKey:)` throws.
    public func value<T: Decodable>(_ type: T.Type, forKey key: String, coder: CacheCoder = .json) throws(CacheError) -> T? {
        guard let data = try value(forKey: key) else { return nil }
        return try coder.decoded(type, from: data, key: key)
    }
}
