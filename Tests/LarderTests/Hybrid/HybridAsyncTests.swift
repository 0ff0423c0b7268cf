import Dispatch
import Foundation
import Testing
@testable import Larder

@Suite struct HybridAsyncTests {
    @Test func asyncTwinsRoundTrip() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try await cache.store(bytes("x"), forKey: "k")
        #expect(try await cache.value(forKey: "k") == bytes("x"))
        #expect(try await cache.value(forKey: "k", from: .disk) == bytes("x"))
        try await cache.store(Profile(name: "a", age: 1, tags: []), forKey: "p", expiry: .seconds(60))
        #expect(try await cache.value(Profile.self, forKey: "p")?.age == 1)
        #expect(try await cache.touch(forKey: "k"))
        #expect(try await cache.lock(forKeys: ["k"]) == ["k"])
        #expect(try await cache.unlock(forKeys: ["k"]) == ["k"])
        #expect(try await cache.remove(forKey: "k"))
        #expect(try await cache.value(forKey: "k") == nil)
        #expect(try await cache.remove(forKeys: ["k", "p"]) == ["p"])
        try await cache.store(Profile(name: "b", age: 2, tags: []), forKey: "p")
        try await cache.removeAll()
        #expect(try await cache.value(forKey: "p") == nil)

        let disk = cache.disk
        try await disk.store(bytes("d"), forKey: "d1", expiry: .seconds(10))
        #expect(try await disk.record(forKey: "d1")?.expiry == .seconds(10))
        try await disk.store([1, 2], forKey: "d2")
        #expect(try await disk.value([Int].self, forKey: "d2") == [1, 2])
        #expect(try await disk.keys(withPrefix: "d") == ["d1", "d2"])
        #expect(try await disk.lock(forKeys: ["d1"]) == ["d1"])
        try await disk.removeAllUnlocked()
        #expect(try await disk.keys(withPrefix: "") == ["d1"])
        try await disk.removeAllLocked()
        #expect(disk.count == 0)
        _ = try await disk.collectGarbage()
        try await disk.store(bytes("zz"), forKey: "bad")
        await #expect(throws: CacheError.self) { try await disk.value([Int].self, forKey: "bad") }
    }

    @Test func asyncTwinsRejectInvalidExpiriesAndKeepThePreviousValue() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try await cache.store(bytes("old"), forKey: "k")
        for expiry in invalidExpiries {
            await #expect(throws: CacheError.self, "\(expiry)") { try await cache.store(bytes("new"), forKey: "k", expiry: expiry) }
            await #expect(throws: CacheError.self, "\(expiry)") { try await cache.disk.store(bytes("new"), forKey: "k", expiry: expiry) }
            do {
                try await cache.store(Profile(name: "n", age: 1, tags: []), forKey: "k", expiry: expiry)
                Issue.record("\(expiry) was accepted")
            } catch {
                #expect(error.code == .invalidArgument, "\(expiry)")
            }
        }
        #expect(try await cache.value(forKey: "k") == bytes("old"))
        #expect(try await cache.disk.value(forKey: "k") == bytes("old"))
    }

    @Test func blockingWorkRunsOnTheCachesOwnQueue() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let events = EventLog()
        var options = hybridOptions(dir.url)
        options.disk.countLimit = 1
        options.disk.eventHandler = { event in
            // Events are emitted on the thread doing the work: record which queue that is.
            if case .recordEvicted = event { events.handler(.ioError(operation: MarkedQueue.current ?? "elsewhere", path: "", errno: 0)) }
        }
        let cache = try HybridCache(options: options)
        _ = cache.disk.count  // wait for the index, so that limits apply
        cache.disk.ioQueue.queue.setSpecific(key: MarkedQueue.key, value: "larder.disk")
        try await cache.store(bytes("a"), forKey: "a")
        try await cache.store(bytes("b"), forKey: "b")
        try await cache.disk.store(bytes("c"), forKey: "c")
        #expect(
            events.all == [
                .ioError(operation: "larder.disk", path: "", errno: 0),
                .ioError(operation: "larder.disk", path: "", errno: 0),
            ])
    }

    @Test func cancelledTasksDoNoWork() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try await cache.disk.store(bytes("on disk"), forKey: "d")

        // Cancelled before the call.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await cache.store(bytes("x"), forKey: "early")
        }
        // Cancelled while the work waits in the suspended queue.
        _ = cache.disk.count  // the index build also runs on the queue: let it finish first
        cache.disk.ioQueue.queue.suspend()
        let queued = Task { try await cache.disk.store(bytes("y"), forKey: "queued") }
        queued.cancel()
        let read = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await cache.value(forKey: "d")
        }
        cache.disk.ioQueue.queue.resume()
        for result in [await early.result.map { _ in nil as Data? }, await queued.result.map { _ in nil as Data? }, await read.result] {
            #expect(throws: CacheError.self) { _ = try result.get() }
            if case .failure(let error as CacheError) = result { #expect(error.code == .cancelled) }
        }
        #expect(!cache.disk.contains("early") && !cache.disk.contains("queued"))
        #expect(cache.memory.value(forKey: "d") == nil)  // the disk read never happened, so nothing was promoted
    }

    @Test func callbacksDeliverResponsesOnTheQueueGiven() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url, encoding: .verbatim))
        let queue = MarkedQueue("callbacks")

        let stored = awaitCallback { cache.store(bytes("x"), forKey: "k", queue: queue.queue, completion: $0) }
        #expect(stored.queue == "callbacks" && stored.response.value != nil)
        let loaded = awaitCallback { cache.value(forKey: "k", queue: queue.queue, completion: $0) }
        #expect(loaded.queue == "callbacks" && loaded.response.value == bytes("x"))
        let missing = awaitCallback { cache.value(forKey: "absent", queue: queue.queue, completion: $0) }
        guard case .notFound = missing.response else {
            Issue.record("expected notFound, got \(missing.response)")
            return
        }
        let bad = awaitCallback { cache.value(Profile.self, forKey: "k", queue: queue.queue, completion: $0) }
        #expect(bad.response.error?.code == .decodingFailed && bad.queue == "callbacks")
        let invalid = awaitCallback { cache.store(bytes("x"), forKey: "../escape", queue: queue.queue, completion: $0) }
        #expect(invalid.response.error?.code == .invalidKey)
        #expect(awaitCallback { cache.touch(forKey: "k", queue: queue.queue, completion: $0) }.response.value == true)
        #expect(awaitCallback { cache.lock(forKeys: ["k"], queue: queue.queue, completion: $0) }.response.value == ["k"])
        #expect(awaitCallback { cache.unlock(forKeys: ["k"], queue: queue.queue, completion: $0) }.response.value == ["k"])
        #expect(awaitCallback { cache.remove(forKey: "k", queue: queue.queue, completion: $0) }.response.value == true)
        #expect(try cache.value(forKey: "k") == nil)
        // Removing an absent key delivers what the synchronous call returns.
        #expect(awaitCallback { cache.remove(forKey: "k", queue: queue.queue, completion: $0) }.response.value == false)

        // The disk tier's SPT-shaped calls.
        let disk = cache.disk
        _ = awaitCallback { disk.store(bytes("r"), forKey: "r", expiry: .seconds(5), locked: true, queue: queue.queue, completion: $0) }
        let record = awaitCallback { disk.record(forKey: "r", queue: queue.queue, completion: $0) }
        #expect(record.queue == "callbacks" && record.response.value?.data == bytes("r") && record.response.value?.isLocked == true)
        #expect(awaitCallback { disk.touch(forKey: "absent", queue: queue.queue, completion: $0) }.response.value == false)
        #expect(awaitCallback { disk.unlock(forKeys: ["r"], queue: queue.queue, completion: $0) }.response.value == ["r"])
        #expect(awaitCallback { disk.collectGarbage(queue: queue.queue, completion: $0) }.response.value != nil)
        _ = awaitCallback { disk.removeAll(queue: queue.queue, completion: $0) }
        #expect(disk.count == 0)
    }
}
