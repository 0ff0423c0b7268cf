import Foundation
import Testing
@testable import Larder

/// The mappings a change counter keeps: the first (a look may still hold its address) and the
/// one changes are counted in, however often the log is opened again.
@Suite struct FolderChangeCounterMappingTests {
    @Test func aCounterMappedAgainAndAgainKeepsTwoMappings() throws {
        let dir = TemporaryDirectory("larder-counter-mappings")
        defer { dir.remove() }
        let io = try FileIO().rooted(at: dir.path)
        let path = dir.path + "/" + FolderChangeLog.fileName + "-shm"
        let counter = FolderChangeCounter()
        let observer = FolderChangeCounter()
        observer.attach(path: path, io: io, sharedWithGroup: false, growing: true)
        counter.attach(path: path, io: io, sharedWithGroup: false, growing: true)
        let start = try #require(observer.value)
        for round in 1 ... 6 {
            // What a log opened again does (its counter file is mapped again at the next change lock).
            counter.detach()
            counter.attach(path: path, io: io, sharedWithGroup: false, growing: true)
            #expect(counter.mappingCount <= 2, "round \(round)")
            // Changes are still counted, in the file every writer maps.
            #expect(counter.bump() == start + UInt64(round - 1))
            #expect(observer.value == start + UInt64(round))
        }
        #expect(counter.value == nil)
    }
}
