import Foundation
import Testing
@testable import Larder

/// The package's one rule for settings out of range: a setting given when a cache is made (an
/// initializer's parameter or an options value) makes it throw `invalidOptions`, naming the
/// setting and its value, and no cache is made; an argument to a call on a live cache (a limit
/// change, a trim) makes the call throw `invalidArgument` and changes nothing. Nothing traps.
@Suite struct InvalidSettingsTests {
    /// The error `body` throws, or `nil`.
    static func thrown(_ body: () throws(CacheError) -> Void) -> CacheError? {
        do throws(CacheError) {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test(
        "A memory cache's settings out of range throw invalidOptions naming them",
        arguments: [
            (MemoryCacheOptions(countLimit: -5), "countLimit", "-5"),
            (MemoryCacheOptions(totalCostLimit: -1), "totalCostLimit", "-1"),
            (MemoryCacheOptions(defaultExpiration: 0), "defaultExpiration", "0.0"),
            (MemoryCacheOptions(defaultExpiration: -3), "defaultExpiration", "-3.0"),
            (MemoryCacheOptions(defaultExpiration: .infinity), "defaultExpiration", "inf"),
            (MemoryCacheOptions(defaultExpiration: .nan), "defaultExpiration", "nan"),
        ])
    func memoryCacheOptionsOutOfRange(options: MemoryCacheOptions, setting: String, value: String) {
        let viaOptions = Self.thrown { () throws(CacheError) in _ = try MemoryCache<String, Int>(options: options) }
        let viaParameters = Self.thrown { () throws(CacheError) in
            _ = try MemoryCache<String, Int>(
                countLimit: options.countLimit, totalCostLimit: options.totalCostLimit, defaultExpiration: options.defaultExpiration)
        }
        for error in [viaOptions, viaParameters] {
            #expect(error?.code == .invalidOptions)
            #expect(error?.message.hasPrefix(setting) == true && error?.message.hasSuffix("not \(value)") == true)
        }
    }

    @Test func limitsInRangeAreKept() throws {
        let cache = try MemoryCache<String, Int>(options: MemoryCacheOptions(countLimit: 0, totalCostLimit: 7, defaultExpiration: 1e12))
        #expect(cache.countLimit == 0 && cache.totalCostLimit == 7 && cache.defaultExpiration == Expiry.maximumSeconds)
    }

    @Test func aLiveLimitChangeOutOfRangeThrowsInvalidArgumentAndChangesNothing() throws {
        let cache = try MemoryCache<String, Int>(countLimit: 3, totalCostLimit: 30)
        for key in ["a", "b", "c"] { try cache.store(1, forKey: key, cost: 5) }
        let count = Self.thrown { () throws(CacheError) in try cache.setCountLimit(-1) }
        #expect(count?.code == .invalidArgument && count?.message.contains("-1") == true)
        let cost = Self.thrown { () throws(CacheError) in try cache.setTotalCostLimit(-2) }
        #expect(cost?.code == .invalidArgument && cost?.message.contains("-2") == true)
        #expect(cache.countLimit == 3 && cache.totalCostLimit == 30)

        #expect(Self.thrown { () throws(CacheError) in try cache.trim(toCount: -1) }?.code == .invalidArgument)
        #expect(Self.thrown { () throws(CacheError) in try cache.trim(toCost: -1) }?.code == .invalidArgument)
        #expect(cache.keys() == ["a", "b", "c"])

        try cache.setCountLimit(2)
        #expect(cache.keys() == ["b", "c"])
        try cache.setTotalCostLimit(5)
        #expect(cache.keys() == ["c"])
    }

    @Test func hybridMemorySettingsAreNamedWithTheirGroup() {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = hybridOptions(dir.url)
        options.memory.countLimit = -5
        let error = Self.thrown { () throws(CacheError) in _ = try HybridCache(options: options) }
        #expect(error?.code == .invalidOptions)
        #expect(error?.message == "memory.countLimit must be 0 (no limit) or positive, not -5")
        // Nothing was opened: the folder holds nothing the disk tier makes.
        #expect((try? FileManager.default.contentsOfDirectory(atPath: dir.url.path))?.isEmpty == true)
    }

    @Test func settingsOfWrappedTiersAndTypedViewsThrow() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let disk = try DiskCache(options: testOptions(dir.url))
        defer { disk.close() }
        let memory = try MemoryCache<String, Data>()
        let stale = Self.thrown { () throws(CacheError) in
            _ = try HybridCache(memory: memory, disk: disk, staleWindows: StaleWindows(whileRevalidate: -1))
        }
        #expect(stale?.code == .invalidOptions)
        let hybrid = try HybridCache(memory: memory, disk: disk)
        let typed = Self.thrown { () throws(CacheError) in _ = try hybrid.typed(Profile.self, countLimit: -1) }
        #expect(typed?.code == .invalidOptions && typed?.message.contains("-1") == true)
        let typedCost = Self.thrown { () throws(CacheError) in _ = try hybrid.typed(Profile.self, totalCostLimit: -4) }
        #expect(typedCost?.code == .invalidOptions && typedCost?.message.contains("-4") == true)
    }
}
