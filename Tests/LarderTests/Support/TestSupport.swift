import Larder
import Synchronization

/// SplitMix64: a tiny seeded generator, so a failing randomized test can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Collects what an eviction handler is given, from any thread.
final class EvictionRecorder<Key: Sendable & Equatable, Value: Sendable & Equatable>: Sendable {
    struct Event: Equatable, Sendable, CustomStringConvertible {
        var key: Key
        var value: Value
        var reason: EvictionReason
        var description: String { "(\(key), \(value), \(reason))" }
    }

    private let storage = Mutex<[Event]>([])

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
