import Dispatch
import Foundation
import Synchronization

@testable import Larder

/// The queue SPT's tests hand their callbacks (`dispatch_get_main_queue()` there); a serial queue
/// of the test's own here, so that a response is awaited rather than polled.
let callbackQueue = DispatchQueue(label: "spt-conformance.callbacks")

/// Starts a callback-style call and waits for its one response (SPT's `XCTestExpectation`).
func callback<Value: Sendable>(
    on queue: DispatchQueue = callbackQueue,
    _ call: (DispatchQueue, @escaping @Sendable (CacheResponse<Value>) -> Void) -> Void
) async -> CacheResponse<Value> {
    await withCheckedContinuation { continuation in
        call(queue) { continuation.resume(returning: $0) }
    }
}

/// Collects a cache's events (SPT's `debugOutput`), from any thread.
final class EventLog: Sendable {
    private let events = LarderMutex<[CacheEvent]>([])

    var all: [CacheEvent] { events.withLock { $0 } }
    var handler: @Sendable (CacheEvent) -> Void { { [self] event in events.withLock { $0.append(event) } } }

    /// The reasons of the corrupt records removed, by file name.
    var corruptRemovals: [String: CorruptionReason] {
        var result: [String: CorruptionReason] = [:]
        for case .corruptRecordRemoved(_, let file, let reason) in all { result[lastPathComponent(file)] = reason }
        return result
    }

    /// The `ioError` events, as (operation, path).
    var ioErrors: [(operation: String, path: String)] {
        all.compactMap { event in
            if case .ioError(let operation, let path, _) = event { return (operation, path) }
            return nil
        }
    }
}

/// A value shared with a `@Sendable` closure (a chooser, a completion) and read back. Locked
/// with `LarderMutex`, which Thread Sanitizer builds (`-DLARDER_SANITIZE_THREADS`) can see.
final class Box<Value: Sendable>: Sendable {
    private let storage: LarderMutex<Value>
    init(_ value: Value) { storage = LarderMutex(value) }
    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func update<R>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}
