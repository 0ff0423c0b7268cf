import Foundation

/// Settings of a ``HybridCache``'s shared remote tier (``HybridCacheOptions/remote``).
///
/// ```swift
/// var options = HybridCacheOptions(directory: cachesURL)
/// options.remote = RemoteTierOptions(store: try RedisRemoteStore(host: "10.0.0.5", port: 6379), namespace: "feeds")
/// ```
public struct RemoteTierOptions: Sendable {
    /// When stores and removals reach the remote tier.
    public enum WriteMode: Sendable, Hashable {
        /// Before the call returns (the default): once it returns, other instances read the new value.
        case writeThrough
        /// In the background, in call order: calls return after the local tiers, and other
        /// instances see the change a little later.
        case background
    }

    /// How an instance learns that another changed a value it holds a copy of.
    public enum Invalidation: Sendable, Hashable {
        /// Each store and removal publishes an invalidation, which every instance receives on
        /// a subscription (Redis pub/sub; the default). Works with any ``RemoteStore``; a
        /// message missed while the subscription was down is made up for by clearing the memory
        /// tier once it is back, and copies on disk end within ``localLifetimeCap``.
        case publishSubscribe
        /// The store reports every change under the namespace itself
        /// (``RemoteStore/trackChanges(ofKeysWithPrefix:timeouts:handler:)``; Redis: RESP3
        /// `CLIENT TRACKING`). Its loss is noticed when it happens: the memory and disk tiers are
        /// emptied then, and remote hits are kept locally only once changes are tracked again.
        /// Needs a store whose ``RemoteStore/canTrackChanges`` is `true` (`RedisRemoteStore`, and
        /// `RedisClusterStore`, which tracks every master and reports a loss on any of them).
        /// The instance's own stores and removals still publish (see ``RemoteTierOptions/invalidation``).
        case tracking
    }

    /// The shared store.
    public var store: any RemoteStore
    /// The start of every key this cache uses in the store, and the name of its invalidation
    /// channel; caches that share values use the same namespace. Not empty.
    public var namespace: String
    /// The longest a new connection may take, in seconds (1). Connects run in the background:
    /// a call waits for one only within ``commandTimeout``; the breaker's probe waits for it.
    public var connectTimeout: TimeInterval = 1
    /// Each call's budget on the remote tier, in seconds (0.25): the longest it waits there in
    /// all, for a connection and for every command it sends (a store's `SET` and its `PUBLISH`
    /// share it). Past it, the call carries on as if the remote had missed; a store or removal
    /// the remote did not take goes to the outbox (the ScalingOut article).
    public var commandTimeout: TimeInterval = 0.25
    /// The longest a value read from the remote tier lives in memory and on disk, in seconds (60):
    /// the bound on how long an instance may serve a value whose invalidation it missed.
    public var localLifetimeCap: TimeInterval = 60
    /// When stores and removals reach the store (``WriteMode/writeThrough``).
    public var writeMode: WriteMode = .writeThrough
    /// How invalidations reach this instance (``Invalidation/publishSubscribe``, which every store
    /// supports and which does not empty the local tiers when its connection blips).
    /// Stores and removals publish their invalidations in either mode: a writer cannot know
    /// whether other instances of the namespace use pub/sub, and those hear only what is
    /// published. So instances of either kind can share a namespace.
    public var invalidation: Invalidation = .publishSubscribe
    /// The most disk copies of remote hits waiting to be written (128). A remote hit goes to
    /// memory at once; its disk copy is written in the background, on a thread of the cache's own
    /// at a background priority, one per key (a later hit of a waiting key replaces it; a read
    /// of many keys queues its copies together). The writes start once half this many wait, or
    /// 5 ms after the first, so that a burst of remote reads is served before its file writes
    /// compete with it; after writing them the writer looks again 5 ms later, and rests only when
    /// none waits. When this many wait, the reader writes its copy itself (a read of many keys:
    /// the copies that do not fit), so that sustained remote hits are slowed down by the disk
    /// rather than queued without bound. 0 writes every copy before the read returns.
    public var diskPromotionBacklog: Int = 128
    /// Consecutive failures that open the circuit breaker (3).
    public var failureThreshold: Int = 3
    /// How often the open breaker probes the remote tier with a ping, in the background, in
    /// seconds (5): the first probe after the store answers again closes the breaker. Also how
    /// long a store or removal the remote did not take waits before its replay is tried again.
    public var breakerCooldown: TimeInterval = 5
    /// How long a load-through read waits for another instance that holds the load lock of its
    /// key, in seconds, before loading itself (5).
    public var loadLockWait: TimeInterval = 5
    /// The lifetime of a load lock, in seconds (10): a lock whose holder died frees itself then.
    public var loadLockLifetime: TimeInterval = 10
    /// Called with the remote tier's failures, breaker changes and invalidations (`nil`).
    /// It runs on the thread that saw the event; it must return quickly.
    public var eventHandler: (@Sendable (RemoteEvent) -> Void)?

    /// Creates settings with every other value at its default.
    /// - Parameters:
    ///   - store: The shared store.
    ///   - namespace: The start of every key of this cache in the store; not empty.
    public init(store: any RemoteStore, namespace: String) {
        self.store = store
        self.namespace = namespace
    }

    /// The timeouts the store is called with.
    var timeouts: RemoteTimeouts { RemoteTimeouts(connect: connectTimeout, command: commandTimeout) }

    /// What is wrong with these settings, if anything.
    var problem: String? {
        if namespace.isEmpty { return "the remote tier's namespace must not be empty" }
        for (name, value) in [
            ("connectTimeout", connectTimeout), ("commandTimeout", commandTimeout), ("localLifetimeCap", localLifetimeCap),
            ("breakerCooldown", breakerCooldown), ("loadLockLifetime", loadLockLifetime),
        ] where !(value.isFinite && value > 0) {
            return "the remote tier's \(name) must be finite and above 0, not \(value)"
        }
        if !(loadLockWait.isFinite && loadLockWait >= 0) {
            return "the remote tier's loadLockWait must be finite and at least 0, not \(loadLockWait)"
        }
        if failureThreshold < 1 { return "the remote tier's failureThreshold must be at least 1, not \(failureThreshold)" }
        if invalidation == .tracking, !store.canTrackChanges {
            return "the remote tier's invalidation is .tracking, but its store cannot track changes"
        }
        if diskPromotionBacklog < 0 { return "the remote tier's diskPromotionBacklog must be at least 0, not \(diskPromotionBacklog)" }
        return nil
    }
}

/// What the remote tier reports to ``RemoteTierOptions/eventHandler``.
public enum RemoteEvent: Sendable {
    /// A call to the store failed; the cache carried on with its local tiers.
    case failed(operation: String, error: CacheError)
    /// Repeated failures opened the circuit breaker: the remote tier is skipped for `cooldown` seconds.
    case breakerOpened(cooldown: TimeInterval)
    /// A probe (a ping, made in the background every cool-down) succeeded: the remote tier is
    /// used again.
    case breakerClosed
    /// A value under `key` did not carry a valid Larder header (foreign or damaged); it was
    /// treated as a miss.
    case payloadRejected(key: String)
    /// The invalidation subscription listens (once, after the cache opens): invalidations
    /// published (or, with ``RemoteTierOptions/Invalidation/tracking``, changes made) from now on
    /// reach this instance.
    case subscribed
    /// The invalidation subscription lost its connection; it reconnects by itself. With
    /// ``RemoteTierOptions/Invalidation/tracking``, the memory and disk tiers were emptied on the
    /// first loss after the subscription listened.
    case subscriptionLost(String)
    /// The invalidation subscription listens again after a loss; the memory tier was cleared
    /// (with ``RemoteTierOptions/Invalidation/tracking``, the disk tier too), since invalidations
    /// may have been missed meanwhile.
    case subscriptionRestored
    /// Another instance invalidated `scope`; the local copies were dropped.
    case invalidated(RemoteInvalidation.Scope)
}
