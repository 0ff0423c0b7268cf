import Foundation
import Testing
@testable import Larder

/// Which form of a call Swift picks, as the DocC article "Sync and async" states it: in an
/// `async` function, `try await cache.call(...)` is the `async` twin (it runs on the cache's own
/// queue and honours cancellation); in a synchronous function, `try cache.call(...)` is the
/// blocking call. A cancelled task tells them apart: only the `async` twin throws `cancelled`.
@Suite struct SyncAndAsyncTests {
    /// The error `body` throws, or `nil`.
    static func thrown<T>(_ body: () async throws(CacheError) -> T) async -> CacheError? {
        do throws(CacheError) {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }

    /// A synchronous function, as a caller's own would be: Swift picks the blocking call.
    static func readBlocking(_ cache: HybridCache, key: String) throws(CacheError) -> Data? {
        try cache.value(forKey: key)
    }

    @Test func anAwaitedCallInAnAsyncFunctionIsTheAsyncTwin() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        defer { cache.close() }
        // On disk only, so that a read must reach the disk's queue.
        try await cache.store(bytes("x"), forKey: "k", in: .disk)

        let outcome = await Task { () async -> (async: CacheError?, blocking: Data?, disk: CacheError?) in
            withUnsafeCurrentTask { $0?.cancel() }
            let async = await Self.thrown { () async throws(CacheError) in try await cache.value(forKey: "k") }
            let disk = await Self.thrown { () async throws(CacheError) in try await cache.disk.record(forKey: "k") }
            let blocking = try? Self.readBlocking(cache, key: "k")
            return (async, blocking, disk)
        }.value
        #expect(outcome.async?.code == .cancelled)
        #expect(outcome.disk?.code == .cancelled)
        #expect(outcome.blocking == bytes("x"))
    }

    @Test func theSameCallsRunUncancelled() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        defer { cache.close() }
        try await cache.store(bytes("x"), forKey: "k", in: .disk)
        #expect(try await cache.value(forKey: "k") == bytes("x"))
        #expect(try await cache.disk.record(forKey: "k")?.data == bytes("x"))
    }
}
