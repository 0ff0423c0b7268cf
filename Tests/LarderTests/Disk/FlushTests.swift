#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import Testing
@testable import Larder

#if canImport(UIKit) && !os(watchOS)
import UIKit
#elseif canImport(AppKit) && os(macOS)
import AppKit
#endif

/// `flush()`: the access times the index holds and the index snapshot, written now, so that a
/// process killed afterwards (an app suspended, then terminated) keeps its least-recently-used order.
@Suite struct FlushTests {
    /// The header's last access of the record under `key`, in milliseconds.
    static func headerAccess(_ cache: DiskCache, _ key: String) throws -> UInt64? {
        let path = cache.layout.path(for: try cache.options.keyEncoding.fileName(for: key))
        guard case .record(let contents) = try cache.records.read(path, readPayload: false) else { return nil }
        return contents.header.lastAccessMilliseconds
    }

    /// The keys the index image on disk (base and journal) lists, least recently used first;
    /// `nil` when it is absent, as a reopened cache would find it.
    static func snapshotKeys(_ cache: DiskCache) -> [String]? {
        DiskAudit.indexImage(cache)?.index.entriesLeastRecentFirst.map { $0.key ?? $0.name }
    }

    @Test func flushWritesAccessTimesAndTheSnapshot() throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock))
        for key in ["a", "b", "c"] { try cache.store(Data(key.utf8), forKey: key) }
        clock.advance(by: 5)
        #expect(try cache.value(forKey: "a") == Data("a".utf8))
        // The read is held in the index only, and no snapshot is on disk (the stores withdrew it).
        #expect(try Self.headerAccess(cache, "a") == 1_700_000_000_000)
        #expect(Self.snapshotKeys(cache) == nil)

        #expect(try cache.flush())
        #expect(try Self.headerAccess(cache, "a") == 1_700_000_005_000)
        #expect(Self.snapshotKeys(cache) == ["b", "c", "a"])
        #expect(try cache.keys() == ["b", "c", "a"])
        // Nothing left to write: a second flush writes the same snapshot.
        #expect(try cache.flush())
        #expect(Self.snapshotKeys(cache) == ["b", "c", "a"])
    }

    /// A store in flight when the snapshot would be written: the flush skips it (returns `false`)
    /// rather than write a snapshot without that store; once it ends, the next flush writes it.
    @Test func flushSkipsTheSnapshotWhileAChangeIsInFlight() throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let armed = Atomic<Bool>(false)
        let live = SystemCalls.live
        var calls = live
        // Holds the next rename of a record file (not Larder's own hidden files) until told.
        calls.renameat = { fromDirectory, from, toDirectory, to in
            if !String(cString: to).hasPrefix("."), armed.exchange(false, ordering: .relaxed) {
                entered.signal()
                proceed.wait()
            }
            return live.renameat(fromDirectory, from, toDirectory, to)
        }
        let cache = try DiskCache(options: testOptions(dir.url), systemCalls: calls)
        try cache.store(Data("a".utf8), forKey: "a")
        #expect(try cache.flush())
        armed.store(true, ordering: .relaxed)
        let stored = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? cache.store(Data("b".utf8), forKey: "b")
            stored.signal()
        }
        #expect(entered.wait(timeout: .now() + 60) == .success, "the store never reached its rename")
        #expect(try !cache.flush(), "the flush wrote a snapshot while a store was under way")
        #expect(Self.snapshotKeys(cache) == nil, "the store in flight withdrew the snapshot")
        proceed.signal()
        #expect(stored.wait(timeout: .now() + 60) == .success)
        #expect(try cache.flush())
        #expect(Self.snapshotKeys(cache) == ["a", "b"])
    }

    @Test(arguments: [Durability.atomicRename, .fsync])
    func fsyncDurabilitySyncsWhatItFlushes(durability: Durability) throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let injector = FaultInjector()
        let clock = ManualClock(now: 1_700_000_000)
        var options = testOptions(dir.url, clock: clock)
        options.durability = durability
        let cache = try DiskCache(options: options, systemCalls: injector.calls)
        try cache.store(Data("a".utf8), forKey: "a")
        clock.advance(by: 1)
        _ = try cache.value(forKey: "a")
        injector.disarm()
        #expect(try cache.flush())
        let syncs = injector.counts[.fsync] ?? 0
        switch durability {
        case .atomicRename: #expect(syncs == 0, "page cache only, nothing synced")
        // The header written back, the snapshot, and the folder that names it.
        case .fsync: #expect(syncs == 3)
        }
    }

    @Test func readOnlyAndClosedCaches() throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let writer = try DiskCache(options: testOptions(dir.url))
        try writer.store(Data("a".utf8), forKey: "a")
        writer.close()
        expectCacheError(.closed) { () throws(CacheError) in try writer.flush() }
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: writer.layout.snapshotPath))
        var options = testOptions(dir.url)
        options.isReadOnly = true
        let reader = try DiskCache(options: options)
        _ = try reader.value(forKey: "a")
        #expect(try reader.flush(), "a read-only cache has nothing to write")
        #expect(try Data(contentsOf: URL(fileURLWithPath: writer.layout.snapshotPath)) == snapshot, "a read-only cache wrote")
    }

    @Test func hybridFlushesItsDisk() throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let hybrid = try HybridCache(options: HybridCacheOptions(disk: testOptions(dir.url)))
        try hybrid.store(Data("a".utf8), forKey: "a")
        #expect(try hybrid.flush())
        #expect(Self.snapshotKeys(hybrid.disk) == ["a"])
    }

    @Test func asyncAndCallbackForms() async throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let hybrid = try HybridCache(options: HybridCacheOptions(disk: testOptions(dir.url)))
        try await hybrid.store(Data("a".utf8), forKey: "a")
        #expect(try await hybrid.flush())
        #expect(Self.snapshotKeys(hybrid.disk) == ["a"])
        try await hybrid.store(Data("b".utf8), forKey: "b")
        #expect(try await hybrid.disk.flush())
        #expect(Self.snapshotKeys(hybrid.disk) == ["a", "b"])
        try await hybrid.store(Data("c".utf8), forKey: "c")
        let response = await withCheckedContinuation { continuation in
            hybrid.disk.flush(queue: .global()) { continuation.resume(returning: $0) }
        }
        #expect(response.error == nil && response.value == true)
        #expect(Self.snapshotKeys(hybrid.disk) == ["a", "b", "c"])
        try await hybrid.store(Data("d".utf8), forKey: "d")
        let hybridResponse = await withCheckedContinuation { continuation in
            hybrid.flush(queue: .global()) { continuation.resume(returning: $0) }
        }
        #expect(hybridResponse.error == nil && hybridResponse.value == true)
        #expect(Self.snapshotKeys(hybrid.disk) == ["a", "b", "c", "d"])
    }

    /// A writer reads its keys in reverse, flushes, and is killed with SIGKILL (an app suspended
    /// in the background, then terminated): the reopened cache has the order of those reads.
    @Test func aKilledProcessKeepsTheOrderItFlushed() throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let count = 20
        let helper = try HelperProcess("larder-stress", ["flush", "--dir", dir.path, "--keys", "\(count)"])
        #expect(helper.waitUntilReady() != nil, "the helper did not get ready")
        helper.kill()
        #expect(helper.wasKilled)
        let cache = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        #expect(try cache.keys() == (0 ..< count).reversed().map { "k\($0)" })
    }
}

/// `DiskCacheOptions.flushesOnBackground`: the observer behind it, driven through a private
/// notification center with made-up names (Linux posts no app notifications).
@Suite struct LifecycleFlushTests {
    @Test func onByDefaultAndInertOnLinux() throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        #expect(DiskCacheOptions(directory: dir.url).flushesOnBackground)
        #if os(Linux)
        #expect(LifecycleFlusher.platformNotifications.isEmpty)
        let cache = try DiskCache(options: testOptions(dir.url))
        #expect(!cache.lifecycle.isObserving, "Linux has no app lifecycle to observe")
        #endif
    }

    @Test(arguments: [LifecycleFlusher.Moment.background, .termination])
    func aNotificationFlushes(moment: LifecycleFlusher.Moment) throws {
        let dir = TemporaryDirectory("larder-flush")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = testOptions(dir.url, clock: clock)
        options.flushesOnBackground = false
        let cache = try DiskCache(options: options)
        try cache.store(Data("a".utf8), forKey: "a")
        try cache.store(Data("b".utf8), forKey: "b")
        clock.advance(by: 1)
        _ = try cache.value(forKey: "a")
        let center = NotificationCenter()
        let name = Notification.Name("larder.test.\(moment)")
        cache.lifecycle.start(flushing: cache, center: center, notifications: [(name, moment)])
        #expect(cache.lifecycle.isObserving)
        #expect(FlushTests.snapshotKeys(cache) == nil)
        center.post(name: Notification.Name("larder.test.unrelated"), object: nil)
        #expect(FlushTests.snapshotKeys(cache) == nil)
        center.post(name: name, object: nil)
        #expect(FlushTests.snapshotKeys(cache) == ["b", "a"])
        #expect(try FlushTests.headerAccess(cache, "a") == 1_700_000_001_000)
        // Closing stops observing; a later notification finds nothing to do.
        cache.close()
        #expect(!cache.lifecycle.isObserving)
        center.post(name: name, object: nil)
    }

    #if canImport(UIKit) && !os(watchOS)
    /// The names Larder spells out are UIKit's (checked where UIKit exists: `.github/workflows/apple.yml`).
    @MainActor @Test func namesAreUIKits() {
        let names = LifecycleFlusher.platformNotifications.map(\.name)
        #expect(names == [UIApplication.didEnterBackgroundNotification, UIApplication.willTerminateNotification])
    }
    #elseif canImport(AppKit) && os(macOS)
    /// The name Larder spells out is AppKit's (checked where AppKit exists: `.github/workflows/apple.yml`).
    @MainActor @Test func namesAreAppKits() {
        #expect(LifecycleFlusher.platformNotifications.map(\.name) == [NSApplication.willTerminateNotification])
    }
    #endif
}
