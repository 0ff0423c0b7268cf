/// The outcome of a callback-style call (SPTPersistentCache's `SPTPersistentCacheResponse`).
///
/// Loads deliver `.success(value)` or `.notFound`; writes deliver `.success(())`; any call
/// delivers `.failure(error)` when it throws.
public enum CacheResponse<Value: Sendable>: Sendable {
    /// The call succeeded, with its result.
    case success(Value)
    /// Nothing live is stored under the key.
    case notFound
    /// The call failed.
    case failure(CacheError)

    /// The value of a `.success`, or `nil`.
    public var value: Value? {
        if case .success(let value) = self { return value }
        return nil
    }

    /// The error of a `.failure`, or `nil`.
    public var error: CacheError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
