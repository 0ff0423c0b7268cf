import Dispatch
import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCacheTests.m:1689-1806: "Test Dispatching Empty and Error Responses" and
// "Test Dispatching Blocks", SPT's private helpers `dispatchEmptyResponseWithResult:`,
// `dispatchError:` and `SPTPersistentCacheSafeDispatch`. Their Swift meaning: how the callback
// forms deliver a `CacheResponse`.
extension SPTPersistentCacheTests {
    /// The response of a callback call delivered on `queue`, and whether it ran there.
    static func response<Value: Sendable>(
        on queue: DispatchQueue, _ call: (DispatchQueue, @escaping @Sendable (CacheResponse<Value>) -> Void) -> Void
    ) async -> (CacheResponse<Value>, onQueue: Bool) {
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 123)
        let result: (CacheResponse<Value>, Bool) = await withCheckedContinuation { continuation in
            call(queue) { continuation.resume(returning: ($0, DispatchQueue.getSpecific(key: key) == 123)) }
        }
        return (result.0, onQueue: result.1)
    }

    /// SPTPersistentCacheTests.m:1691. Objective-C plumbing: SPT's helper does no work for a
    /// `nil` callback. A Swift completion cannot be `nil`; one that ignores the response still
    /// gets the whole call: the load below is counted, in order, before the next one answers.
    @Test func testDispatchEmptyResponseWithNilCallbackDoesNothing() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        // One operation at a time, first come first served: the second call waits for the first.
        let cache = try Self.setUpCache(folder) { $0.maximumConcurrentOperations = 1 }
        defer { cache.close() }
        cache.record(forKey: "missing", queue: callbackQueue) { _ in }
        let second = await callback { cache.record(forKey: "missing too", queue: $0, completion: $1) }
        #expect(second.value == nil && second.error == nil)
        #expect(cache.statistics.misses == 2)
    }

    /// SPTPersistentCacheTests.m:1704. A miss is delivered as `.notFound`, without record or
    /// error, on the queue given.
    @Test func testDispatchEmptyResponse() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let queue = DispatchQueue(label: "spt-conformance.empty")
        let (response, onQueue) = await Self.response(on: queue) { cache.record(forKey: "missing", queue: $0, completion: $1) }
        guard case .notFound = response else {
            Issue.record("expected NotFound, got \(response)")
            return
        }
        #expect(response.value == nil && response.error == nil)
        #expect(onQueue)
    }

    /// SPTPersistentCacheTests.m:1726. Objective-C plumbing, as the test above, for errors: a
    /// failing call whose completion ignores the response still runs, and changes nothing.
    @Test func testDispatchErrorWithNilCallbackDoesNothing() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder) { $0.maximumConcurrentOperations = 1 }
        defer { cache.close() }
        let count = cache.count
        cache.store(Data("x".utf8), forKey: "a/b", queue: callbackQueue) { _ in }
        let second = await callback { cache.store(Data("y".utf8), forKey: "../c", queue: $0, completion: $1) }
        #expect(second.error?.code == .invalidKey)
        #expect(cache.count == count && cache.statistics.insertions == 0)
    }

    /// SPTPersistentCacheTests.m:1740. A failure is delivered as `.failure(error)`, without a
    /// record, on the queue given (SPT's test error is `NotEnoughDataToGetHeader`; a corrupt
    /// record is a miss in Larder, so the failure here is a key that is no file name).
    @Test func testDispatchError() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let queue = DispatchQueue(label: "spt-conformance.error")
        let (response, onQueue) = await Self.response(on: queue) { cache.record(forKey: "a/b", queue: $0, completion: $1) }
        #expect(response.error?.code == .invalidKey && response.error?.key == "a/b")
        #expect(response.value == nil)
        #expect(onQueue)
    }

    /// SPTPersistentCacheTests.m:1770. `SPTPersistentCacheSafeDispatch(nil, block)` on the main
    /// thread runs the block at once. Difference: Larder never calls a completion from within the
    /// call, even when the caller is on the queue it names: the completion runs after the
    /// caller's block returns.
    @Test func testDispatchBlockSync() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let queue = DispatchQueue(label: "spt-conformance.sync")
        let returned = Box(false)
        let sawReturn: Bool = await withCheckedContinuation { continuation in
            queue.async {
                cache.record(forKey: "missing", queue: queue) { _ in continuation.resume(returning: returned.value) }
                returned.value = true
            }
        }
        #expect(sawReturn)
    }

    /// SPTPersistentCacheTests.m:1785. The block runs on the queue given, as its queue-specific
    /// value shows.
    @Test func testDispatchBlockAsync() async throws {
        let folder = try await SPTImageFolder.make()
        defer { folder.remove() }
        let cache = try Self.setUpCache(folder)
        defer { cache.close() }
        let queue = DispatchQueue(label: "com.spotify.persistentcache.proposed-queue")
        let key = folder.imageNames[0]
        let (response, onQueue) = await Self.response(on: queue) { cache.record(forKey: key, queue: $0, completion: $1) }
        try folder.checkRecord(response, index: 0)
        #expect(onQueue)
    }
}
