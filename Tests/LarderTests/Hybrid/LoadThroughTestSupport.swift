import Foundation
import Synchronization
import Testing
@testable import Larder

/// A latch loaders wait on until the test opens it. A waiter whose task is cancelled stops
/// waiting with `CancellationError`, and the gate counts it.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextID: UInt64 = 0
        var cancellations = 0
    }
    private let state = LarderMutex(State())

    /// Waiters that stopped because their task was cancelled.
    var cancellations: Int { state.withLock { $0.cancellations } }

    /// Suspends until ``open()``; throws `CancellationError` when the task is cancelled first.
    func wait() async throws {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool? = state.withLock { s in
                    if s.isOpen { return true }
                    if Task.isCancelled {
                        s.cancellations += 1
                        return false
                    }
                    s.waiters[id] = continuation
                    return nil
                }
                switch resumeNow {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let continuation = state.withLock { s in
                let continuation = s.waiters.removeValue(forKey: id)
                if continuation != nil { s.cancellations += 1 }
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Lets every waiter, present and future, through.
    func open() {
        let waiters = state.withLock { s in
            s.isOpen = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Counts loader calls and hands out the payload of each.
final class CountingLoader: Sendable {
    private let calls = Atomic<Int>(0)
    let gate: Gate?
    let payload: @Sendable (Int) -> Data
    let failure: (any Error)?

    /// A loader returning `payload(n)` on its `n`th call (from 1), after `gate` opens when there
    /// is one; or throwing `failure`.
    init(gate: Gate? = nil, failure: (any Error)? = nil, payload: @escaping @Sendable (Int) -> Data = { Data("loaded \($0)".utf8) }) {
        self.gate = gate
        self.failure = failure
        self.payload = payload
    }

    var count: Int { calls.load(ordering: .sequentiallyConsistent) }

    func load() async throws -> Data {
        let n = calls.add(1, ordering: .sequentiallyConsistent).newValue
        try await gate?.wait()
        if let failure { throw failure }
        return payload(n)
    }
}

/// What a loader throws in tests.
struct LoaderFailure: Error, Equatable {
    var id = 7
}

/// Collects load events.
final class LoadEventLog: Sendable {
    private let events = LarderMutex<[LoadEvent]>([])
    var all: [LoadEvent] { events.withLock { $0 } }
    var handler: @Sendable (LoadEvent) -> Void { { [self] event in events.withLock { $0.append(event) } } }

    /// The stale serves reported, as (key, expired for, reason).
    var staleServes: [(key: String, expiredFor: TimeInterval, reason: LoadEvent.StaleReason)] {
        all.compactMap {
            guard case .servedStale(let key, let expiredFor, let reason) = $0 else { return nil }
            return (key, expiredFor, reason)
        }
    }

    /// The keys of the `.loaded` events.
    var loadedKeys: [String] {
        all.compactMap {
            guard case .loaded(let key, _) = $0 else { return nil }
            return key
        }
    }
}

/// Yields until `condition` holds; records an issue if it still does not after a generous
/// number of rounds (a hang guard, not a timing assertion).
func eventually(_ what: String, _ condition: () -> Bool) async {
    for _ in 0 ..< 60_000 {
        if condition() { return }
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
    Issue.record("never happened: \(what)")
}

/// The code of a ``CacheError`` an async call throws, or `nil`.
func asyncErrorCode<T>(_ body: () async throws(CacheError) -> T) async -> CacheError.Code? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error.code
    }
}

/// A counter tasks can share.
final class Tally: Sendable {
    private let count = Atomic<Int>(0)
    private let highest = Atomic<Int>(0)

    var value: Int { count.load(ordering: .sequentiallyConsistent) }
    /// The highest value the counter has had.
    var peak: Int { highest.load(ordering: .sequentiallyConsistent) }

    /// Adds one; returns the new value.
    @discardableResult
    func increment() -> Int {
        let now = count.add(1, ordering: .sequentiallyConsistent).newValue
        highest.max(now, ordering: .sequentiallyConsistent)
        return now
    }
}
