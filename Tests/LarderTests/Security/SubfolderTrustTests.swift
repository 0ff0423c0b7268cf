import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// Another user who owns, or may write, a folder or file inside the victim's cache: the cache
/// never writes through it and never trusts what it holds (docs/SECURITY.md, "Subfolders and
/// files beneath the root").
@Suite struct SubfolderTrustTests {
    /// A folder inside the victim's root given to `nobody` with `mode`, as root leaves it when it
    /// unpacks an archive with its owners kept (`nobody` cannot make it: the root is the victim's).
    /// A new folder appears already given away: it is made beside the root and renamed into it,
    /// so that the cache (whose index build may list the root meanwhile) never sees it as its own
    /// user's, which no other user could arrange.
    private func makeForeignFolder(_ path: String, mode: String = "0777") {
        plant(at: path) { staging in
            try? FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: false)
            HostileFiles.chmod(staging, UInt16(mode, radix: 8)!)
            HostileFiles.chown(staging)
        }
        #expect(HostileFiles.modeAndOwner(path)?.owner == HostileFiles.otherUser)
    }

    /// The attacker's side: a valid record of `key` holding `payload`, planted at `path` and
    /// given to `nobody`, appearing there with its owner and mode already set.
    private func plantRecord(_ payload: String, key: String, at path: String, mode: UInt16 = 0o644) {
        plant(at: path) { staging in
            #expect(FileManager.default.createFile(atPath: staging, contents: Data(recordBytes(Array(payload.utf8), key: key))))
            HostileFiles.chmod(staging, mode)
            HostileFiles.chown(staging)
        }
    }

    /// Makes what `make` makes at a staging path outside the cache's root (on the same volume),
    /// then renames it to `path`; something already at `path` is changed in place instead.
    private func plant(at path: String, _ make: (String) -> Void) {
        guard !FileManager.default.fileExists(atPath: path) else { return make(path) }
        // Beside the cache's root (the first folder up that holds `.larder`), else beside the
        // folder `path` is in.
        func parent(_ path: String) -> String { (path as NSString).deletingLastPathComponent }
        var outside = parent(parent(path))
        var folder = parent(path)
        while folder.count > 1 {
            if FileManager.default.fileExists(atPath: folder + "/.larder") {
                outside = parent(folder)
                break
            }
            folder = parent(folder)
        }
        let staging = outside + "/.planting-\(UUID().uuidString)"
        make(staging)
        #expect(rename(staging, path) == 0, "could not rename the planted item into place (errno \(errno))")
    }

    /// The reproduction: the shard folder of "token" belongs to `nobody` and anyone may write
    /// it. The victim's store fails naming that folder, writing nothing into it; the record the
    /// attacker then puts there is a miss for a writer, a new writer and a reader alike.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"))
    func foreignShardFolderIsNeitherWrittenNorRead() throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        HostileFiles.chmod(fixture.root, 0o755)
        // A cache already (its metadata), so that the open below does not take the planted
        // folder for a stranger's files and refuse the whole folder.
        try DiskCache(options: fixture.options()).close()
        let shard = fixture.root + "/to"
        makeForeignFolder(shard)
        let cache = try DiskCache(options: fixture.options())
        do {
            try cache.store(Data("victim".utf8), forKey: "token")
            Issue.record("the store wrote through a folder another user controls")
        } catch {
            #expect(error.code == .unsafeDirectory)
            #expect(error.path == shard, "\(error)")
            #expect(error.message.contains("65534"), "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: shard).isEmpty, "a file was written into the attacker's folder")
        // Records in the cache's own folders still work.
        try cache.store(Data("fine".utf8), forKey: "kv")
        #expect(try cache.value(forKey: "kv") == Data("fine".utf8))

        plantRecord("attacker", key: "token", at: fixture.recordPath("token"))
        #expect(try cache.value(forKey: "token") == nil)
        #expect(try !cache.keys().contains("token"))
        cache.close()
        let again = try DiskCache(options: fixture.options())
        #expect(try again.value(forKey: "token") == nil)
        #expect(try !again.keys().contains("token"))
        #expect(try again.value(forKey: "kv") == Data("fine".utf8))
        again.close()
        let reader = try DiskCache(options: fixture.options(readOnly: true))
        #expect(try reader.value(forKey: "token") == nil)
        #expect(try reader.value(forKey: "kv") == Data("fine".utf8))
    }

    /// The same with hashed keys, whose shard folders are two hex digits: the folder is checked
    /// when the cache goes through it, whatever the name.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"))
    func foreignShardFolderOfHashedKeysIsRefused() throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        let path = fixture.recordPath("token", .sha256)
        let cache = try DiskCache(options: fixture.options(.sha256))
        makeForeignFolder(FileIO.parentFolder(of: path), mode: "0755")
        expectCacheError(.unsafeDirectory) { () throws(CacheError) in try cache.store(Data("victim".utf8), forKey: "token") }
        plantRecord("attacker", key: "token", at: path)
        #expect(try cache.value(forKey: "token") == nil)
        #expect(!cache.contains("token"))
    }

    /// `.larder-tmp` owned by `nobody` at 0777: whoever controls it could swap a record between
    /// its write and its rename, so a writer refuses to open, naming the folder, and writes
    /// nothing into it.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"))
    func foreignTemporaryFolderIsRefused() throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        HostileFiles.chmod(fixture.root, 0o755)
        let temporary = fixture.root + "/" + DiskLayout.temporaryFolderName
        makeForeignFolder(temporary)
        let planted = temporary + "/left-by-nobody"
        #expect(FileManager.default.createFile(atPath: planted, contents: Data("x".utf8)))
        do {
            _ = try DiskCache(options: fixture.options())
            Issue.record("a writer opened with another user's temporary folder")
        } catch {
            #expect(error.code == .unsafeDirectory)
            #expect(error.path == temporary, "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary) == ["left-by-nobody"])
        // A reader writes nothing there, so it opens.
        _ = try DiskCache(options: fixture.options(readOnly: true))
    }

    /// A record file in the cache's own folder that another user owns (they can rewrite it at
    /// any time), or that others may write, is a miss, and left where it is; a store replaces it.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"), arguments: [true, false])
    func foreignOrWritableRecordFilesAreMisses(foreignOwner: Bool) throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        let setUp = try DiskCache(options: fixture.options())
        try setUp.store(Data("victim".utf8), forKey: "token")
        setUp.close()
        let path = fixture.recordPath("token")
        #expect(unlink(path) == 0)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(recordBytes(Array("attacker".utf8), key: "token"))))
        if foreignOwner { HostileFiles.chown(path) } else { HostileFiles.chmod(path, 0o666) }
        for readOnly in [false, true] {
            let cache = try DiskCache(options: fixture.options(readOnly: readOnly))
            #expect(try cache.value(forKey: "token") == nil, "read-only: \(readOnly)")
            cache.close()
        }
        #expect(FileManager.default.fileExists(atPath: path))
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data("new".utf8), forKey: "token")
        #expect(try cache.value(forKey: "token") == Data("new".utf8))
        #expect(HostileFiles.modeAndOwner(path)?.owner == 0)
    }

    /// Metadata another user owns is refused as a lock file of theirs is.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"))
    func foreignMetadataIsRefused() throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        try DiskCache(options: fixture.options()).close()
        HostileFiles.chown(fixture.root + "/" + DiskLayout.metadataName)
        expectCacheError(.unsafeDirectory) { () throws(CacheError) in _ = try DiskCache(options: fixture.options()) }
    }

    /// Reading another user's cache still works: a reader trusts the root's owner as well as
    /// itself, but not a third user (nor a folder anyone may write).
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"))
    func aReaderTrustsTheRootsOwner() throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        let writer = try DiskCache(options: fixture.options())
        try writer.store(Data("theirs".utf8), forKey: "token")
        try writer.store(Data("other".utf8), forKey: "kv")
        writer.close()
        for path in [fixture.root, fixture.root + "/to", fixture.recordPath("token"), fixture.root + "/kv", fixture.recordPath("kv")] {
            HostileFiles.chown(path)
        }
        HostileFiles.chmod(fixture.root + "/kv", 0o777)
        let reader = try DiskCache(options: fixture.options(readOnly: true))
        #expect(try reader.value(forKey: "token") == Data("theirs".utf8))
        #expect(try reader.value(forKey: "kv") == nil)
    }

    /// With `.group` sharing, a folder of another member that the group may write is the
    /// cache's; one that others may write is not.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"), arguments: ["0770", "0777"])
    func groupSharingAcceptsGroupWriteOnly(mode: String) throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        HostileFiles.chmod(fixture.root, 0o770)
        var options = fixture.options()
        options.sharing = .group
        try DiskCache(options: options).close()
        makeForeignFolder(fixture.root + "/to", mode: mode)
        let cache = try DiskCache(options: options)
        if mode == "0770" {
            try cache.store(Data("shared".utf8), forKey: "token")
            #expect(try cache.value(forKey: "token") == Data("shared".utf8))
        } else {
            expectCacheError(.unsafeDirectory) { () throws(CacheError) in try cache.store(Data("shared".utf8), forKey: "token") }
        }
    }

    /// A shard folder the cache made vouches for itself alone: another user's folder whose name
    /// is canonically equivalent ("\u{C5}x", Latin capital A with ring, beside the cache's own
    /// "\u{212B}x", the Angstrom sign) is another folder, and is checked as one.
    @Test(.enabled(if: HostileFiles.isRoot, "needs root to act as another user"))
    func aTrustedFolderDoesNotVouchForACanonicallyEquivalentName() throws {
        let fixture = HostileFixture("larder-subfolder")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options())
        defer { cache.close() }
        try cache.store(Data("own".utf8), forKey: "\u{212B}x-own")
        let shard = fixture.root + "/\u{C5}x"
        makeForeignFolder(shard)
        #expect(FileManager.default.fileExists(atPath: fixture.root + "/\u{212B}x"))
        do {
            try cache.store(Data("victim".utf8), forKey: "\u{C5}x-token")
            Issue.record("the store wrote through a folder another user controls")
        } catch {
            #expect(error.code == .unsafeDirectory, "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: shard).isEmpty, "a file was written into the attacker's folder")
        #expect(try cache.value(forKey: "\u{212B}x-own") == Data("own".utf8))
    }
}
