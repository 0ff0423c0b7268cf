/// The remote tier's counters (``HybridCacheStatistics/remote``).
public struct RemoteTierStatistics: Hashable, Sendable {
    /// Reads the remote tier served (after memory and disk missed).
    public var hits = 0
    /// Reads the remote tier was asked and did not serve (absent, or rejected).
    public var misses = 0
    /// Calls to the store that failed (timeouts, lost connections, errors), and subscription losses.
    public var failures = 0
    /// Calls not made because the circuit breaker was open, and reads of keys the outbox holds
    /// (a store or removal the remote did not take, not yet replayed).
    public var skips = 0
    /// Values rejected for a missing or invalid header (also counted as misses).
    public var rejectedPayloads = 0
    /// Invalidations this instance published.
    public var invalidationsPublished = 0
    /// Invalidations from other instances this instance applied.
    public var invalidationsReceived = 0

    /// Creates zeroed counters.
    public init() {}
}

extension RemoteTier {
    /// The counters as the public value.
    var statistics: RemoteTierStatistics {
        var result = RemoteTierStatistics()
        result.hits = counters.hits.load(ordering: .relaxed)
        result.misses = counters.misses.load(ordering: .relaxed)
        result.failures = counters.failures.load(ordering: .relaxed)
        result.skips = counters.skips.load(ordering: .relaxed)
        result.rejectedPayloads = counters.rejected.load(ordering: .relaxed)
        result.invalidationsPublished = counters.published.load(ordering: .relaxed)
        result.invalidationsReceived = counters.received.load(ordering: .relaxed)
        return result
    }
}
