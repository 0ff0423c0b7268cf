import Foundation
import Testing
@testable import Larder

/// What the SwiftyCache migration guide (MigratingFromSwiftyCache.md) says of `MemoryCache`.
@Suite struct SwiftyCacheMigrationTests {
    @Test func swiftyCachesReadmeExampleEvictsTheSameKey() throws {
        let cache = try MemoryCache<String, Int>(countLimit: 3)
        try cache.store(1, forKey: "A")
        try cache.store(2, forKey: "B")
        try cache.store(3, forKey: "C")
        _ = cache.value(forKey: "A")
        try cache.store(4, forKey: "D")
        #expect(cache.keys() == ["C", "A", "D"])
        // `contains` is not a use: the order stays.
        #expect(cache.contains("C"))
        #expect(cache.keys() == ["C", "A", "D"])
    }

    @Test func aLimitOfZeroMeansNoLimit() throws {
        let cache = try MemoryCache<Int, Int>(countLimit: 0, totalCostLimit: 0)
        for i in 0 ..< 500 { try cache.store(i, forKey: i, cost: 1000) }
        #expect(cache.count == 500)
        #expect(cache.totalCost == 500_000)
    }

    @Test func anEntryCostlierThanTheLimitIsRefusedAndEvictsNothingElse() throws {
        let recorder = EvictionRecorder<String, String>()
        let cache = try MemoryCache<String, String>(totalCostLimit: 100, evictionHandler: recorder.handler)
        try cache.store("a", forKey: "a", cost: 50)
        try cache.store("b", forKey: "b", cost: 40)
        try cache.store("c", forKey: "c", cost: 150)
        #expect(cache.keys() == ["a", "b"])
        #expect(cache.totalCost == 90)
        // A too costly replacement removes the value it replaces, and only that one.
        try cache.store("a2", forKey: "a", cost: 150)
        #expect(cache.keys() == ["b"])
        #expect(cache.value(forKey: "a") == nil)
        #expect(recorder.events.isEmpty)
    }

    @Test func aWarningHalvesACriticalEventEmptiesAndSwiftyCachesWayEmptiesOnAny() throws {
        let recorder = EvictionRecorder<Int, Int>()
        let cache = try MemoryCache<Int, Int>(evictionHandler: recorder.handler)
        for i in 0 ..< 10 { try cache.store(i, forKey: i, cost: 10) }
        cache.handleMemoryPressure(.warning)
        #expect(cache.keys() == Array(5 ..< 10))
        #expect(cache.totalCost == 50)
        cache.handleMemoryPressure(.critical)
        #expect(cache.count == 0)
        #expect(recorder.events.count == 10)
        #expect(recorder.events.allSatisfy { $0.reason == .memoryPressure })

        // The guide's SwiftyCache-like handler: every level answered as critical.
        let swiftyLike = try MemoryCache<Int, Int>()
        let handler: @Sendable (MemoryPressureLevel) -> Void = { _ in swiftyLike.handleMemoryPressure(.critical) }
        for i in 0 ..< 10 { try swiftyLike.store(i, forKey: i) }
        handler(.warning)
        #expect(swiftyLike.count == 0)
        #expect(!swiftyLike.isMonitoringMemoryPressure)
    }

    @Test func removeSaysWhetherAndRemoveAllCallsNoHandler() throws {
        let recorder = EvictionRecorder<String, Int>()
        let cache = try MemoryCache<String, Int>(evictionHandler: recorder.handler)
        try cache.store(1, forKey: "a")
        try cache.store(2, forKey: "b")
        #expect(cache.value(forKey: "a") == 1)
        #expect(cache.remove(forKey: "a"))
        #expect(!cache.remove(forKey: "a"))
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(recorder.events.isEmpty)
        let error = #expect(throws: CacheError.self) { try cache.store(3, forKey: "c", cost: -1) }
        #expect(error?.code == .invalidArgument)
    }

    @Test func loweringALimitEvictsAtOnce() throws {
        let cache = try MemoryCache<Int, Int>()
        for i in 0 ..< 5 { try cache.store(i, forKey: i, cost: 10) }
        try cache.setCountLimit(3)
        #expect(cache.keys() == [2, 3, 4])
        try cache.setTotalCostLimit(20)
        #expect(cache.keys() == [3, 4])
    }
}
