import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Larder

/// `close()` while another thread changes a record: the directory lock must outlive the change,
/// else a new cache opens the folder, clears the change's temporary file and is changed behind
/// its back (found by `larder-stress soak`, which reopens its disk cache under load).
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
        while !cache.isClosed.load(ordering: .acquiring) { usleep(1000) }
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
}
