import Foundation
import Testing
@testable import Larder

@Suite struct HybridCodableTests {
    let profile = Profile(name: "Ada", age: 36, tags: ["math", "engines"])

    @Test func hybridRoundTripsAValueThroughBothTiers() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.store(profile, forKey: "me")
        #expect(try cache.value(Profile.self, forKey: "me") == profile)
        #expect(try cache.value(Profile.self, forKey: "me", from: .disk) == profile)
        // The default coder is JSON.
        let stored = try #require(try cache.disk.record(forKey: "me")).data
        #expect(try JSONDecoder().decode(Profile.self, from: stored) == profile)
        #expect(try cache.value(Profile.self, forKey: "absent") == nil)
        try cache.store([1, 2, 3], forKey: "numbers", in: .memory)
        #expect(try cache.value([Int].self, forKey: "numbers") == [1, 2, 3])
    }

    @Test func diskRoundTripsAValue() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        try cache.store(profile, forKey: "me", expiry: .seconds(30), locked: true)
        #expect(try cache.value(Profile.self, forKey: "me") == profile)
        #expect(try cache.record(forKey: "me")?.isLocked == true)
        #expect(try cache.value(Profile.self, forKey: "absent") == nil)
    }

    @Test func decodingFailureThrowsNamingKeyAndType() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        try cache.store(bytes("not json"), forKey: "garbage")
        try cache.store(profile, forKey: "me")
        for (key, cacheCall) in [
            ("garbage", { _ = try cache.value(Profile.self, forKey: "garbage") }),
            ("me", { _ = try cache.value([Int].self, forKey: "me") }),
            ("garbage", { _ = try cache.disk.value(Profile.self, forKey: "garbage") }),
        ] as [(String, () throws -> Void)] {
            let error = try #require(throws: CacheError.self) { try cacheCall() }
            #expect(error.code == .decodingFailed)
            #expect(error.key == key)
            #expect(error.message.contains(key))
            #expect(error.message.contains("Profile") || error.message.contains("Array<Swift.Int>"))
            #expect(error.underlying != nil)
        }
        // The bytes are still there: a failed decode is not a miss and removes nothing.
        #expect(try cache.value(forKey: "garbage") == bytes("not json"))
    }

    @Test func encodingFailureThrowsAndStoresNothing() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try HybridCache(options: hybridOptions(dir.url))
        let error = try #require(throws: CacheError.self) { try cache.store(Double.nan, forKey: "nan") }
        #expect(error.code == .encodingFailed && error.key == "nan" && error.message.contains("Double"))
        #expect(try cache.value(forKey: "nan") == nil)
    }

    @Test func coderIsPluggable() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let plist = CacheCoder(
            encode: { try PropertyListEncoder().encode($0) },
            decode: { type, data in try PropertyListDecoder().decode(type, from: data) })
        var options = hybridOptions(dir.url)
        options.coder = plist
        let cache = try HybridCache(options: options)
        try cache.store(profile, forKey: "me")
        let stored = try #require(try cache.disk.record(forKey: "me")).data
        #expect(stored.starts(with: Data("bplist".utf8)))
        #expect(try cache.value(Profile.self, forKey: "me") == profile)
        // A per-call coder overrides the cache's.
        try cache.store(profile, forKey: "json", coder: .json)
        #expect(try cache.value(Profile.self, forKey: "json", coder: .json) == profile)
        #expect(throws: CacheError.self) { try cache.value(Profile.self, forKey: "json") }
        // On the disk tier too.
        try cache.disk.store(profile, forKey: "disk", coder: plist)
        #expect(try cache.disk.value(Profile.self, forKey: "disk", coder: plist) == profile)
    }
}
