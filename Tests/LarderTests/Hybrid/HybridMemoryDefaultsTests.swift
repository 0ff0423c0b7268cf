import Foundation
import Testing
@testable import Larder

@Suite struct HybridMemoryDefaultsTests {
    @Test("The default cost limit is a tenth of physical memory, at most 256 MiB")
    func defaultLimitComputed() {
        let mebibyte: UInt64 = 1 << 20
        #expect(HybridCacheOptions.defaultMemoryCostLimit(physicalMemory: 512 * mebibyte) == 53_687_091)
        #expect(HybridCacheOptions.defaultMemoryCostLimit(physicalMemory: 1024 * mebibyte) == 107_374_182)
        #expect(HybridCacheOptions.defaultMemoryCostLimit(physicalMemory: 2560 * mebibyte) == 256 << 20)
        #expect(HybridCacheOptions.defaultMemoryCostLimit(physicalMemory: 16 << 30) == 256 << 20)
        #expect(HybridCacheOptions.defaultMemoryCostLimit(physicalMemory: 0) == 256 << 20)
        #expect(
            HybridCacheOptions.defaultMemoryCostLimit
                == HybridCacheOptions.defaultMemoryCostLimit(physicalMemory: ProcessMemory.budget))
        #expect(ProcessMemory.budget <= ProcessInfo.processInfo.physicalMemory)
    }

    @Test("A hybrid cache opened with default options has the limit and responds to pressure")
    func defaultsApplied() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let options = HybridCacheOptions(directory: dir.url)
        #expect(options.memory.totalCostLimit == HybridCacheOptions.defaultMemoryCostLimit)
        #expect(options.memory.respondsToMemoryPressure)
        let cache = try HybridCache(options: options)
        #expect(cache.memory.totalCostLimit == HybridCacheOptions.defaultMemoryCostLimit)
        #expect(cache.memory.totalCostLimit > 0)
        #expect(cache.memory.respondsToMemoryPressure)

        var unlimited = HybridCacheOptions(directory: dir.url.appendingPathComponent("other"))
        unlimited.memory.totalCostLimit = 0
        unlimited.memory.respondsToMemoryPressure = false
        let plain = try HybridCache(options: unlimited)
        #expect(plain.memory.totalCostLimit == 0)
        #expect(!plain.memory.respondsToMemoryPressure)
    }

    @Test("The limit binds: payloads beyond it are evicted from memory and served from disk")
    func limitBinds() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = hybridOptions(dir.url)
        options.memory.totalCostLimit = 10
        options.memory.policy = .lru
        let cache = try HybridCache(options: options)
        for key in ["a", "b", "c"] { try cache.store(Data(repeating: 1, count: 4), forKey: key) }
        #expect(cache.memory.keys() == ["b", "c"])
        #expect(try cache.value(forKey: "a") == Data(repeating: 1, count: 4))
        #expect(cache.statistics.diskHits == 1)
    }

    @Test("Memory pressure trims the hybrid's memory tier; the disk still serves")
    func pressureTrimsHybrid() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (cache, pressure) = try hybridUnderDrivenPressure(dir.url)
        for i in 0 ..< 6 { try cache.store(bytes("value \(i)"), forKey: "k\(i)") }
        #expect(pressure.center.registeredCount == 1)
        pressure.fire(.warning)
        #expect(cache.memory.count == 3)
        pressure.fire(.critical)
        #expect(cache.memory.count == 0)
        #expect(try cache.value(forKey: "k0") == bytes("value 0"))
        #expect(cache.statistics.diskHits == 1)
        #expect(cache.memory.statistics.evictions == [.memoryPressure: 6])
    }
}
