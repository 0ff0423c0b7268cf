import Dispatch
import Foundation
import Testing
@testable import Larder

/// Every throwing call of ``DiskCache`` and ``HybridCache`` that the README's table lists has three
/// forms: the blocking call, its `async` twin and its `queue:completion:` twin. Each test calls
/// every form, so that a missing twin fails to compile, and compares what each delivers with what
/// the blocking call returns.
@Suite struct TwinsTests {
    /// The queue the callback twins deliver on.
    static let delivery = DispatchQueue(label: "twins.callbacks")

    /// Starts a callback twin and waits for its one response.
    static func delivered<Value: Sendable>(
        _ call: (DispatchQueue, @escaping CacheCompletion<Value>) -> Void
    ) async -> CacheResponse<Value> {
        await withCheckedContinuation { continuation in
            call(delivery) { continuation.resume(returning: $0) }
        }
    }

    /// A blocking call, made from an async test as a synchronous function would make it.
    static func blocking<T>(_ body: () throws(CacheError) -> T) throws(CacheError) -> T { try body() }

    @Test func diskCacheHasEveryTwin() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let disk = try DiskCache(options: testOptions(dir.url))
        defer { disk.close() }
        let data = bytes("payload")

        // store
        try Self.blocking { () throws(CacheError) in try disk.store(data, forKey: "a") }
        try await disk.store(data, forKey: "b")
        #expect(await Self.delivered { disk.store(data, forKey: "c", queue: $0, completion: $1) }.value != nil)

        // value and record
        let values = [
            try Self.blocking { () throws(CacheError) in try disk.value(forKey: "a") },
            try await disk.value(forKey: "b"),
            await Self.delivered { disk.value(forKey: "c", queue: $0, completion: $1) }.value,
        ]
        #expect(values == [data, data, data])
        let records = [
            try Self.blocking { () throws(CacheError) in try disk.record(forKey: "a") }?.data,
            try await disk.record(forKey: "b")?.data,
            await Self.delivered { disk.record(forKey: "c", queue: $0, completion: $1) }.value?.data,
        ]
        #expect(records == [data, data, data])
        guard case .notFound = await Self.delivered({ disk.value(forKey: "absent", queue: $0, completion: $1) }) else {
            Issue.record("a load of an absent key delivers notFound, as the blocking call returns nil")
            return
        }

        // keys
        let keys = try Self.blocking { () throws(CacheError) in try disk.keys(withPrefix: "") }
        #expect(Set(keys) == ["a", "b", "c"])
        #expect(try await disk.keys(withPrefix: "") == keys)
        #expect(await Self.delivered { disk.keys(withPrefix: "", queue: $0, completion: $1) }.value == keys)

        // touch: present and absent, the same Bool from every form
        #expect(try Self.blocking { () throws(CacheError) in try disk.touch(forKey: "a") })
        #expect(try await disk.touch(forKey: "b"))
        #expect(await Self.delivered { disk.touch(forKey: "c", queue: $0, completion: $1) }.value == true)
        #expect(try !Self.blocking { () throws(CacheError) in try disk.touch(forKey: "absent") })
        #expect(try await !disk.touch(forKey: "absent"))
        #expect(await Self.delivered { disk.touch(forKey: "absent", queue: $0, completion: $1) }.value == false)

        // lock and unlock
        #expect(try Self.blocking { () throws(CacheError) in try disk.lock(forKeys: ["a"]) } == ["a"])
        #expect(try await disk.lock(forKeys: ["b"]) == ["b"])
        #expect(await Self.delivered { disk.lock(forKeys: ["c"], queue: $0, completion: $1) }.value == ["c"])
        #expect(try Self.blocking { () throws(CacheError) in try disk.unlock(forKeys: ["a"]) } == ["a"])
        #expect(try await disk.unlock(forKeys: ["b"]) == ["b"])
        #expect(await Self.delivered { disk.unlock(forKeys: ["c"], queue: $0, completion: $1) }.value == ["c"])

        // flush and collectGarbage
        _ = try Self.blocking { () throws(CacheError) in try disk.flush() }
        _ = try await disk.flush()
        #expect(await Self.delivered { disk.flush(queue: $0, completion: $1) }.error == nil)
        let report = try Self.blocking { () throws(CacheError) in try disk.collectGarbage() }
        #expect(report.remainingCount == 3)
        #expect(try await disk.collectGarbage().remainingCount == 3)
        #expect(await Self.delivered { disk.collectGarbage(queue: $0, completion: $1) }.value?.remainingCount == 3)

        // remove: present and absent
        #expect(try Self.blocking { () throws(CacheError) in try disk.remove(forKey: "a") })
        #expect(try await disk.remove(forKey: "b"))
        #expect(await Self.delivered { disk.remove(forKey: "c", queue: $0, completion: $1) }.value == true)
        #expect(try !Self.blocking { () throws(CacheError) in try disk.remove(forKey: "a") })
        #expect(try await !disk.remove(forKey: "b"))
        #expect(await Self.delivered { disk.remove(forKey: "c", queue: $0, completion: $1) }.value == false)

        // remove(forKeys:) and removeAll
        for key in ["d", "e", "f"] { try await disk.store(data, forKey: key) }
        #expect(try Self.blocking { () throws(CacheError) in try disk.remove(forKeys: ["d"]) } == ["d"])
        #expect(try await disk.remove(forKeys: ["e"]) == ["e"])
        #expect(await Self.delivered { disk.remove(forKeys: ["f"], queue: $0, completion: $1) }.value == ["f"])
        try await disk.store(data, forKey: "g")
        try Self.blocking { () throws(CacheError) in try disk.removeAll() }
        try await disk.removeAll()
        #expect(await Self.delivered { disk.removeAll(queue: $0, completion: $1) }.error == nil)
        #expect(disk.count == 0)
    }

    @Test func hybridCacheHasEveryTwin() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        defer { cache.close() }
        let data = bytes("payload")

        // store and value
        try Self.blocking { () throws(CacheError) in try cache.store(data, forKey: "a") }
        try await cache.store(data, forKey: "b")
        #expect(await Self.delivered { cache.store(data, forKey: "c", queue: $0, completion: $1) }.value != nil)
        let values = [
            try Self.blocking { () throws(CacheError) in try cache.value(forKey: "a") },
            try await cache.value(forKey: "b"),
            await Self.delivered { cache.value(forKey: "c", queue: $0, completion: $1) }.value,
        ]
        #expect(values == [data, data, data])

        // keys
        let keys = try Self.blocking { () throws(CacheError) in try cache.keys(withPrefix: "") }
        #expect(Set(keys) == ["a", "b", "c"])
        #expect(try await cache.keys(withPrefix: "") == keys)
        #expect(await Self.delivered { cache.keys(withPrefix: "", queue: $0, completion: $1) }.value == keys)

        // touch: present and absent
        #expect(try Self.blocking { () throws(CacheError) in try cache.touch(forKey: "a") })
        #expect(try await cache.touch(forKey: "b"))
        #expect(await Self.delivered { cache.touch(forKey: "c", queue: $0, completion: $1) }.value == true)
        #expect(await Self.delivered { cache.touch(forKey: "absent", queue: $0, completion: $1) }.value == false)

        // lock and unlock
        #expect(try Self.blocking { () throws(CacheError) in try cache.lock(forKeys: ["a"]) } == ["a"])
        #expect(try await cache.lock(forKeys: ["b"]) == ["b"])
        #expect(await Self.delivered { cache.lock(forKeys: ["c"], queue: $0, completion: $1) }.value == ["c"])
        #expect(try Self.blocking { () throws(CacheError) in try cache.unlock(forKeys: ["a"]) } == ["a"])
        #expect(try await cache.unlock(forKeys: ["b"]) == ["b"])
        #expect(await Self.delivered { cache.unlock(forKeys: ["c"], queue: $0, completion: $1) }.value == ["c"])

        // flush and collectGarbage
        _ = try Self.blocking { () throws(CacheError) in try cache.flush() }
        _ = try await cache.flush()
        #expect(await Self.delivered { cache.flush(queue: $0, completion: $1) }.error == nil)
        #expect(try Self.blocking { () throws(CacheError) in try cache.collectGarbage() }.remainingCount == 3)
        #expect(try await cache.collectGarbage().remainingCount == 3)
        #expect(await Self.delivered { cache.collectGarbage(queue: $0, completion: $1) }.value?.remainingCount == 3)

        // remove: present and absent
        #expect(try Self.blocking { () throws(CacheError) in try cache.remove(forKey: "a") })
        #expect(try await cache.remove(forKey: "b"))
        #expect(await Self.delivered { cache.remove(forKey: "c", queue: $0, completion: $1) }.value == true)
        #expect(try !Self.blocking { () throws(CacheError) in try cache.remove(forKey: "a") })
        #expect(try await !cache.remove(forKey: "b"))
        #expect(await Self.delivered { cache.remove(forKey: "c", queue: $0, completion: $1) }.value == false)

        // remove(forKeys:) and removeAll
        for key in ["d", "e", "f"] { try await cache.store(data, forKey: key) }
        #expect(try Self.blocking { () throws(CacheError) in try cache.remove(forKeys: ["d"]) } == ["d"])
        #expect(try await cache.remove(forKeys: ["e"]) == ["e"])
        #expect(await Self.delivered { cache.remove(forKeys: ["f"], queue: $0, completion: $1) }.value == ["f"])
        try await cache.store(data, forKey: "g")
        try Self.blocking { () throws(CacheError) in try cache.removeAll() }
        try await cache.removeAll()
        #expect(await Self.delivered { cache.removeAll(queue: $0, completion: $1) }.error == nil)
        #expect(!cache.contains("g"))
    }

    /// The one verb of each operation the tiers share: `keys()` and `keys(withPrefix:)`, and
    /// `collectGarbage()`, which drops expired entries on every tier.
    @Test func everyTierSpellsKeysAndCollectionAlike() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let memory = try MemoryCache<String, Data>(clock: clock)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        defer { cache.close() }
        for key in ["user/1", "user/2", "team/1"] {
            try memory.store(bytes(key), forKey: key, expiry: key == "user/2" ? .seconds(10) : .default)
            try cache.store(bytes(key), forKey: key, expiry: key == "user/2" ? .seconds(10) : .default)
        }
        #expect(memory.keys(withPrefix: "user/") == ["user/1", "user/2"])
        #expect(memory.keys(withPrefix: "") == memory.keys())
        #expect(try cache.keys(withPrefix: "user/").sorted() == ["user/1", "user/2"])
        #expect(try cache.keys().sorted() == cache.disk.keys().sorted())

        clock.advance(by: 11)
        #expect(memory.collectGarbage() == 1)
        #expect(memory.keys() == ["user/1", "team/1"])
        let report = try cache.collectGarbage()
        #expect(report.removed.map(\.key) == ["user/2"])
        // The hybrid's memory tier dropped its expired copy too, without a read.
        #expect(cache.memory.count == 2)
    }
}
