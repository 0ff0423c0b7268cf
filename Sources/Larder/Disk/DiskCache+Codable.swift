import Foundation

extension DiskCache {
    /// Encodes `value` with `coder` and stores the bytes under `key`, like ``store(_:forKey:ttl:locked:)``.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key.
    ///   - ttl: Seconds until it expires; 0 (the default) means the cache's default expiration.
    ///   - locked: Whether to store it locked against expiry.
    ///   - coder: How to turn the value into bytes (``CacheCoder/json``).
    /// - Throws: ``CacheError``: ``CacheError/Code/encodingFailed`` naming the key and type, or
    ///   what ``store(_:forKey:ttl:locked:)`` throws.
    public func store<T: Encodable>(
        _ value: T, forKey key: String, ttl: TimeInterval = 0, locked: Bool = false, coder: CacheCoder = .json
    ) throws {
        try store(coder.encoded(value, key: key), forKey: key, ttl: ttl, locked: locked)
    }

    /// Loads the record under `key` and decodes its payload as a `T` with `coder`.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - key: The key.
    ///   - coder: How to turn bytes into the value (``CacheCoder/json``).
    /// - Returns: The value, or `nil` when no live record is stored under `key`.
    /// - Throws: ``CacheError``: ``CacheError/Code/decodingFailed`` naming the key and type when
    ///   the bytes do not decode (never a silent miss), or what ``load(forKey:)`` throws.
    public func value<T: Decodable>(_ type: T.Type, forKey key: String, coder: CacheCoder = .json) throws -> T? {
        guard let record = try load(forKey: key) else { return nil }
        return try coder.decoded(type, from: record.data, key: key)
    }
}
