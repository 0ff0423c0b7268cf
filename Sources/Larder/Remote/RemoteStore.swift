import Foundation

/// A shared key-value store that several ``HybridCache`` instances use as their remote tier
/// (``HybridCacheOptions/remote``): Redis through `LarderRedis.RedisRemoteStore`, or a fake in tests.
///
/// Every call blocks its thread until the store answers or its budget (``RemoteTimeouts/command``)
/// is spent, all its waits together; the cache calls them
/// on its own threads, never on the cooperative pool and never while it holds a key lock. Keys
/// arrive already namespaced; payloads arrive already framed (``RemotePayload``). A store reports
/// every failure as ``CacheError/Code/remoteFailure``; the cache turns it into a miss (fail open).
public protocol RemoteStore: Sendable {
    /// The values under `keys`, in the same order, `nil` for a missing key, each with the time it
    /// has left when the store knows it without another command (Redis does not: `GET` or `MGET`
    /// alone). The cache bounds its copies by the frame header's expiry, and by this time when given.
    /// - Parameters:
    ///   - keys: The keys, at least one.
    ///   - timeouts: How long to wait for a connection and for the answer.
    /// - Throws: ``CacheError/Code/remoteFailure``.
    func values(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) -> [RemoteValue?]

    /// The value under `key`, `nil` when it is missing: ``values(forKeys:timeouts:)`` of one key,
    /// which the cache calls for each read of a single key. The default implementation calls
    /// ``values(forKeys:timeouts:)``; a store implements it to spare that call its arrays.
    /// - Parameters:
    ///   - key: The key.
    ///   - timeouts: How long to wait for a connection and for the answer.
    /// - Throws: ``CacheError/Code/remoteFailure``.
    func value(forKey key: String, timeouts: RemoteTimeouts) throws(CacheError) -> RemoteValue?

    /// Stores `data` under `key`, expiring after `milliseconds` (`nil`: never).
    /// - Parameters:
    ///   - data: The bytes.
    ///   - key: The key.
    ///   - milliseconds: The lifetime, above 0, or `nil`.
    ///   - onlyIfAbsent: Store only when no value is stored under `key` (Redis: `SET NX`).
    ///   - timeouts: How long to wait.
    /// - Returns: Whether the value was stored (always `true` unless `onlyIfAbsent`). With
    ///   `onlyIfAbsent`, `false` means another value was there before this call: a store that
    ///   cannot tell (the connection failed after the command was sent, so it may have applied)
    ///   throws rather than send it again, since a second run would find this call's own value.
    /// - Throws: ``CacheError/Code/remoteFailure``.
    func store(_ data: Data, forKey key: String, expiresIn milliseconds: Int64?, onlyIfAbsent: Bool, timeouts: RemoteTimeouts)
        throws(CacheError) -> Bool

    /// Gives the value under `key` a lifetime of `milliseconds` from now, unless that would end
    /// it earlier than its current one (Redis: `PEXPIRE GT`); `nil`: it never expires. Never
    /// shortening keeps the frame header's expiry, which readers go by, no later than the store's.
    /// - Returns: Whether the lifetime changed.
    /// - Throws: ``CacheError/Code/remoteFailure``.
    func touch(forKey key: String, expiresIn milliseconds: Int64?, timeouts: RemoteTimeouts) throws(CacheError) -> Bool

    /// Removes the values under `keys` (Redis: `UNLINK`).
    /// - Throws: ``CacheError/Code/remoteFailure``.
    func remove(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError)

    /// Removes every value whose key starts with `prefix`, taken literally (Redis: `SCAN` and
    /// `UNLINK`, never `FLUSHDB`).
    /// - Returns: How many values were removed.
    /// - Throws: ``CacheError/Code/remoteFailure``.
    /// - Complexity: O(*n*) in the keys of the store.
    @discardableResult
    func remove(withPrefix prefix: String, timeouts: RemoteTimeouts) throws(CacheError) -> Int

    /// Sends `message` to every subscriber of `channel` (Redis: `PUBLISH`). Delivery is best-effort.
    /// - Throws: ``CacheError/Code/remoteFailure``.
    func publish(_ message: Data, to channel: String, timeouts: RemoteTimeouts) throws(CacheError)

    /// Delivers the messages published to `channel` to `handler`, on a thread of the store's, until
    /// the subscription is cancelled; reconnects when the connection is lost and says so.
    /// - Parameters:
    ///   - channel: The channel.
    ///   - timeouts: How long to wait for each connection.
    ///   - handler: Called with each message and each change of the connection.
    /// - Returns: The subscription, to cancel it.
    func subscribe(
        to channel: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> any RemoteSubscription

    /// Checks that the store answers (Redis: `PING`); the cache's circuit breaker probes with it.
    /// - Throws: ``CacheError/Code/remoteFailure``.
    func ping(timeouts: RemoteTimeouts) throws(CacheError)

    /// Whether ``trackChanges(ofKeysWithPrefix:timeouts:handler:)`` is supported (`false` unless
    /// the store says otherwise): ``RemoteTierOptions/Invalidation/tracking`` needs it.
    var canTrackChanges: Bool { get }

    /// Reports every change of a value whose key starts with `prefix`, whoever made it (Redis:
    /// `CLIENT TRACKING on BCAST PREFIX` on a RESP3 connection of its own), on a thread of the
    /// store's, until the subscription is cancelled. Reports
    /// ``RemoteSubscriptionEvent/subscribed(afterReconnect:)`` once changes are tracked,
    /// ``RemoteSubscriptionEvent/lost(_:)`` as soon as the connection is lost (it reconnects by
    /// itself), and ``RemoteSubscriptionEvent/changed(keys:)`` for the changes.
    /// - Parameters:
    ///   - prefix: The start of the keys to track, taken literally.
    ///   - timeouts: How long to wait for each connection and its setup.
    ///   - handler: Called with each change and each change of the connection.
    /// - Returns: The subscription, to cancel it; `nil` when the store cannot track changes (the
    ///   default implementation).
    func trackChanges(
        ofKeysWithPrefix prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> (any RemoteSubscription)?
}

extension RemoteStore {
    /// `false`: a store tracks changes only when it says so.
    public var canTrackChanges: Bool { false }

    /// `nil`: a store tracks changes only when it implements this.
    public func trackChanges(
        ofKeysWithPrefix prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> (any RemoteSubscription)? {
        nil
    }
}

extension RemoteStore {
    /// ``values(forKeys:timeouts:)`` of the one key.
    /// - Throws: ``CacheError/Code/remoteFailure``, also when the store answers with another
    ///   number of values than one.
    public func value(forKey key: String, timeouts: RemoteTimeouts) throws(CacheError) -> RemoteValue? {
        let found = try values(forKeys: [key], timeouts: timeouts)
        guard found.count == 1 else {
            throw CacheError(.remoteFailure, "the remote store answered a read of one key with \(found.count) values", key: key)
        }
        return found[0]
    }
}

/// A value read from a ``RemoteStore``.
public struct RemoteValue: Sendable, Hashable {
    /// The stored bytes.
    public var data: Data
    /// How long the value has left, in milliseconds; `nil` when the store did not say (or it
    /// never expires).
    public var millisecondsToLive: Int64?

    /// Creates a value.
    /// - Parameters:
    ///   - data: The stored bytes.
    ///   - millisecondsToLive: How long it has left; `nil` when unknown or never.
    public init(data: Data, millisecondsToLive: Int64?) {
        self.data = data
        self.millisecondsToLive = millisecondsToLive
    }
}

/// How long a ``RemoteStore`` call may wait.
public struct RemoteTimeouts: Sendable, Hashable {
    /// The longest a new connection may take, in seconds. A store may open it in the background
    /// and let the call wait for it only within ``command``.
    public var connect: TimeInterval
    /// The call's budget, in seconds: the longest it may wait in all, for a connection and for
    /// the answers to every command it sends (a removal by prefix sends several). The cache
    /// gives each call what is left of its own budget (a store's `PUBLISH` gets what its `SET` left).
    public var command: TimeInterval

    /// Creates timeouts.
    /// - Parameters:
    ///   - connect: The longest wait for a new connection, in seconds.
    ///   - command: The longest wait for an answer, in seconds.
    public init(connect: TimeInterval, command: TimeInterval) {
        self.connect = connect
        self.command = command
    }
}

/// What a ``RemoteStore`` subscription reports.
public enum RemoteSubscriptionEvent: Sendable, Hashable {
    /// A message published to the channel.
    case message(Data)
    /// The subscription is listening; `afterReconnect` when it had lost its connection before,
    /// so messages published in between may have been missed.
    case subscribed(afterReconnect: Bool)
    /// The connection was lost (the store retries); the text says why.
    case lost(String)
    /// The values under `keys` (the store's keys, prefix included) changed or went, or, when
    /// `keys` is `nil`, every value may have (Redis: a flush). Reported by
    /// ``RemoteStore/trackChanges(ofKeysWithPrefix:timeouts:handler:)``.
    case changed(keys: [String]?)
}

/// A subscription made by ``RemoteStore/subscribe(to:timeouts:handler:)``.
public protocol RemoteSubscription: Sendable {
    /// Stops the deliveries. The handler is not called once this returns, except for a call
    /// already running.
    func cancel()
}
