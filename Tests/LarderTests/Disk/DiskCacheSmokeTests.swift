import Foundation
import Testing
@testable import Larder

@Suite struct DiskCacheSmokeTests {
    @Test func roundTrip() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("larder-smoke-\(UUID())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = ManualClock(now: 1_700_000_000)
        var options = DiskCacheOptions(directory: dir)
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

    @Test func fixtureOpens() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../../shared/fixtures/spt-cache").standardizedFileURL
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("larder-fixture-\(UUID())")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(at: fixture, to: dir)
        var options = DiskCacheOptions(directory: dir)
        options.keyEncoding = .verbatim
        options.defaultExpiration = 600
        options.clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: options)
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: fixture.deletingLastPathComponent().appendingPathComponent("spt-cache.manifest.json"))) as! [String: Any]
        for record in manifest["records"] as! [[String: Any]] {
            let key = record["key"] as! String
            let loaded = try cache.load(forKey: key)
            #expect((loaded != nil) == (record["readable"] as! Bool), "\(key) \(record)")
            if let loaded {
                #expect(SHA256Hash.hex(of: String(decoding: loaded.data, as: UTF8.self)).count == 64)
                #expect(loaded.lockCount == record["refCount"] as! Int)
            }
        }
    }
}
