import Foundation
import Larder
import LarderTestSupport
import Testing

/// What the tool shows of a folder's layout, name and default expiration (issue 12).
@Suite struct LayoutCommandTests {
    @Test func anSPTFolderWithoutMetadataIsJudgedBySPTsDefaultExpirationAndSaysSo() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("spt")
        try Fixtures.copySPTCache(to: dir)
        let manifest = try Fixtures.manifest()
        let result = larder(["stats", "--dir", dir, "--json", "--now", String(Int(manifest.now))])
        #expect(result.code == 0)
        let stats = try #require(try parseJSON(result.stdout) as? [String: Any])
        #expect(stats["defaultExpiration"] as? Double == 600)
        #expect((stats["defaultExpirationSource"] as? String)?.contains("SPTPersistentCache's default") == true)
        #expect(stats["layout"] as? String == "sharded")
        let text = larder(["stats", "--dir", dir, "--now", String(Int(manifest.now))])
        #expect(text.stdout.contains("default expiration  10 min"))
        #expect(text.stdout.contains("SPTPersistentCache's default"))
        let overridden = larder(["stats", "--dir", dir, "--json", "--default-expiration", "60"])
        #expect(try #require(try parseJSON(overridden.stdout) as? [String: Any])["defaultExpiration"] as? Double == 60)
    }

    @Test func aLarderFolderShowsTheExpiryAndNameItsMetadataRecords() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        var options = DiskCacheOptions(directory: temp.url.appendingPathComponent("c"))
        options.name = "covers"
        options.defaultExpiration = 1234
        options.keyEncoding = .verbatim
        options.layout = .flat
        let clock = ManualClock(now: 1_700_000_000)
        options.clock = clock
        do {
            let cache = try DiskCache(options: options)
            try cache.store(Data("x".utf8), forKey: "cover-1")
            try cache.store(Data("y".utf8), forKey: "cover-2")
            cache.close()
        }
        let dir = temp.url.appendingPathComponent("c").path
        let stats = try #require(try parseJSON(larder(["stats", "--dir", dir, "--json", "--now", "1700000000"]).stdout) as? [String: Any])
        #expect(stats["defaultExpiration"] as? Double == 1234)
        #expect(stats["name"] as? String == "covers")
        #expect(stats["layout"] as? String == "flat")
        #expect(stats["records"] as? Int == 2 && stats["ok"] as? Int == 2)
        // 1234 s later both ttl-0 records have expired, as the cache itself would judge them.
        let later = try #require(try parseJSON(larder(["stats", "--dir", dir, "--json", "--now", "1700001235"]).stdout) as? [String: Any])
        #expect(later["expired"] as? Int == 2)
        let listing = larder(["ls", "--dir", dir, "--json", "--now", "1700000000"])
        #expect(listing.code == 0 && listing.stdout.contains("cover-1") && listing.stdout.contains("cover-2"))
        // A command that changes the folder keeps its layout.
        #expect(larder(["rm", "--dir", dir, "--now", "1700000000", "cover-1"]).code == 0)
        #expect(FileManager.default.fileExists(atPath: dir + "/cover-2"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/cover-1"))
    }
}
