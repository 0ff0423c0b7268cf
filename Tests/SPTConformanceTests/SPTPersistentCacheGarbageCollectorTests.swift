import Dispatch
import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCache's `Tests/SPTPersistentCacheGarbageCollectorTests.m`. SPT's collector is an
// object of its own with an `NSTimer` on the main run loop; Larder's is a `DispatchSourceTimer`
// on the cache's own queue, started by `scheduleGarbageCollection()`.
@Suite("SPTPersistentCacheGarbageCollectorTests") struct SPTPersistentCacheGarbageCollectorTests {
    /// setUp (SPTPersistentCacheGarbageCollectorTests.m:49): a cache with default options.
    static func withCache(
        configure: (inout DiskCacheOptions) -> Void = { _ in }, body: (DiskCache) async throws -> Void
    ) async throws {
        let directory = TemporaryDirectory("spt-conformance")
        defer { directory.remove() }
        var options = DiskCacheOptions.spt(directory: directory.url)
        configure(&options)
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        try await body(cache)
    }

    /// The cache's collection timer, if any.
    static func timer(_ cache: DiskCache) -> AnyObject? { cache.state.withLock { $0.timer.map { $0 as AnyObject } } }

    /// SPTPersistentCacheGarbageCollectorTests.m:65. The collector works on the cache's queue,
    /// named after the cache (SPT's `identifierForQueue`), and starts without a timer.
    @Test func testDesignatedInitializer() async throws {
        try await Self.withCache { cache in
            #expect(cache.ioQueue.queue.label == "persistent.cache.disk")
            #expect(Self.timer(cache) == nil)
            #expect(!cache.isGarbageCollectionScheduled)
        }
    }

    /// SPTPersistentCacheGarbageCollectorTests.m:74. A tick of the collector queues, on the
    /// cache's queue, `runRegularGC` and then `pruneBySize`. Larder's tick queues one
    /// `collectGarbage()`, which removes expired records and then enforces the size limit. The
    /// 60-second floor is lowered so that the timer fires within the test.
    ///
    /// No time limit: in the whole parallel run, each await of an `async` test resumes behind
    /// the tests still queued on the cooperative pool, minutes later under the thread sanitizer.
    /// The wait for the timer is bounded by ``waitForCollection(_:)`` instead.
    @Test func testGarbageCollectorEnqueue() async throws {
        let clock = ManualClock(now: 10_000)
        let finished = Box<[(CollectionReport, onCacheQueue: Bool)]>([])
        let queueKey = DispatchSpecificKey<Int>()
        try await Self.withCache(
            configure: { options in
                options.clock = clock
                options.sizeLimit = 1 << 20
                options.minimumGarbageCollectionInterval = 0
                options.garbageCollectionInterval = 0.01
                options.eventHandler = { event in
                    if case .collectionFinished(let report) = event {
                        finished.update { $0.append((report, DispatchQueue.getSpecific(key: queueKey) == 1)) }
                    }
                }
            },
            body: { cache in
                cache.ioQueue.queue.setSpecific(key: queueKey, value: 1)
                try await cache.store(Data("old".utf8), forKey: "expired", expiry: .seconds(60))
                try await cache.store(Data("new".utf8), forKey: "live")
                clock.advance(by: 61)
                cache.scheduleGarbageCollection()
                Self.waitForCollection { !finished.value.isEmpty }
                cache.unscheduleGarbageCollection()
                try #require(!finished.value.isEmpty)
                let (report, onCacheQueue) = finished.value[0]
                #expect(report.removed.map(\.key) == ["expired"] && report.removed.first?.reason == .expired)
                #expect(report.effectiveSizeLimit == 1 << 20, "the pass enforced the size limit")
                #expect(onCacheQueue, "wasCalledFromIncorrectQueue")
                #expect(try await cache.keys() == ["live"])
            })
    }

    /// SPTPersistentCacheGarbageCollectorTests.m:91
    @Test func testIsGarbageCollectionScheduled() async throws {
        try await Self.withCache { cache in
            #expect(!cache.isGarbageCollectionScheduled)
            cache.scheduleGarbageCollection()
            #expect(cache.isGarbageCollectionScheduled)
            cache.unscheduleGarbageCollection()
            #expect(!cache.isGarbageCollectionScheduled)
        }
    }

    /// SPTPersistentCacheGarbageCollectorTests.m:100. A live timer, firing every
    /// `garbageCollectionInterval` (363 s) seconds. A dispatch timer does not tell its interval
    /// (SPT reads `timer.timeInterval`), so the timer is also seen to fire: a cache whose
    /// interval is 10 ms, without the floor, reports a collection it did not run itself.
    @Test func testScheduleGarbageCollection() async throws {
        try await Self.withCache { cache in
            cache.scheduleGarbageCollection()
            let timer = cache.state.withLock { $0.timer }
            #expect(timer != nil)
            #expect(timer?.isCancelled == false)
            #expect(cache.options.effectiveGarbageCollectionInterval == cache.options.garbageCollectionInterval)
            #expect(cache.options.effectiveGarbageCollectionInterval == 363)
        }
        let dir = TemporaryDirectory("spt-gc-timer")
        defer { dir.remove() }
        let collections = Box(0)
        var options = DiskCacheOptions.spt(directory: dir.url)
        options.minimumGarbageCollectionInterval = 0
        options.garbageCollectionInterval = 0.01
        options.eventHandler = { event in
            if case .collectionFinished = event { collections.update { $0 += 1 } }
        }
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        cache.scheduleGarbageCollection()
        Self.waitForCollection { collections.value > 0 }
        #expect(collections.value > 0, "the timer ran a collection")
    }

    /// Blocks this thread until `done` holds or ten minutes pass (a loaded machine), checking
    /// every 10 ms. It waits on the thread, not in an `await`: an await in the whole parallel run
    /// resumes only behind the tests still queued on the cooperative pool. The callers then
    /// assert what they waited for, so a timer that never fires fails the test, not hangs it.
    static func waitForCollection(_ done: () -> Bool) {
        let deadline = Date().addingTimeInterval(600)
        while !done(), Date() < deadline { usleep(10_000) }
    }

    /// SPTPersistentCacheGarbageCollectorTests.m:108. Scheduling twice keeps the first timer.
    @Test func testRepeatedScheduleGarbageCollection() async throws {
        try await Self.withCache { cache in
            cache.scheduleGarbageCollection()
            let first = Self.timer(cache)
            cache.scheduleGarbageCollection()
            let second = Self.timer(cache)
            #expect(first != nil && first === second)
        }
    }

    /// SPTPersistentCacheGarbageCollectorTests.m:119
    @Test func testUnscheduleGarbageCollection() async throws {
        try await Self.withCache { cache in
            cache.scheduleGarbageCollection()
            let timer = cache.state.withLock { $0.timer }
            cache.unscheduleGarbageCollection()
            #expect(Self.timer(cache) == nil)
            #expect(timer?.isCancelled == true)
        }
    }

    /// SPTPersistentCacheGarbageCollectorTests.m:126. Scheduling from another thread. SPT hops
    /// to the main queue first, so the test waits a second; Larder schedules on the spot.
    @Test func testSchedulingGarbageCollectionOnAnotherThread() async throws {
        try await Self.withCache { cache in
            await withCheckedContinuation { continuation in
                DispatchQueue.global(qos: .userInitiated).async {
                    cache.scheduleGarbageCollection()
                    continuation.resume()
                }
            }
            #expect(cache.isGarbageCollectionScheduled)
        }
    }
}
