import Foundation
import Testing
@testable import Larder

@Suite struct DiskCacheSmokeTests {
    @Test func roundTrip() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var options = DiskCacheOptions(directory: dir.url)
        options.clock = clock
        let cache = try DiskCache(options: options)
        try cache.store(Data("hello".utf8), forKey: "a/b?c", ttl: 10)
        let record = try #require(try cache.load(forKey: "a/b?c"))
        #expect(record.data == Data("hello".utf8))
        #expect(record.ttl == 10)
        #expect(cache.count == 1)
        #expect(try cache.keys(withPrefix: "a/") == ["a/b?c"])
        clock.advance(by: 11)
        #expect(try cache.load(forKey: "a/b?c") == nil)
        cache.close()
        let again = try DiskCache(options: options)
        #expect(again.count == 0)
    }

    @Test func fixtureReadsAsManifestSays() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let copy = dir.appending("spt")
        try Fixtures.copySPTCache(to: copy)
        let manifest = try Fixtures.manifest()
        var options = DiskCacheOptions(directory: copy)
        options.keyEncoding = .verbatim
        options.defaultExpiration = manifest.defaultExpiration
        options.clock = ManualClock(now: manifest.now)
        let cache = try DiskCache(options: options)
        for record in manifest.records {
            let loaded = try cache.load(forKey: record.key)
            #expect((loaded != nil) == record.readable, "\(record.key)")
            if let loaded {
                #expect(loaded.data.withUnsafeBytes { SHA256Hash.hex($0) } == record.payloadSha256)
                #expect(loaded.lockCount == record.refCount)
                #expect(loaded.ttl == TimeInterval(record.ttl))
            }
            if record.corruption != nil {
                #expect(!FileManager.default.fileExists(atPath: copy.appendingPathComponent(record.file).path))
            }
        }
    }
}
