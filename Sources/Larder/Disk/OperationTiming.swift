/// What a ``DiskCache`` reports to its ``DiskCacheOptions/timingHandler`` after an operation on
/// a record: SPTPersistentCache's `timingCallback`, as durations rather than mach times.
public struct OperationTiming: Sendable, Hashable {
    /// The kinds of operation that are timed (SPTPersistentCache's `SPTPersistentCacheDebugMethodType`,
    /// with touches).
    public enum Operation: Sendable, Hashable {
        /// A store.
        case store
        /// A load: `value(forKey:)`, `record(forKey:)`, or the load of a prefix load's chosen key.
        case read
        /// A touch.
        case touch
        /// A lock of one key.
        case lock
        /// An unlock of one key.
        case unlock
        /// A removal of one key.
        case remove
    }

    /// The cache's ``DiskCacheOptions/name``.
    public var cacheName: String
    /// The key the operation was for.
    public var key: String
    /// What it was.
    public var operation: Operation
    /// How long it waited for one of the cache's threads: `.zero` for synchronous calls, which
    /// run on the caller's thread.
    public var queued: Duration
    /// How long it ran.
    public var duration: Duration

    /// Creates a timing record.
    public init(cacheName: String, key: String, operation: Operation, queued: Duration, duration: Duration) {
        self.cacheName = cacheName
        self.key = key
        self.operation = operation
        self.queued = queued
        self.duration = duration
    }
}

extension DiskCache {
    /// Runs `body`, reporting its duration to the timing handler when there is one.
    @inline(__always)
    func timed<T, E: Error>(_ operation: OperationTiming.Operation, _ key: String, _ body: () throws(E) -> T) throws(E) -> T {
        guard let handler = options.timingHandler else { return try body() }
        let start = ContinuousClock.now
        defer {
            handler(
                OperationTiming(
                    cacheName: options.name, key: key, operation: operation, queued: WorkQueue.queuedDuration,
                    duration: ContinuousClock.now - start))
        }
        return try body()
    }
}
