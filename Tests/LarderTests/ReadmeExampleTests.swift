import Foundation
import Testing
@testable import Larder

/// The README's example, run as written (with a temporary folder for `cachesURL`), so that the
/// README stays true.
@Suite struct ReadmeExampleTests {
    struct Profile: Codable, Equatable, Sendable {
        var name: String
    }

    /// The README's calls in a synchronous context, where they pick the blocking overloads (in an
    /// async function Swift picks their `async` twins, as the README's `cover(_:)` shows).
    @Test func theReadmeExampleRuns() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cachesURL = temporary.url
        let pngData = Data([0x89, 0x50, 0x4E, 0x47])
        let profile = Profile(name: "Ada")
        let data = Data("avatar".utf8)

        var options = HybridCacheOptions(directory: cachesURL.appendingPathComponent("images"))
        options.memory.countLimit = 500
        options.disk.sizeLimit = 200 << 20
        let cache = try HybridCache(options: options)
        try cache.store(pngData, forKey: "https://example.com/a.png", expiry: .seconds(3600))
        let png = try cache.value(forKey: "https://example.com/a.png")
        try cache.store(profile, forKey: "profile")
        let me = try cache.value(Profile.self, forKey: "profile")
        #expect(png == pngData && me == profile)
        let profiles = try cache.typed(Profile.self)
        let hit = try profiles.value(forKey: "profile")
        #expect(hit == profile && profiles.memory.contains("profile"))

        let memory = try MemoryCache<String, Data>(countLimit: 1_000, totalCostLimit: 64 << 20, policy: .recommended)
        try memory.store(data, forKey: "avatar", cost: data.count)
        #expect(memory.value(forKey: "avatar") == data)

        let disk = try DiskCache(options: DiskCacheOptions(directory: cachesURL.appendingPathComponent("records")))
        try disk.store(data, forKey: "avatar", locked: true)
        let record = try disk.record(forKey: "avatar")
        disk.scheduleGarbageCollection()
        #expect(record?.data == data && record?.isLocked == true && disk.isGarbageCollectionScheduled)
    }

    /// The README's async function, as written: its calls are the `async` twins.
    @Test func theReadmeAsyncFunctionRuns() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: HybridCacheOptions(directory: temporary.url))
        @Sendable func fetchCover(_ id: Int) async throws -> Data { Data("cover \(id)".utf8) }
        try await cache.store(Data([1, 2, 3]), forKey: "https://example.com/a.png")
        try await cache.store(Data([1]), forKey: "user/42/avatar")

        func cover(_ id: Int) async throws -> Data {
            let later = try await cache.value(forKey: "https://example.com/a.png")
            #expect(later == Data([1, 2, 3]))
            try await cache.remove(withPrefix: "user/\(id)/")
            return try await cache.value(forKey: "cover/\(id)", expiry: .seconds(3600)) {
                try await fetchCover(id)
            }
        }

        #expect(try await cover(42) == Data("cover 42".utf8))
        #expect(cache.statistics.loads == 1 && !cache.contains("user/42/avatar"))
    }
}
