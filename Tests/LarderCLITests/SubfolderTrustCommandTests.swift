#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Testing
@testable import LarderCLI

/// Another user's folder inside the victim's cache, through the `larder` command: `put` never
/// writes through it, and `cat`, `show` and `ls` never show what that user put there.
@Suite struct SubfolderTrustCommandTests {
    /// The reproduction: the victim's root at 0755, the shard folder of "token" and
    /// `.larder-tmp` handed to `nobody` at 0777. `put token` fails naming a folder, writes
    /// nothing into them, and the record `nobody` then plants is never printed.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"), arguments: [false, true])
    func anotherUsersSubfolderIsNeverTrusted(temporaryFolderToo: Bool) throws {
        let temp = TemporaryDirectory("larder-cli-subfolder")
        defer { temp.remove() }
        let dir = temp.path("c")
        #expect(larder(["put", "--dir", dir, "--keys", "verbatim", "kv"], input: Data("fine".utf8)).code == 0)
        HostileFiles.chmod(dir, 0o755)
        var foreign = [dir + "/to"]
        if temporaryFolderToo { foreign.append(dir + "/.larder-tmp") }
        for folder in foreign {
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            HostileFiles.chmod(folder, 0o777)
            #expect(HostileFiles.chown(folder))
        }
        let put = larder(["put", "--dir", dir, "--keys", "verbatim", "token"], input: Data("victim".utf8))
        #expect(put.code != 0)
        #expect(put.stderr.contains(temporaryFolderToo ? ".larder-tmp" : "/to"), "\(put.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/to").isEmpty)

        let header = RecordHeader(
            ttl: 0, updateTimeSec: 1_700_000_000, payloadSizeBytes: 8, payloadChecksum: CRC32.checksum(of: Array("attacker".utf8)),
            storedKey: Array("token".utf8))
        let planted = dir + "/to/token"
        #expect(
            FileManager.default.createFile(atPath: planted, contents: Data(header.encoded() + Array("token".utf8) + Array("attacker".utf8)))
        )
        #expect(HostileFiles.chown(planted))
        for arguments in [["cat"], ["show"]] {
            let result = larder(arguments + ["--dir", dir, "token"])
            #expect(!result.stdout.contains("attacker"), "\(arguments): \(result.stdout)")
        }
        #expect(!larder(["ls", "--dir", dir]).stdout.contains("token"))
        #expect(larder(["cat", "--dir", dir, "kv"]).stdout == "fine")
    }
}
