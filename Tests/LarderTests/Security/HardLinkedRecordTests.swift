#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// `lock` and `unlock` rewrite a record's header in place: a record hard-linked to a file outside
/// the root is never written through (docs/SECURITY.md, "Smaller ones").
@Suite struct HardLinkedRecordTests {
    @Test(arguments: [true, false])
    func lockAndUnlockDoNotWriteThroughAHardLink(locking: Bool) throws {
        let fixture = HostileFixture("larder-hardlink")
        defer { fixture.remove() }
        let setUp = try DiskCache(options: fixture.options())
        try setUp.store(Data("mine".utf8), forKey: "kv")
        setUp.close()
        // A file outside the root that reads as a valid record (locked once, so unlock has work).
        var header = RecordHeader(
            refCount: 1, ttl: 0, updateTimeSec: UInt64(Date().timeIntervalSince1970), payloadSizeBytes: 6,
            payloadChecksum: CRC32.checksum(of: Array("victim".utf8)))
        header.refCount = locking ? 0 : 1
        let outside = fixture.dir.path("outside")
        let bytes = Data(header.encoded() + Array("victim".utf8))
        #expect(FileManager.default.createFile(atPath: outside, contents: bytes))
        let record = fixture.recordPath("kv")
        #expect(unlink(record) == 0)
        #expect(HostileFiles.link(outside, at: record))
        _ = unlink(fixture.root + "/.larder-index")
        let cache = try DiskCache(options: fixture.options())
        let changed = locking ? try cache.lock(forKeys: ["kv"]) : try cache.unlock(forKeys: ["kv"])
        #expect(changed.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == bytes, "the file outside the root was written")
    }
}
