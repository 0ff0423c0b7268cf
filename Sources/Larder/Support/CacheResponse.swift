/// The outcome of a callback-style call (SPTPersistentCache's `SPTPersistentCacheResponse`).
///
/// A call delivers what its synchronous twin returns: loads deliver `.success(value)`, or
/// `.notFound` where the twin returns `nil`; writes deliver `.success(())`; removals and touches
/// `.success(true)` or `.success(false)`, as the twin's `Bool`; any call delivers
/// `.failure(error)` where the twin throws.
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

/// A callback receiving a callback-style call's outcome, on the queue the call was given: the
/// `completion` of every `queue:completion:` call on ``DiskCache`` and ``HybridCache``.
public typealias CacheCompletion<Value: Sendable> = @Sendable (CacheResponse<Value>) -> Void
