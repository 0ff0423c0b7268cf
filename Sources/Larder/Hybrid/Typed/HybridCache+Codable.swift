import Foundation

extension HybridCache {
    /// Encodes `value` and stores the bytes under `key`, like `store(_:forKey:in:expiry:locked:)`.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key.
    ///   - tiers: Where to store it (``CacheTiers/all``).
    ///   - expiry: When it expires (``Expiry/default``: the disk's default expiration).
    ///   - locked: Whether it is locked against expiry.
    ///   - coder: How to turn it into bytes; `nil` (the default) means the cache's ``coder``.
    /// - Throws: ``CacheError/Code/encodingFailed`` naming the key and type, or
    ///   what `store(_:forKey:in:expiry:locked:)` throws.
    public func store<T: Encodable>(
        _ value: T, forKey key: String, in tiers: CacheTiers = .all, expiry: Expiry = .default, locked: Bool = false,
        coder: CacheCoder? = nil
    ) throws(CacheError) {
        try store((coder ?? self.coder).encoded(value, key: key), forKey: key, in: tiers, expiry: expiry, locked: locked)
    }

    /// Reads the bytes under `key` like `value(forKey:from:)` and decodes them as a `T`.
    ///
    /// Memory holds bytes, not values: each call decodes. For values read often, a typed view
    /// (`typed(_:coder:countLimit:totalCostLimit:)`) keeps them decoded in memory.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - key: The key.
    ///   - tiers: Where to look (``CacheTiers/all``).
    ///   - coder: How to turn bytes into the value; `nil` (the default) means the cache's ``coder``.
    /// - Returns: The value, or `nil` when no tier asked holds a live entry.
    /// - Throws: ``CacheError/Code/decodingFailed`` naming the key and type when
    ///   the bytes do not decode (never a silent miss), or what `value(forKey:from:)` throws.
    public func value<T: Decodable>(
        _ type: T.Type, forKey key: String, from tiers: CacheTiers = .all, coder: CacheCoder? = nil
    ) throws(CacheError) -> T? {
        guard let data = try value(forKey: key, from: tiers) else { return nil }
        return try (coder ?? self.coder).decoded(type, from: data, key: key)
    }
}
