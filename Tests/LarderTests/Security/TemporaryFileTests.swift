import Foundation
import Testing
@testable import Larder

/// Attack 10, the file half: temporary files were opened without `O_EXCL | O_NOFOLLOW`, so a link
/// planted at a temporary name made a store write through it.
@Suite struct TemporaryFileTests {
    @Test func aLinkAtATemporaryNameIsNeverWrittenThrough() throws {
        let fixture = HostileFixture("larder-tmpfile")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        // Temporary names are `<pid>-<n>`, counted from 0 by each cache: plant the next ones.
        for n in 0 ..< 4 {
            #expect(HostileFiles.symlink(fixture.sentinel.root + "/important.txt", at: fixture.root + "/.larder-tmp/\(getpid())-\(n)"))
        }
        let before = fixture.sentinel.fingerprint()
        for n in 0 ..< 4 {
            expectCacheError(.ioFailure) { () throws(CacheError) in try cache.store(Data("overwrite \(n)".utf8), forKey: "k") }
        }
        #expect(fixture.sentinel.fingerprint() == before)
        try cache.store(Data("fine".utf8), forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == Data("fine".utf8))
        #expect(fixture.sentinel.fingerprint() == before)
    }

    @Test(arguments: [HostilePlant.linkToFile, .danglingLink, .fifo, .emptyFile])
    func createExclusivelyRefusesWhatIsThere(plant: HostilePlant) throws {
        let fixture = HostileFixture("larder-tmpfile")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        let io = try FileIO().rooted(at: fixture.root)
        #expect(plant.plant(at: fixture.root + "/t", sentinel: fixture.sentinel))
        let before = fixture.sentinel.fingerprint()
        #expect(throws: Errno.fileExists) { _ = try io.createExclusively(fixture.root + "/t") }
        #expect(fixture.sentinel.fingerprint() == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.sentinel.root + "/created-through-a-link"))
    }
}
