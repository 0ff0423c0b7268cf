import Foundation
import Testing
@testable import LarderCLI

@Suite struct DemoCommandTests {
    @Test func demoRunsTwiceOnTheSameDirectory() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("demo")
        for run in 1 ... 2 {
            let result = larder(["demo", "--dir", dir])
            #expect(result.code == 0, "run \(run): \(result.stderr)")
            for section in ["Disk tier", "Memory tier", "Expiry", "Lock", "Collection with a size limit", "Promotion", "Statistics"] {
                #expect(result.stdout.contains("\n\(section)\n"), "run \(run): \(section)")
            }
            #expect(result.stdout.contains("miss (expired)"))
            #expect(result.stdout.contains("evicted api/playlist.json (countLimit)"), "the least recently used value goes")
            #expect(result.stdout.contains("survived"))
            #expect(result.stdout.contains("(sizeLimit)"))
            #expect(result.stdout.contains("promoted to memory"))
            #expect(result.stdout.contains("memory hit; disk loads for both reads: 1"))
            #expect(result.stdout.contains("memory yes, disk yes"))
            #expect(result.stdout.contains("gone from both tiers"))
        }
        let rows = try #require(try parseJSON(larder(["ls", "--dir", dir, "--json"]).stdout) as? [[String: Any]])
        let pinned = try #require(rows.first { $0["key"] as? String == DemoRun.pinnedKey })
        #expect(pinned["lockCount"] as? Int == 1)
        #expect(rows.allSatisfy { $0["status"] as? String == "ok" })
        #expect(!rows.contains { $0["key"] as? String == DemoRun.tokenKey })
        #expect(larder(["verify", "--dir", dir]).code == 0)
    }

    @Test func demoDefaultsToTheXDGCacheDirectory() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let result = larder(["demo"], environment: ["XDG_CACHE_HOME": temp.path])
        #expect(result.code == 0)
        #expect(FileManager.default.fileExists(atPath: temp.path + "/larder/demo/.larder"))
    }
}
