import Foundation
import Synchronization
import Testing
@testable import Larder

/// JSON, counting the decodes it performs.
final class CountingCoder: Sendable {
    private let count = Atomic<Int>(0)
    var decodes: Int { count.load(ordering: .relaxed) }

    var coder: CacheCoder {
        CacheCoder(
            encode: { try JSONEncoder().encode($0) },
            decode: { [self] type, data in
                count.add(1, ordering: .relaxed)
                return try JSONDecoder().decode(type, from: data)
            })
    }
}

@Suite struct TypedCacheTests {
    let ada = Profile(name: "Ada", age: 36, tags: ["math", "engines"])
    let grace = Profile(name: "Grace", age: 85, tags: ["cobol"])

    @Test("A typed view round-trips values through memory and the hybrid's disk")
    func roundTrips() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        let profiles = try cache.typed(Profile.self)
        try profiles.store(ada, forKey: "ada")
        #expect(try profiles.value(forKey: "ada") == ada)
        #expect(try profiles.value(forKey: "ada", from: .disk) == ada)
        #expect(try profiles.value(forKey: "absent") == nil)
        #expect(profiles.contains("ada") && !profiles.contains("absent"))
        // The same entry, through the hybrid and through another view.
        #expect(try cache.value(Profile.self, forKey: "ada") == ada)
        #expect(try cache.typed(Profile.self).value(forKey: "ada") == ada)
        // Stored in memory only: the disk never sees it.
        try profiles.store(grace, forKey: "grace", in: .memory)
        #expect(try profiles.value(forKey: "grace") == grace)
        #expect(try cache.disk.record(forKey: "grace") == nil)
        #expect(try profiles.remove(forKey: "ada"))
        #expect(try profiles.value(forKey: "ada") == nil)
        #expect(try cache.value(forKey: "ada") == nil)
    }

    @Test("A memory hit returns the value without decoding; a disk hit decodes once")
    func memoryHitsDoNotDecode() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let counting = CountingCoder()
        let cache = try HybridCache(options: hybridOptions(dir.url))
        let profiles = try cache.typed(Profile.self, coder: counting.coder)
        try profiles.store(ada, forKey: "ada")
        for _ in 0 ..< 5 { #expect(try profiles.value(forKey: "ada") == ada) }
        #expect(counting.decodes == 0)
        #expect(profiles.memory.statistics.hits == 5)

        // A new view starts empty: one decode from disk, then memory hits.
        let other = try cache.typed(Profile.self, coder: counting.coder)
        for _ in 0 ..< 3 { #expect(try other.value(forKey: "ada") == ada) }
        #expect(counting.decodes == 1)
        #expect(cache.statistics.diskHits == 1)
        // Reading the disk alone decodes every time, and keeps nothing in memory.
        #expect(try other.value(forKey: "ada", from: .disk) == ada)
        #expect(counting.decodes == 2)
    }

    @Test("A value's cost is its encoded size, stored or read from disk")
    func costIsEncodedSize() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        let profiles = try cache.typed(Profile.self)
        let adaSize = try JSONEncoder().encode(ada).count
        let graceSize = try JSONEncoder().encode(grace).count
        try profiles.store(ada, forKey: "ada")
        #expect(profiles.memory.totalCost == adaSize)
        try cache.store(grace, forKey: "grace")  // through the hybrid: bytes
        _ = try profiles.value(forKey: "grace")
        #expect(profiles.memory.totalCost == adaSize + graceSize)
        // The cost limit binds on encoded bytes.
        let small = try cache.typed(Profile.self, totalCostLimit: adaSize)
        _ = try small.value(forKey: "ada")
        _ = try small.value(forKey: "grace")
        #expect(small.memory.keys() == (graceSize <= adaSize ? ["grace"] : ["ada"]))
        #expect(try cache.typed(Profile.self).memory.totalCostLimit == cache.memory.totalCostLimit)
    }

    @Test("Writes through the hybrid and through views drop the other memory tiers' copies")
    func untypedAndTypedWrites() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let counting = CountingCoder()
        let cache = try HybridCache(options: hybridOptions(dir.url))
        let profiles = try cache.typed(Profile.self, coder: counting.coder)
        let others = try cache.typed(Profile.self, coder: counting.coder)

        try cache.store(ada, forKey: "k")
        #expect(cache.memory.contains("k"))
        try profiles.store(grace, forKey: "k")
        #expect(!cache.memory.contains("k"))  // the hybrid's bytes were Ada's
        #expect(try cache.value(Profile.self, forKey: "k") == grace)
        #expect(try others.value(forKey: "k") == grace)
        #expect(others.memory.contains("k"))

        try cache.store(ada, forKey: "k")  // through the hybrid again
        #expect(!profiles.memory.contains("k") && !others.memory.contains("k"))
        #expect(try profiles.value(forKey: "k") == ada)

        try others.store(grace, forKey: "k")  // view to view
        #expect(!profiles.memory.contains("k"))
        #expect(try profiles.value(forKey: "k") == grace)

        // Removal, touch, lock changes and removeAll through the hybrid reach the views too.
        _ = try profiles.value(forKey: "k")
        try cache.touch(forKey: "k")
        #expect(!profiles.memory.contains("k") && !others.memory.contains("k"))
        _ = try profiles.value(forKey: "k")
        try cache.lock(forKeys: ["k"])
        #expect(!profiles.memory.contains("k"))
        _ = try profiles.value(forKey: "k")
        try cache.remove(withPrefix: "k")
        #expect(!profiles.memory.contains("k"))
        #expect(try profiles.value(forKey: "k") == nil)
        try profiles.store(ada, forKey: "k2")
        try cache.removeAll()
        #expect(profiles.memory.count == 0)
        try profiles.store(ada, forKey: "k3")
        #expect(try cache.remove(forKey: "k3"))
        #expect(!profiles.memory.contains("k3"))
    }

    @Test("A view's memory copy expires with its disk record")
    func expiresWithDisk() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        let profiles = try cache.typed(Profile.self)
        try profiles.store(ada, forKey: "ada", expiry: .seconds(60))
        clock.advance(by: 59)
        #expect(try profiles.value(forKey: "ada") == ada)
        clock.advance(by: 2)
        #expect(try profiles.value(forKey: "ada") == nil)
        #expect(profiles.memory.statistics.expirations == 1)
    }

    @Test("Bytes that do not decode throw, naming the key and type")
    func decodingFailure() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.store(bytes("not json"), forKey: "garbage")
        let profiles = try cache.typed(Profile.self)
        let error = #expect(throws: CacheError.self) { try profiles.value(forKey: "garbage") }
        #expect(error?.code == .decodingFailed)
        #expect(error?.key == "garbage")
        #expect(!profiles.memory.contains("garbage"))
    }

    @Test("The async twins round-trip and answer memory hits without decoding")
    func asyncTwins() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let counting = CountingCoder()
        let cache = try HybridCache(options: hybridOptions(dir.url))
        let profiles = try cache.typed(Profile.self, coder: counting.coder)
        try await profiles.store(ada, forKey: "ada")
        #expect(try await profiles.value(forKey: "ada") == ada)
        #expect(counting.decodes == 0)
        let other = try cache.typed(Profile.self, coder: counting.coder)
        #expect(try await other.value(forKey: "ada") == ada)
        #expect(counting.decodes == 1)
        #expect(try await other.touch(forKey: "ada"))
        #expect(try await other.remove(forKeys: ["ada", "absent"]) == ["ada"])
        #expect(try await profiles.value(forKey: "ada") == nil)
        #expect(try await profiles.remove(forKey: "ada") == false)
    }

    @Test("A view's memory responds to pressure with its hybrid's")
    func viewsRespondToPressure() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (cache, pressure) = try hybridUnderDrivenPressure(dir.url)
        let profiles = try cache.typed(Profile.self)
        try profiles.store(ada, forKey: "ada")
        #expect(pressure.center.registeredCount == 2)
        pressure.fire(.critical)
        #expect(profiles.memory.count == 0)
        #expect(try profiles.value(forKey: "ada") == ada)

        let quiet = try HybridCache(options: HybridCacheOptions(disk: testOptions(dir.url.appendingPathComponent("quiet"))))
        quiet.memory.respondsToMemoryPressure = false
        #expect(try !quiet.typed(Profile.self).memory.respondsToMemoryPressure)
    }
}
