import Foundation
import Synchronization
import Testing
@testable import Larder

/// A center whose monitor is driven by the test: `fire(_:)` plays the system's part.
final class DrivenPressure: Sendable {
    private final class Handler: Sendable {
        let deliver = LarderMutex<(@Sendable (MemoryPressureLevel) -> Void)?>(nil)
    }

    private let handler = Handler()
    let center: MemoryPressureCenter

    init() {
        let handler = self.handler
        center = MemoryPressureCenter { deliver in
            handler.deliver.withLock { $0 = deliver }
            // An inactive monitor: no pressure file, so no thread; the test delivers instead.
            return MemoryPressureMonitor(paths: ["/nonexistent/memory.pressure"], handler: deliver)
        }
    }

    /// Sends `level` the way the monitor's thread does (through the handler the center gave it).
    func fire(_ level: MemoryPressureLevel) {
        handler.deliver.withLock { $0 }?(level)
    }
}

@Suite struct MemoryPressureCenterTests {
    @Test("One monitor serves every registered cache, and an event trims each of them")
    func oneMonitorTrimsEveryCache() throws {
        let pressure = DrivenPressure()
        let numbers = try MemoryCache<Int, Int>()
        let texts = try MemoryCache<String, String>(policy: .tinyLFU)
        let other = try MemoryCache<Int, Int>()
        let bystander = try MemoryCache<Int, Int>()
        for cache in [numbers, other, bystander] {
            for i in 0 ..< 8 { try cache.store(i, forKey: i) }
        }
        for i in 0 ..< 8 { try texts.store("\(i)", forKey: "\(i)") }
        numbers.respondToMemoryPressure(true, center: pressure.center)
        texts.respondToMemoryPressure(true, center: pressure.center)
        other.respondToMemoryPressure(true, center: pressure.center)
        #expect(pressure.center.monitorsStarted == 1)
        #expect(pressure.center.registeredCount == 3)

        pressure.fire(.warning)
        #expect(numbers.count == 4)
        #expect(texts.count == 4)
        #expect(other.count == 4)
        #expect(bystander.count == 8)
        #expect(numbers.statistics.evictions == [.memoryPressure: 4])

        pressure.fire(.critical)
        #expect(numbers.count == 0)
        #expect(texts.count == 0)
        #expect(other.count == 0)
        #expect(bystander.count == 8)
        #expect(pressure.center.monitorsStarted == 1)
    }

    @Test("The property turns responding on and off; the monitor stops with the last cache")
    func settableProperty() throws {
        let pressure = DrivenPressure()
        let cache = try MemoryCache<Int, Int>()
        #expect(!cache.respondsToMemoryPressure)
        for i in 0 ..< 8 { try cache.store(i, forKey: i) }

        cache.respondToMemoryPressure(true, center: pressure.center)
        #expect(cache.respondsToMemoryPressure)
        cache.respondToMemoryPressure(true, center: pressure.center)  // again: still one registration
        #expect(pressure.center.registeredCount == 1)
        pressure.fire(.warning)
        #expect(cache.count == 4)

        cache.respondToMemoryPressure(false, center: pressure.center)
        #expect(!cache.respondsToMemoryPressure)
        #expect(pressure.center.registeredCount == 0)
        #expect(pressure.center.monitor == nil)
        pressure.fire(.critical)
        #expect(cache.count == 4)

        cache.respondToMemoryPressure(true, center: pressure.center)
        #expect(pressure.center.monitorsStarted == 2)
        pressure.fire(.critical)
        #expect(cache.count == 0)
    }

    @Test("A freed cache leaves the monitor, which stops when no cache is left")
    func freedCacheLeaves() throws {
        let pressure = DrivenPressure()
        let kept = try MemoryCache<Int, Int>()
        kept.respondToMemoryPressure(true, center: pressure.center)
        weak var weakCache: MemoryCache<Int, Int>?
        do {
            let cache = try MemoryCache<Int, Int>()
            weakCache = cache
            cache.respondToMemoryPressure(true, center: pressure.center)
            #expect(pressure.center.registeredCount == 2)
        }
        #expect(weakCache == nil)  // registering does not keep it alive
        #expect(pressure.center.registeredCount == 1)
        #expect(pressure.center.monitor != nil)
        kept.respondToMemoryPressure(false, center: pressure.center)
        #expect(pressure.center.monitor == nil)
        #expect(pressure.center.monitorsStarted == 1)
    }

    @Test("The public property registers with the process's one monitor")
    func sharedMonitor() throws {
        let first = try MemoryCache<Int, Int>()
        let second = try MemoryCache<String, Data>(respondsToMemoryPressure: true)
        first.respondsToMemoryPressure = true
        #expect(first.respondsToMemoryPressure && second.respondsToMemoryPressure)
        // Other tests register and leave in parallel, but while these two are registered the
        // shared monitor cannot stop: both see the same one.
        let monitor = try #require(MemoryPressureCenter.shared.monitor)
        let hybridDirectory = TemporaryDirectory()
        defer { hybridDirectory.remove() }
        var options = hybridOptions(hybridDirectory.url)
        options.pressureCenter = .shared
        let hybrid = try HybridCache(options: options)
        #expect(hybrid.memory.respondsToMemoryPressure)
        #expect(MemoryPressureCenter.shared.monitor === monitor)
        #expect(first.isMonitoringMemoryPressure == monitor.isActive)
        first.respondsToMemoryPressure = false
        #expect(!first.respondsToMemoryPressure)
        #expect(!first.isMonitoringMemoryPressure)
        #expect(MemoryPressureCenter.shared.monitor === monitor)
    }
}
