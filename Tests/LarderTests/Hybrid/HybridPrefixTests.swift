import Dispatch
import Foundation
import Testing
@testable import Larder

/// `HybridCache.remove(withPrefix:)`: both tiers, memory-only entries, concurrent stores.
@Suite struct HybridPrefixTests {
    @Test(arguments: [KeyEncoding.verbatim, .sha256])
    func removesThePrefixFromBothTiers(encoding: KeyEncoding) throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url, encoding: encoding))
        try cache.store(bytes("both"), forKey: "u1-a")
        try cache.store(bytes("disk"), forKey: "u1-b", in: .disk)
        try cache.store(bytes("memory"), forKey: "u1-c", in: .memory)
        try cache.store(bytes("other"), forKey: "u2-a")
        let removed = try cache.remove(withPrefix: "u1-")
        #expect(removed.sorted() == ["u1-a", "u1-b", "u1-c"])
        for key in ["u1-a", "u1-b", "u1-c"] {
            #expect(try cache.value(forKey: key) == nil)
            #expect(!cache.contains(key))
        }
        #expect(cache.memory.keys() == ["u2-a"])
        #expect(try cache.value(forKey: "u2-a", from: .memory) == bytes("other"))
        #expect(try cache.disk.keys() == ["u2-a"])
        #expect(try cache.remove(withPrefix: "u1-") == [])
    }

    @Test func underConcurrentStoresAndReadsNoRemovedValueComesBack() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let old = (0 ..< 200).map { "old/\($0)" }
        for key in old { try cache.store(bytes(key), forKey: key) }
        let kept = (0 ..< 200).map { "keep/\($0)" }
        let failures = LarderMutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            do {
                switch worker {
                case 0: try cache.remove(withPrefix: "old/")
                case 1: for key in kept { try cache.store(bytes(key), forKey: key) }
                default: for key in old { _ = try cache.value(forKey: key) }  // reads that would promote
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        for key in old { #expect(try cache.value(forKey: key) == nil) }
        #expect(!cache.memory.keys().contains { $0.hasPrefix("old/") })
        for key in kept { #expect(try cache.value(forKey: key) == bytes(key)) }
        #expect(DiskAudit.indexMismatches(cache.disk).isEmpty)
    }

    @Test func theAsyncFormRemovesToo() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        try await cache.store(bytes("a"), forKey: "feed/1")
        try await cache.store(bytes("b"), forKey: "feed/2", in: .memory)
        #expect(try await cache.remove(withPrefix: "feed/").sorted() == ["feed/1", "feed/2"])
        #expect(cache.memory.count == 0 && cache.disk.count == 0)
    }

    @Test func theCallbackFormReportsOnTheQueueGiven() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        try cache.store(bytes("a"), forKey: "feed/1")
        let marked = MarkedQueue("larder.test.hybrid-prefix")
        let response = awaitCallback { completion in cache.remove(withPrefix: "feed/", queue: marked.queue, completion: completion) }
        #expect(response.response.value == ["feed/1"] && response.queue == marked.name)
    }

    @Test func aLoadAfterTheRemovalLoadsAgain() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let loader = CountingLoader()
        #expect(try await cache.value(forKey: "user/7/avatar", orLoad: loader.load) == bytes("loaded 1"))
        try await cache.remove(withPrefix: "user/7/")
        #expect(try await cache.value(forKey: "user/7/avatar", orLoad: loader.load) == bytes("loaded 2"))
        #expect(loader.count == 2)
    }
}
