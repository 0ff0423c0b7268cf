import Foundation
import Testing
@testable import Larder

/// `TypedCache.value(forKey:expiry:staleWindows:orLoad:)`: the hybrid's load-through, with hits
/// in the view's memory answered without decoding.
@Suite struct TypedLoadThroughTests {
    let ada = Profile(name: "Ada", age: 36, tags: ["math"])

    @Test func aLoadIsDecodedOnceAndAMemoryHitNotAtAll() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        defer { cache.close() }
        let counting = CountingCoder()
        let profiles = try cache.typed(Profile.self, coder: counting.coder)
        let loads = CountingLoader()
        let ada = self.ada
        let load: @Sendable () async throws -> Profile = {
            _ = try await loads.load()
            return ada
        }
        #expect(try await profiles.value(forKey: "ada", expiry: .seconds(60), orLoad: load) == ada)
        #expect(loads.count == 1)
        #expect(counting.decodes == 1, "the loaded bytes, decoded once")
        for _ in 0 ..< 5 { #expect(try await profiles.value(forKey: "ada", expiry: .seconds(60), orLoad: load) == ada) }
        #expect(loads.count == 1, "hits do not load")
        #expect(counting.decodes == 1, "hits in the view's memory do not decode")
        // The loaded value is stored for the hybrid and other views too.
        #expect(try await cache.value(Profile.self, forKey: "ada") == ada)
    }

    @Test func aDiskHitIsDecodedOnceThenServedFromMemory() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try HybridCache(options: hybridOptions(dir.url, clock: clock))
        defer { cache.close() }
        try await cache.store(try JSONEncoder().encode(ada), forKey: "ada", in: .disk, expiry: .seconds(100))
        let counting = CountingCoder()
        let profiles = try cache.typed(Profile.self, coder: counting.coder)
        let loads = CountingLoader()
        let load: @Sendable () async throws -> Profile = {
            _ = try await loads.load()
            return Profile(name: "loaded", age: 0, tags: [])
        }
        #expect(try await profiles.value(forKey: "ada", orLoad: load) == ada)
        #expect(try await profiles.value(forKey: "ada", orLoad: load) == ada)
        #expect(loads.count == 0)
        #expect(counting.decodes == 1)
        // Kept until the entry's own expiry, not longer.
        clock.advance(by: 101)
        #expect(try await profiles.value(forKey: "ada", orLoad: load).name == "loaded")
        #expect(loads.count == 1)
    }

    @Test func aStaleCopyIsServedButNotKept() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = hybridOptions(dir.url, clock: clock)
        options.staleWindows = StaleWindows(ifError: 60)
        let cache = try HybridCache(options: options)
        defer { cache.close() }
        try await cache.store(try JSONEncoder().encode(ada), forKey: "ada", in: .disk, expiry: .seconds(10))
        clock.advance(by: 20)
        let counting = CountingCoder()
        let profiles = try cache.typed(Profile.self, coder: counting.coder)
        let failing = CountingLoader(failure: LoaderFailure())
        let load: @Sendable () async throws -> Profile = {
            _ = try await failing.load()
            return Profile(name: "never", age: 0, tags: [])
        }
        #expect(try await profiles.value(forKey: "ada", orLoad: load) == ada, "stale if error")
        #expect(profiles.memory.value(forKey: "ada") == nil, "a stale copy is not kept as a live value")
    }
}
