import Foundation
import Testing
@testable import Larder

/// ``FakeRemoteStore`` with change tracking whose events the test sends itself: the connection
/// tracking, lost, back, and the changes it reports.
final class TrackingFakeStore: RemoteStore {
    let base: FakeRemoteStore
    private let handlers = LarderMutex<[@Sendable (RemoteSubscriptionEvent) -> Void]>([])
    private let prefixes = LarderMutex<[String]>([])

    init(_ base: FakeRemoteStore) { self.base = base }

    /// Sends `event` to every tracking subscription.
    func send(_ event: RemoteSubscriptionEvent) {
        for handler in handlers.withLock({ $0 }) { handler(event) }
    }

    /// The prefixes tracked so far.
    var trackedPrefixes: [String] { prefixes.withLock { $0 } }

    var canTrackChanges: Bool { true }

    func trackChanges(
        ofKeysWithPrefix prefix: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> (any RemoteSubscription)? {
        handlers.withLock { $0.append(handler) }
        prefixes.withLock { $0.append(prefix) }
        return FakeSubscription {}
    }

    func values(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) -> [RemoteValue?] {
        try base.values(forKeys: keys, timeouts: timeouts)
    }

    func store(_ data: Data, forKey key: String, expiresIn milliseconds: Int64?, onlyIfAbsent: Bool, timeouts: RemoteTimeouts)
        throws(CacheError) -> Bool
    {
        try base.store(data, forKey: key, expiresIn: milliseconds, onlyIfAbsent: onlyIfAbsent, timeouts: timeouts)
    }

    func touch(forKey key: String, expiresIn milliseconds: Int64?, timeouts: RemoteTimeouts) throws(CacheError) -> Bool {
        try base.touch(forKey: key, expiresIn: milliseconds, timeouts: timeouts)
    }

    func remove(forKeys keys: [String], timeouts: RemoteTimeouts) throws(CacheError) {
        try base.remove(forKeys: keys, timeouts: timeouts)
    }

    func remove(withPrefix prefix: String, timeouts: RemoteTimeouts) throws(CacheError) -> Int {
        try base.remove(withPrefix: prefix, timeouts: timeouts)
    }

    func publish(_ message: Data, to channel: String, timeouts: RemoteTimeouts) throws(CacheError) {
        try base.publish(message, to: channel, timeouts: timeouts)
    }

    func subscribe(
        to channel: String, timeouts: RemoteTimeouts, handler: @escaping @Sendable (RemoteSubscriptionEvent) -> Void
    ) -> any RemoteSubscription {
        base.subscribe(to: channel, timeouts: timeouts, handler: handler)
    }

    func ping(timeouts: RemoteTimeouts) throws(CacheError) {
        try base.ping(timeouts: timeouts)
    }
}

/// ``RemoteTierOptions/Invalidation/tracking`` against a fake store: remote hits are kept only
/// while changes are tracked, a loss empties the local tiers at once, reported changes drop
/// their keys' copies.
@Suite struct HybridRemoteTrackingTests {
    struct Setup {
        let clock = ManualClock(now: 1_700_000_000)
        let store: TrackingFakeStore
        /// Writes with pub/sub.
        let a: HybridCache
        /// Tracks changes.
        let b: HybridCache
        let eventsB = RemoteEventLog()
        let directories = (TemporaryDirectory(), TemporaryDirectory())

        init() throws {
            store = TrackingFakeStore(FakeRemoteStore(clock: clock))
            var optionsA = hybridOptions(directories.0.url, clock: clock)
            optionsA.remote = RemoteTierOptions(store: store, namespace: "test")
            var optionsB = hybridOptions(directories.1.url, clock: clock)
            var remote = RemoteTierOptions(store: store, namespace: "test")
            remote.invalidation = .tracking
            remote.eventHandler = eventsB.handler
            optionsB.remote = remote
            a = try HybridCache(options: optionsA)
            b = try HybridCache(options: optionsB)
        }

        func local(_ key: String) throws -> Data? { try b.value(forKey: key, from: [.memory, .disk]) }

        func close() {
            a.close()
            b.close()
            directories.0.remove()
            directories.1.remove()
        }
    }

    func bytes(_ text: String) -> Data { Data(text.utf8) }

    @Test func trackingNeedsAStoreThatCanTrackChanges() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = hybridOptions(directory.url)
        var remote = RemoteTierOptions(store: FakeRemoteStore(clock: ManualClock(now: 0)), namespace: "test")
        #expect(remote.invalidation == .publishSubscribe)
        remote.invalidation = .tracking
        options.remote = remote
        do {
            _ = try HybridCache(options: options)
            Issue.record("a store that cannot track changes was accepted")
        } catch {
            #expect(error.code == .invalidOptions)
            #expect(error.message.contains("cannot track changes"))
        }
    }

    @Test func remoteHitsAreKeptLocallyOnlyWhileChangesAreTracked() throws {
        let setup = try Setup()
        defer { setup.close() }
        #expect(setup.store.trackedPrefixes == ["test:v:"])
        try setup.a.store(bytes("v1"), forKey: "k")
        // Not tracking yet: served from the remote, not kept.
        #expect(try setup.b.value(forKey: "k") == bytes("v1"))
        setup.b.flushRemoteWrites()
        #expect(try setup.local("k") == nil)
        setup.store.send(.subscribed(afterReconnect: false))
        #expect(setup.eventsB.count { if case .subscribed = $0 { true } else { false } } == 1)
        #expect(try setup.b.value(forKey: "k") == bytes("v1"))
        setup.b.flushRemoteWrites()
        #expect(try setup.b.value(forKey: "k", from: [.memory]) == bytes("v1"))
        #expect(try setup.b.value(forKey: "k", from: [.disk]) == bytes("v1"))
    }

    @Test func aLossEmptiesTheLocalTiersAndTheyStayFreeOfRemoteHitsUntilTrackingIsBack() throws {
        let setup = try Setup()
        defer { setup.close() }
        setup.store.send(.subscribed(afterReconnect: false))
        try setup.a.store(bytes("v1"), forKey: "k")
        try setup.b.store(bytes("mine"), forKey: "own")
        #expect(try setup.b.value(forKey: "k") == bytes("v1"))
        setup.b.flushRemoteWrites()
        #expect(try setup.local("k") == bytes("v1"))

        setup.store.send(.lost("killed"))
        // Gone at once, memory and disk, the instance's own entries too: any may have changed.
        #expect(try setup.local("k") == nil)
        #expect(try setup.local("own") == nil)
        // While tracking is down, a remote hit is served but not kept.
        #expect(try setup.b.value(forKey: "k") == bytes("v1"))
        setup.b.flushRemoteWrites()
        #expect(try setup.local("k") == nil)
        // What b stores itself meanwhile is kept (its own write) until tracking is back.
        try setup.b.store(bytes("during"), forKey: "d")
        #expect(try setup.local("d") == bytes("during"))
        // A second loss report (a failed reconnect) changes nothing more.
        setup.store.send(.lost("still down"))
        #expect(try setup.local("d") == bytes("during"))

        setup.store.send(.subscribed(afterReconnect: true))
        #expect(try setup.local("d") == nil)
        #expect(setup.eventsB.count { if case .subscriptionRestored = $0 { true } else { false } } == 1)
        #expect(setup.eventsB.count { if case .subscriptionLost = $0 { true } else { false } } == 2)
        #expect(try setup.b.value(forKey: "k") == bytes("v1"))
        setup.b.flushRemoteWrites()
        #expect(try setup.local("k") == bytes("v1"))
    }

    @Test func reportedChangesDropTheirKeysCopiesAndAFlushDropsEveryCopy() throws {
        let setup = try Setup()
        defer { setup.close() }
        setup.store.send(.subscribed(afterReconnect: false))
        for key in ["x", "y", "z"] { try setup.a.store(bytes(key), forKey: key) }
        for key in ["x", "y", "z"] { #expect(try setup.b.value(forKey: key) == bytes(key)) }
        setup.b.flushRemoteWrites()
        // A value's key drops its copy; a lock key, another namespace's key, are no values of b's.
        setup.store.send(.changed(keys: ["test:v:x", "test:l:y", "other:v:y"]))
        #expect(try setup.local("x") == nil)
        #expect(try setup.local("y") == bytes("y"))
        #expect(setup.eventsB.count { if case .invalidated(.key("x")) = $0 { true } else { false } } == 1)
        #expect(setup.eventsB.count { if case .invalidated = $0 { true } else { false } } == 1)
        setup.store.send(.changed(keys: nil))
        #expect(try setup.local("y") == nil)
        #expect(try setup.local("z") == nil)
        #expect(setup.eventsB.count { if case .invalidated(.all) = $0 { true } else { false } } == 1)
    }
}
