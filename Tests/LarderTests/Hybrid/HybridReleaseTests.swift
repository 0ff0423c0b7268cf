import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Larder

/// A hybrid cache its owner lets go of closes at once, on the releasing thread, whatever its own
/// background work is doing: a disk copy of a remote hit waiting in the promotion queue, or the
/// remote subscription handling an invalidation. Its folder can be opened again before that work
/// resumes, and the work then changes nothing there.
@Suite struct HybridReleaseTests {
    /// Options for a hybrid in `directory` sharing `store`, reporting remote events to `events`.
    static func options(_ directory: URL, _ store: FakeRemoteStore, clock: ManualClock, events: (@Sendable (RemoteEvent) -> Void)? = nil)
        -> HybridCacheOptions
    {
        var options = hybridOptions(directory, clock: clock)
        var remote = RemoteTierOptions(store: store, namespace: "test")
        remote.eventHandler = events
        options.remote = remote
        return options
    }

    /// Two folders and a store the hybrids in them share, with the writer's hybrid open.
    struct Setup {
        let clock = ManualClock(now: 1_700_000_000)
        let store: FakeRemoteStore
        let writerFolder = TemporaryDirectory()
        let readerFolder = TemporaryDirectory()
        let writer: HybridCache

        init() throws {
            store = FakeRemoteStore(clock: clock)
            writer = try HybridCache(options: HybridReleaseTests.options(writerFolder.url, store, clock: clock))
        }

        /// Options for the reader's hybrid, reporting remote events to `events`.
        func readerOptions(events: (@Sendable (RemoteEvent) -> Void)? = nil) -> HybridCacheOptions {
            HybridReleaseTests.options(readerFolder.url, store, clock: clock, events: events)
        }

        func remove() {
            writer.close()
            writerFolder.remove()
            readerFolder.remove()
        }
    }

    @Test func aHybridLetGoOfWithACopyQueuedClosesAtOnce() throws {
        let setup = try Setup()
        defer { setup.remove() }
        try setup.writer.store(bytes("remote"), forKey: "k")

        var reader: HybridCache? = try HybridCache(options: setup.readerOptions())
        let remote = try #require(reader?.remote)
        let block = try HybridRemotePromotionTests.WorkerBlock(try #require(reader))
        #expect(try reader?.value(forKey: "k") == bytes("remote"))
        #expect(remote.promotions.backlog == 1)  // the disk copy waits behind the blocked worker
        weak let watched = reader
        reader = nil
        #expect(watched == nil, "the queued copy does not hold the cache")

        var reopened: DiskCache?
        #expect(throws: Never.self) { reopened = try DiskCache(options: setup.readerOptions().disk) }
        block.release()
        remote.promotions.wait()
        // The copy found its cache closed: nothing was written behind the new owner's back.
        let disk = try #require(reopened)
        defer { disk.close() }
        #expect(try disk.value(forKey: "k") == nil)
    }

    /// Holds the first invalidation reported to it until `release()`.
    final class HeldInvalidation: Sendable {
        let reached = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)
        private let armed = Atomic<Bool>(true)

        var handler: @Sendable (RemoteEvent) -> Void {
            { [self] event in
                guard case .invalidated = event, armed.exchange(false, ordering: .acquiringAndReleasing) else { return }
                reached.signal()
                gate.wait()
            }
        }

        func release() { gate.signal() }
    }

    @Test func aHybridLetGoOfWhileHandlingAnInvalidationClosesAtOnce() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let writer = setup.writer
        let held = HeldInvalidation()
        var reader: HybridCache? = try HybridCache(options: setup.readerOptions(events: held.handler))
        try reader?.store(bytes("local"), forKey: "k")

        // The writer's store publishes an invalidation, which the reader's subscription handles
        // on the publishing thread, and holds there.
        let published = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? writer.store(bytes("remote"), forKey: "k")
            published.signal()
        }
        held.reached.wait()
        weak let watched = reader
        reader = nil
        #expect(watched == nil, "the subscription's handler does not hold the cache")

        var reopened: DiskCache?
        #expect(throws: Never.self) { reopened = try DiskCache(options: setup.readerOptions().disk) }
        held.release()
        published.wait()
        let disk = try #require(reopened)
        defer { disk.close() }
        // The invalidation removed the local copy before it was reported.
        #expect(try disk.value(forKey: "k") == nil)
    }
}
