@_exported import LarderTestSupport
@testable import Larder
import Synchronization

/// Collects what an eviction handler is given, from any thread.
final class EvictionRecorder<Key: Sendable & Equatable, Value: Sendable & Equatable>: Sendable {
    struct Event: Equatable, Sendable, CustomStringConvertible {
        var key: Key
        var value: Value
        var reason: EvictionReason
        var description: String { "(\(key), \(value), \(reason))" }
    }

    private let storage = LarderMutex<[Event]>([])

    /// A handler to pass to a cache.
    var handler: @Sendable (Key, Value, EvictionReason) -> Void {
        { key, value, reason in self.storage.withLock { $0.append(Event(key: key, value: value, reason: reason)) } }
    }

    /// Everything recorded so far.
    var events: [Event] {
        storage.withLock { $0 }
    }

    /// Returns everything recorded so far and forgets it.
    func drain() -> [Event] {
        storage.withLock { events in
            defer { events = [] }
            return events
        }
    }
}

extension CacheStatistics {
    /// The counters a test expects, every other one at 0.
    init(hits: Int = 0, misses: Int = 0, insertions: Int = 0, expirations: Int = 0, evictions: [EvictionReason: Int] = [:]) {
        self.init()
        self.hits = hits
        self.misses = misses
        self.insertions = insertions
        self.expirations = expirations
        self.evictions = evictions
    }
}

/// The expiries every tier must reject with ``CacheError/Code/invalidArgument``.
let invalidExpiries: [Expiry] = [.seconds(0), .seconds(-1), .seconds(.nan), .seconds(.infinity), .seconds(-.infinity)]
