import Foundation
import Larder
import LarderTestSupport
import Testing

/// What `larder stats` says about who writes the folder.
@Suite struct StatsWriterTests {
    @Test func statsNamesTheWritersThatShareTheFolder() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let dir = temp.path("c")
        let first = try HelperProcess("larder-stress", ["hold", "--dir", dir, "--shares", "1"])
        defer { first.kill() }
        let firstPID = try #require(first.waitUntilReady())
        let second = try HelperProcess("larder-stress", ["hold", "--dir", dir, "--shares", "1"])
        defer { second.kill() }
        let secondPID = try #require(second.waitUntilReady())
        let text = larder(["stats", "--dir", dir])
        #expect(text.code == 0)
        #expect(text.stdout.contains("shared by 2 writers (processes \(firstPID), \(secondPID))"), "\(text.stdout)")
        let json = try #require(try parseJSON(larder(["stats", "--dir", dir, "--json"]).stdout) as? [String: Any])
        #expect(json["sharingWriterPIDs"] as? [Int] == [Int(firstPID), Int(secondPID)])
        #expect(json["writerPID"] is NSNull)
        // A writer killed is no longer named.
        first.kill()
        #expect(first.wasKilled)
        #expect(larder(["stats", "--dir", dir]).stdout.contains("shared by 1 writer (process \(secondPID))"))
        second.kill()
        let after = larder(["stats", "--dir", dir]).stdout
        #expect(!after.contains("shared by") && after.contains("none"))
    }
}
