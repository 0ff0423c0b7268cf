import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Larder

/// `close()` while another thread changes a record: the directory lock must outlive the change,
/// else a new cache opens the folder, clears the change's temporary file and is changed behind
/// its back (`larder-stress soak` reopens its disk cache under load, and would see it). And the
/// owner's release of a cache whose index is being built, which closes it at once.
@Suite struct DiskCloseTests {
    /// A table of live calls whose first rename out of the temporary folder waits until released.
    final class PausedRename: Sendable {
        let paused = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        private let armed = Atomic<Bool>(true)

        var calls: SystemCalls {
            var calls = SystemCalls.live
            let live = SystemCalls.live
            calls.renameat = { [self] fromDirectory, from, toDirectory, to in
                if armed.exchange(false, ordering: .acquiringAndReleasing) {
                    paused.signal()
                    resume.wait()
                }
                return live.renameat(fromDirectory, from, toDirectory, to)
            }
            return calls
        }
    }

    @Test func closeWaitsForAChangeUnderWay() throws {
        let dir = TemporaryDirectory("larder-close")
        defer { dir.remove() }
        let options = testOptions(dir.url)
        // The folder and its metadata first, so that the only rename paused is the store's.
        try DiskCache(options: options).close()
        let pause = PausedRename()
        let cache = try DiskCache(options: options, systemCalls: pause.calls)
        _ = cache.count

        let storeOutcome = LarderMutex<Result<Void, CacheError>?>(nil)
        let storeDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result { () throws(CacheError) in try cache.store(Data("payload".utf8), forKey: "k") }
            storeOutcome.withLock { $0 = result }
            storeDone.signal()
        }
        pause.paused.wait()  // the store has written its temporary file and is about to rename it

        let closeDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            cache.close()
            closeDone.signal()
        }
        while !cache.isClosed.isSet { usleep(1000) }
        // Closing has begun, and the store is still under way: the folder is still locked.
        #expect {
            try DiskCache(options: options)
        } throws: { error in
            (error as? CacheError)?.code == .directoryInUse
        }
        #expect(storeOutcome.withLock { $0 } == nil)

        pause.resume.signal()
        storeDone.wait()
        closeDone.wait()
        #expect(throws: Never.self) { try storeOutcome.withLock { $0 }?.get() }
        let reopened = try DiskCache(options: options)
        #expect(try reopened.value(forKey: "k") == Data("payload".utf8))
        #expect(DiskAudit.strayFiles(in: reopened.layout.root).isEmpty)
    }

    /// A table of live calls whose first folder listing on another thread than the one that made
    /// it (the index build's, on the cache's queue) waits until released.
    final class PausedBuild: Sendable {
        let paused = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        /// Signalled once the paused listing has returned.
        let listed = DispatchSemaphore(value: 0)
        private let armed = Atomic<Bool>(true)
        private let opener = ObjectIdentifier(Thread.current)

        var calls: SystemCalls {
            var calls = SystemCalls.live
            let live = SystemCalls.live
            calls.listDirectory = { [self] directory in
                guard ObjectIdentifier(Thread.current) != opener, armed.exchange(false, ordering: .acquiringAndReleasing) else {
                    return live.listDirectory(directory)
                }
                paused.signal()
                resume.wait()
                defer { listed.signal() }
                return live.listDirectory(directory)
            }
            return calls
        }
    }

    /// A cache its owner lets go of while its index is being built closes at once, on the
    /// releasing thread: the build does not keep it open, so the folder can be opened again
    /// before the build resumes; the abandoned build then writes nothing beside the new owner.
    @Test func aCacheLetGoOfDuringItsIndexBuildClosesAtOnce() throws {
        let dir = TemporaryDirectory("larder-close")
        defer { dir.remove() }
        let options = testOptions(dir.url)
        do {
            // A record, and a snapshot the paused build has withdrawn by the time it lists.
            let first = try DiskCache(options: options)
            try first.store(Data("payload".utf8), forKey: "k")
            first.close()
        }
        let pause = PausedBuild()
        var cache: DiskCache? = try DiskCache(options: options, systemCalls: pause.calls)
        pause.paused.wait()  // the build is listing the folder
        weak let watched = cache
        cache = nil
        #expect(watched == nil, "the build does not hold the owner's handle")
        var reopened: DiskCache?
        #expect(throws: Never.self) { reopened = try DiskCache(options: options) }
        pause.resume.signal()
        pause.listed.wait()  // the abandoned build goes on from its listing
        let cache2 = try #require(reopened)
        #expect(try cache2.value(forKey: "k") == Data("payload".utf8))
        try cache2.store(Data("second".utf8), forKey: "k2")
        cache2.close()
        let third = try DiskCache(options: options)
        defer { third.close() }
        #expect(try third.keys().sorted() == ["k", "k2"])
    }
}
