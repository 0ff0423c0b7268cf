#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Testing
@testable import LarderCLI

/// `export` and `report`: one payload per name, and the cache's privacy kept.
@Suite struct ExportSafetyTests {
    /// The empty key goes to `%`, as the help says, so the key spelling its file name keeps its
    /// own payload; when two records would still share a name, the second is skipped and listed.
    @Test func exportNeverWritesTwoPayloadsToOneName() throws {
        let temp = TemporaryDirectory("larder-cli-export")
        defer { temp.remove() }
        let dir = temp.path("c")
        let emptyName = SHA256Hash.hex(of: "")
        #expect(larder(["put", "--dir", dir, ""], input: Data("empty".utf8)).code == 0)
        #expect(larder(["put", "--dir", dir, emptyName], input: Data("named".utf8)).code == 0)
        let out = temp.path("out")
        let result = larder(["export", "--dir", dir, out])
        #expect(result.stdout.contains("exported 2 payloads"), "\(result.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/%")) == Data("empty".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/" + emptyName)) == Data("named".utf8))

        // A record whose key is not stored (renamed into place by hand) is named by its file
        // name, which another record's key already takes: skipped, and said so.
        let other = temp.path("c2")
        #expect(larder(["put", "--dir", other, "--keys", "sha256", "k"], input: Data("one".utf8)).code == 0)
        let name = SHA256Hash.hex(of: "k")
        #expect(larder(["put", "--dir", other, name], input: Data("two".utf8)).code == 0)
        let path = DiskLayout(root: other).path(for: name)
        let header = RecordHeader(
            ttl: 0, updateTimeSec: UInt64(Date().timeIntervalSince1970), payloadSizeBytes: 3,
            payloadChecksum: CRC32.checksum(of: Array("one".utf8)))
        try Data(header.encoded() + Array("one".utf8)).write(to: URL(fileURLWithPath: path))
        _ = unlink(other + "/.larder-index")
        let out2 = temp.path("out2")
        let second = larder(["export", "--dir", other, out2])
        #expect(second.stdout.contains("exported 1 payload "), "\(second.stdout)")
        #expect(second.stdout.contains("is taken by the payload of"), "\(second.stdout)")
        #expect(second.code == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out2).count == 1)
    }

    /// A private cache's export and report are 0600 files in 0700 folders, whatever the umask.
    @Test func outputsKeepTheCachesPrivacy() throws {
        let temp = TemporaryDirectory("larder-cli-export")
        defer { temp.remove() }
        let dir = temp.path("c")
        #expect(larder(["put", "--dir", dir, "token"], input: Data("secret".utf8)).code == 0)
        let out = temp.path("out/nested")
        #expect(larder(["export", "--dir", dir, out]).code == 0)
        #expect(Self.mode(out) == 0o700)
        #expect(Self.mode(temp.path("out")) == 0o700)
        #expect(Self.mode(out + "/token") == 0o600)
        let report = temp.path("report.html")
        #expect(larder(["report", "--dir", dir, "--html", report]).code == 0)
        #expect(Self.mode(report) == 0o600)
        // A cache others may read: its outputs may be read too.
        chmod(dir, 0o755)
        let open = temp.path("open")
        #expect(larder(["export", "--dir", dir, open]).code == 0)
        #expect(Self.mode(open + "/token") == 0o644 & ~Self.umaskValue)
    }

    private static var umaskValue: UInt16 {
        let current = umask(0o022)
        umask(current)
        return UInt16(current)
    }

    private static func mode(_ path: String) -> UInt16? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return UInt16(info.st_mode & 0o7777)
    }
}
