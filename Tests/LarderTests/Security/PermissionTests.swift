import Foundation
import Testing
@testable import Larder

/// Attack 3: everything world-readable, and a root pre-created by another user used as is.
@Suite struct PermissionTests {
    static func mode(_ path: String) -> UInt16? { HostileFiles.modeAndOwner(path)?.mode }

    @Test func newFoldersAndFilesAreOwnerOnly() throws {
        let fixture = HostileFixture("larder-perm")
        defer { fixture.remove() }
        let root = fixture.root + "/nested"
        var options = DiskCacheOptions(directory: URL(fileURLWithPath: root))
        options.keyEncoding = .sha256
        let cache = try DiskCache(options: options)
        try cache.store(Data("token=secret".utf8), forKey: "https://example.com/?token=1")
        cache.close()  // writes the index snapshot
        let record = DiskLayout(root: root).path(for: SHA256Hash.hex(of: "https://example.com/?token=1"))
        let shard = (record as NSString).deletingLastPathComponent
        for folder in [fixture.root, root, root + "/.larder-tmp", shard] {
            #expect(Self.mode(folder) == 0o700, "\(folder)")
        }
        for file in [root + "/.larder", root + "/.larder.lock", root + "/.larder-index", record] {
            #expect(Self.mode(file) == 0o600, "\(file)")
        }
    }

    @Test(arguments: [(CacheSharing.readableByOthers, UInt16(0o755), UInt16(0o644)), (.group, 0o770, 0o660)])
    func sharingChoosesTheModes(sharing: CacheSharing, folderMode: UInt16, fileMode: UInt16) throws {
        let fixture = HostileFixture("larder-perm")
        defer { fixture.remove() }
        var options = fixture.options()
        options.sharing = sharing
        let cache = try DiskCache(options: options)
        try cache.store(Data("x".utf8), forKey: "shared")
        cache.close()
        #expect(Self.mode(fixture.root) == folderMode)
        #expect(Self.mode(fixture.root + "/sh") == folderMode)
        #expect(Self.mode(fixture.recordPath("shared")) == fileMode)
        #expect(Self.mode(fixture.root + "/.larder-index") == fileMode)
    }

    @Test(arguments: [UInt16(0o777), 0o775, 0o757, 0o722])
    func rootWritableByOthersIsRefused(mode: UInt16) throws {
        let fixture = HostileFixture("larder-perm")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        HostileFiles.chmod(fixture.root, mode)
        expectCacheError(.unsafeDirectory) { () throws(CacheError) in _ = try DiskCache(options: fixture.options()) }
        // Nothing was written into it before the refusal.
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.root).isEmpty)
        // A group cache accepts group write, never write by others.
        var group = fixture.options()
        group.sharing = .group
        if mode & 0o002 == 0 {
            _ = try DiskCache(options: group)
        } else {
            expectCacheError(.unsafeDirectory) { () throws(CacheError) in _ = try DiskCache(options: group) }
        }
        // Reading does not need to own the folder.
        _ = try DiskCache(options: fixture.options(readOnly: true))
    }

    @Test func rootWithoutGroupOrOtherWriteIsAccepted() throws {
        let fixture = HostileFixture("larder-perm")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        HostileFiles.chmod(fixture.root, 0o755)
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data("x".utf8), forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == Data("x".utf8))
    }

    /// The attacker pre-creates the victim's cache folder, world-writable, as another user
    /// (`setpriv` as nobody); the victim's cache refuses it instead of storing payloads the
    /// attacker can read.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"), arguments: ["0777", "0700", "0755"])
    func rootOwnedByAnotherUserIsRefused(mode: String) throws {
        let fixture = HostileFixture("larder-perm")
        defer { fixture.remove() }
        HostileFiles.chmod(fixture.dir.path, 0o755)
        if !HostileFiles.makeFolderAsOtherUser(fixture.root, mode: mode) {
            try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
            HostileFiles.chmod(fixture.root, UInt16(mode, radix: 8)!)
            #expect(HostileFiles.chown(fixture.root))
        }
        #expect(HostileFiles.modeAndOwner(fixture.root)?.owner == HostileFiles.otherUser)
        expectCacheError(.unsafeDirectory) { () throws(CacheError) in _ = try DiskCache(options: fixture.options()) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.root).isEmpty, "the cache wrote into the attacker's folder")
        // A deliberately shared cache accepts another owner, unless others may write.
        var group = fixture.options()
        group.sharing = .group
        if mode == "0777" {
            expectCacheError(.unsafeDirectory) { () throws(CacheError) in _ = try DiskCache(options: group) }
        } else {
            _ = try DiskCache(options: group)
        }
    }
}
