import Dispatch
import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCache's `Tests/SPTPersistentCacheOptionsTests.m`, against `DiskCacheOptions.spt(directory:)`.
// SPT's options are an `NSObject` whose setters clamp and log; Larder's are a value type whose
// floors apply where the value is used (`effectiveDefaultExpiration`,
// `effectiveGarbageCollectionInterval`).
@Suite("SPTPersistentCacheOptionsTests") struct SPTPersistentCacheOptionsTests {
    /// `SPTPersistentCacheOptionsPathComponent`.
    static let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("com.spotify.tmp.cache")

    /// SPTPersistentCacheOptionsTests.m:24. SPT's defaults: directory separation, a collection
    /// every 363 s, 10 minutes' expiration, a path, an identifier and a queue named after it;
    /// its per-kind qualities of service and its unbounded operation queue.
    @Test func testDefaultInitializer() throws {
        let options = DiskCacheOptions.spt(directory: Self.directory)
        #expect(options.layout == .sharded, "Directory separation should be enabled")
        #expect(options.garbageCollectionInterval == 363)  // SPTPersistentCacheDefaultGCIntervalSec
        #expect(options.defaultExpiration == 600)  // SPTPersistentCacheDefaultExpirationTimeSec
        #expect(options.directory == Self.directory)
        #expect(options.name == "persistent.cache")
        #expect(options.keyEncoding.description == "verbatim")
        #expect(options.sizeLimit == 0)  // SPTPersistentCacheDefaultCacheSizeInBytes, unbounded
        #expect(options.minimumFreeDiskSpace == .fraction(0.1) && options.minimumFreeSpaceNeedsSizeLimit)
        #expect(options.workQualityOfService.reads == .default && options.workQualityOfService.writes == .default)
        #expect(options.workQualityOfService.deletes == .default && options.workQualityOfService.collection == .background)
        #expect(options.maximumConcurrentOperations == 0)  // NSOperationQueueDefaultMaxConcurrentOperationCount
        try options.validate()
        // identifierForQueue: the cache's queue is named after the cache.
        let directory = TemporaryDirectory("spt-conformance")
        defer { directory.remove() }
        let cache = try DiskCache(options: .spt(directory: directory.url))
        defer { cache.close() }
        #expect(cache.ioQueue.queue.label.hasPrefix(options.name))
    }

    /// SPTPersistentCacheOptionsTests.m:34. SPT's deprecated initializer with a 1 s interval
    /// gets `SPTPersistentCacheMinimumGCIntervalLimit` (60 s). Larder has no deprecated
    /// initializer; the preset's floor does the same.
    @Test func testMinimumGarbageCollectorIntervalForDeprecatedInit() {
        var options = DiskCacheOptions.spt(directory: Self.directory)
        options.name = "test"
        options.defaultExpiration = 1
        options.garbageCollectionInterval = 1
        #expect(options.minimumGarbageCollectionInterval == 60)
        #expect(options.effectiveGarbageCollectionInterval == 60)
    }

    /// SPTPersistentCacheOptionsTests.m:49. SPT's setter raises 1 s to 60 s and logs a message
    /// naming `garbageCollectionInterval`. Difference: Larder keeps the value set (a plain
    /// struct) and applies the floor where the interval is used; nothing is logged. `validate()`
    /// accepts it.
    @Test func testMinimumGarbageCollectorInterval() throws {
        var options = DiskCacheOptions.spt(directory: Self.directory)
        options.garbageCollectionInterval = 1
        #expect(options.garbageCollectionInterval == 1)
        #expect(options.effectiveGarbageCollectionInterval == 60)
        try options.validate()
    }

    /// SPTPersistentCacheOptionsTests.m:68. As the GC-interval test: the deprecated initializer's
    /// 1 s expiration becomes `SPTPersistentCacheMinimumExpirationLimit` (60 s).
    @Test func testMinimumDefaultExpirationIntervalForDeprecatedInit() {
        var options = DiskCacheOptions.spt(directory: Self.directory)
        options.defaultExpiration = 1
        options.garbageCollectionInterval = 1
        #expect(options.minimumExpiration == 60)
        #expect(options.effectiveDefaultExpiration == 60)
    }

    /// SPTPersistentCacheOptionsTests.m:83. The floor, as the cache applies it: with a 1 s
    /// default expiration, a record stored without a ttl lives 60 s, and the folder's metadata
    /// records 60 (what `larder ls` judges expiry by).
    @Test func testMinimumDefaultExpiration() async throws {
        let directory = TemporaryDirectory("spt-conformance")
        defer { directory.remove() }
        var options = DiskCacheOptions.spt(directory: directory.url)
        options.name = "test"
        options.defaultExpiration = 1
        let clock = ManualClock(now: 1_700_000_000)
        options.clock = clock
        #expect(options.defaultExpiration == 1 && options.effectiveDefaultExpiration == 60)
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        try await cache.store(Data("x".utf8), forKey: "key")
        clock.advance(by: 60)
        #expect(cache.contains("key"))
        clock.advance(by: 1)
        #expect(!cache.contains("key"))
        let metadata =
            try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent(".larder"))) as? [String: Any]
        #expect(metadata?["defaultExpiration"] as? Double == 60)
    }

    /// SPTPersistentCacheOptionsTests.m:104. `NSCopying`: Swift's options are a value; a copy
    /// has every setting of the original, callbacks included, and changes to one leave the other.
    @Test func testCopying() {
        var original = DiskCacheOptions.spt(directory: Self.directory)
        original.name = "test"
        original.layout = .flat
        original.garbageCollectionInterval = 363 + 10
        original.defaultExpiration = 600 + 10
        original.sizeLimit = 1024 * 1024
        original.eventHandler = { _ in }
        original.timingHandler = { _ in }
        original.maximumConcurrentOperations = 3
        original.workQualityOfService.reads = .userInitiated
        let copy = original
        #expect(copy.eventHandler != nil && copy.timingHandler != nil, "The callbacks should exist after copy")
        #expect(copy.directory == original.directory)
        #expect(copy.name == original.name)
        #expect(copy.layout == original.layout)
        #expect(copy.garbageCollectionInterval == original.garbageCollectionInterval)
        #expect(copy.defaultExpiration == original.defaultExpiration)
        #expect(copy.sizeLimit == original.sizeLimit)
        #expect(copy.maximumConcurrentOperations == 3 && copy.workQualityOfService == original.workQualityOfService)
        original.name = "changed"
        #expect(copy.name == "test", "The original and copy shouldn't be the same object")
    }

    /// SPTPersistentCacheOptionsTests.m:138. The deprecated `folderSeparationEnabled` aliases
    /// `useDirectorySeparation`. Larder has neither name: both are `layout` (the migration guide
    /// maps them), and `.flat` is `NO`: records sit at the root.
    @Test func testFolderSeparationEnabled() async throws {
        #expect(MigrationGuide.maps("folderSeparationEnabled", to: "layout"))
        #expect(MigrationGuide.maps("useDirectorySeparation", to: "layout"))
        let directory = TemporaryDirectory("spt-conformance")
        defer { directory.remove() }
        var options = DiskCacheOptions.spt(directory: directory.url)
        #expect(options.layout == .sharded)
        options.layout = .flat
        let cache = try DiskCache(options: options)
        try await cache.store(Data("x".utf8), forKey: "key")
        cache.close()
        #expect(sptFiles(atPath: directory.path) == ["key"])
    }

    /// SPTPersistentCacheOptionsTests.m:154. The deprecated `gcIntervalSec` reads
    /// `garbageCollectionInterval`; in Larder it is `garbageCollectionInterval`, as the guide says.
    @Test func testGcIntervalSec() {
        #expect(MigrationGuide.maps("gcIntervalSec", to: "garbageCollectionInterval"))
        var options = DiskCacheOptions.spt(directory: Self.directory)
        options.garbageCollectionInterval = 363 + 37
        #expect(options.effectiveGarbageCollectionInterval == options.garbageCollectionInterval)
    }

    /// SPTPersistentCacheOptionsTests.m:167. The deprecated `defaultExpirationPeriodSec` reads
    /// `defaultExpirationPeriod`; in Larder both are `defaultExpiration`.
    @Test func testDefaultExpirationPeriodSec() {
        #expect(MigrationGuide.maps("defaultExpirationPeriodSec", to: "defaultExpiration"))
        #expect(MigrationGuide.maps("defaultExpirationPeriod", to: "defaultExpiration"))
        var options = DiskCacheOptions.spt(directory: Self.directory)
        options.defaultExpiration = 600 + 37
        #expect(options.effectiveDefaultExpiration == options.defaultExpiration)
    }

    /// SPTPersistentCacheOptionsTests.m:182. SPT's descriptions follow its style,
    /// `<SPTPersistentCacheOptions: 0x...; cache-identifier = "...">`. Larder's options describe
    /// themselves in Swift's style: the type, then each setting by name.
    @Test func testDescriptionAdheresToStyle() {
        let description = String(describing: DiskCacheOptions.spt(directory: Self.directory))
        #expect(description.hasPrefix("DiskCacheOptions(") && description.hasSuffix(")"))
        #expect(description.contains(#"name: "persistent.cache""#))
    }

    /// SPTPersistentCacheOptionsTests.m:191
    @Test func testDescriptionContainsClassName() {
        #expect(String(describing: DiskCacheOptions.spt(directory: Self.directory)).contains("DiskCacheOptions"))
    }

    /// SPTPersistentCacheOptionsTests.m:199. The debug description, Swift's style with the module.
    @Test func testDebugDescriptionAdheresToStyle() {
        let debugDescription = String(reflecting: DiskCacheOptions.spt(directory: Self.directory))
        #expect(debugDescription.hasPrefix("Larder.DiskCacheOptions(") && debugDescription.hasSuffix(")"))
        #expect(debugDescription.contains("directory: ") && debugDescription.contains("layout: "))
    }

    /// SPTPersistentCacheOptionsTests.m:208
    @Test func testDebugDescriptionContainsClassName() {
        #expect(String(reflecting: DiskCacheOptions.spt(directory: Self.directory)).contains("DiskCacheOptions"))
    }

    /// SPT's `timingCallback` in Swift form: one call per operation on a record, with the
    /// cache's name, the key and the operation; a synchronous call waited for no queue.
    @Test func timingHandlerReportsEachOperation() throws {
        let directory = TemporaryDirectory("spt-conformance")
        defer { directory.remove() }
        let timings = Box<[OperationTiming]>([])
        var options = DiskCacheOptions.spt(directory: directory.url)
        options.timingHandler = { timing in timings.update { $0.append(timing) } }
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        try cache.store(Data("x".utf8), forKey: "k")
        _ = try cache.record(forKey: "k")
        try cache.touch(forKey: "k")
        try cache.lock(forKeys: ["k"])
        try cache.unlock(forKeys: ["k"])
        try cache.remove(forKey: "k")
        #expect(timings.value.map(\.operation) == [.store, .read, .touch, .lock, .unlock, .remove])
        #expect(timings.value.allSatisfy { $0.key == "k" && $0.cacheName == "persistent.cache" && $0.queued == .zero })
    }
}
