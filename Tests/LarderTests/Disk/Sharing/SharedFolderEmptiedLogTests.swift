import Foundation
import Synchronization
import Testing
@testable import Larder

/// A log emptied without the change lock (a change made when the lock could not be taken) sends
/// every other writer to the folder once, not at every operation until the next recorded change.
@Suite struct SharedFolderEmptiedLogTests {
    /// A writer that reads the log's header before each look (its counter is not mapped: a file
    /// it may not map, or a log opened again since) builds its index from the folder at its first
    /// operation after the log was emptied, and reads no record at the next ones.
    @Test func aWriterReadingTheHeaderBuildsItsIndexOnceAfterAnEmptiedLog() throws {
        let opens = OpenCounter()
        let calls = opens.counting(.live)
        try SharedFolderCacheTests.withTwoWriters("larder-shared-emptied", systemCallsOfA: calls) { _, _, a, b throws in
            for i in 0 ..< 20 { try b.store(SharedFolderCacheTests.payload("k\(i)", 1), forKey: "k\(i)") }
            #expect(a.contains("k1"))
            let sharedA = try #require(a.sharedFolder)
            let sharedB = try #require(b.sharedFolder)
            sharedA.log.changeCounter.detach()
            #expect(sharedA.log.changeCount == nil)
            sharedB.log.invalidateWithoutLock()
            var opened: [Int] = []
            for round in 0 ..< 4 {
                opens.isCounting.store(true, ordering: .relaxed)
                #expect(!a.contains("missing\(round)"))
                opens.isCounting.store(false, ordering: .relaxed)
                opened.append(opens.count.exchange(0, ordering: .relaxed))
            }
            // The first look reads the folder (every record's header); the next read nothing.
            #expect(opened[0] >= 20)
            #expect(opened.dropFirst().allSatisfy { $0 == 0 }, "\(opened)")
            #expect(a.count == 20)
            // A change recorded after it is replayed as before.
            try b.store(SharedFolderCacheTests.payload("k1", 2), forKey: "k1")
            #expect(try a.value(forKey: "k1") == SharedFolderCacheTests.payload("k1", 2))
        }
    }
}
