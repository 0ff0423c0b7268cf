import Foundation
import Testing
import LarderTestSupport
@testable import Larder

/// Attack 2: shard folders followed through links. With `im -> /victim`, a load deleted
/// `/victim/important.txt`, and with hashed keys stores landed outside the cache. Every path now
/// resolves beneath a descriptor of the root without following a link at any component.
@Suite struct PathEscapeTests {
    @Test(arguments: [HostilePlant.linkToFolder, .linkToFile, .danglingLink, .linkLoop, .fifo, .garbageFile], [false, true])
    func verbatimKeysDoNotReachThroughALinkedShard(plant: HostilePlant, walking: Bool) throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options(), systemCalls: HostileFolderFuzzTests.calls(walking: walking))
        try cache.store(Data("bystander".utf8), forKey: "bystander")
        // The link points at the sentinel root, which holds `important.txt`: the key's record path.
        if plant == .linkToFolder {
            #expect(HostileFiles.symlink(fixture.sentinel.root, at: fixture.root + "/im"))
        } else {
            #expect(plant.plant(at: fixture.root + "/im", sentinel: fixture.sentinel))
        }
        let before = fixture.sentinel.fingerprint()
        let key = "important.txt"
        #expect(try cache.record(forKey: key) == nil)
        #expect(!cache.contains(key))
        #expect(try cache.lock(forKeys: [key]).isEmpty)
        #expect(try cache.unlock(forKeys: [key]).isEmpty)
        _ = try? cache.touch(forKey: key)
        do { try cache.remove(forKeys: [key]) } catch { #expect(error.code == .ioFailure) }
        #expect(fixture.sentinel.fingerprint() == before, "\(plant): reached through the shard")
        // A store replaces a link with a real folder; anything else makes the store fail.
        do {
            try cache.store(Data("mine".utf8), forKey: key)
            #expect(try cache.record(forKey: key)?.data == Data("mine".utf8))
            #expect(HostileFiles.modeAndOwner(fixture.root + "/im")?.mode == 0o700)
        } catch {
            #expect(error.code == .ioFailure && plant != .linkToFolder && plant != .danglingLink && plant != .linkToFile)
        }
        _ = try cache.collectGarbage()
        try cache.removeAll()
        #expect(fixture.sentinel.fingerprint() == before, "\(plant): changed outside the root")
        #expect(try cache.record(forKey: "bystander") == nil)
    }

    @Test func hashedKeysDoNotLandOutsideTheRoot() throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        let cache = try DiskCache(options: fixture.options(.sha256))
        let keys = (0 ..< 16).map { "key-\($0)" }
        for key in keys {
            let shard = (fixture.recordPath(key, .sha256) as NSString).deletingLastPathComponent
            _ = HostileFiles.symlink(fixture.sentinel.root + "/inner", at: shard)
        }
        let before = fixture.sentinel.fingerprint()
        for key in keys { try cache.store(Data(key.utf8), forKey: key) }
        for key in keys { #expect(try cache.record(forKey: key)?.data == Data(key.utf8)) }
        #expect(fixture.sentinel.fingerprint() == before)
        #expect(DiskAudit.recordFiles(in: fixture.root).count == keys.count)
    }

    @Test(arguments: [HostilePlant.linkToFolder, .danglingLink, .fifo, .garbageFile])
    func temporaryFolderReplacedByALinkIsMadeAgain(plant: HostilePlant) throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        try DiskCache(options: fixture.options()).close()
        #expect(plant.plant(at: fixture.root + "/.larder-tmp", sentinel: fixture.sentinel))
        let before = fixture.sentinel.fingerprint()
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data("x".utf8), forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == Data("x".utf8))
        #expect(fixture.sentinel.fingerprint() == before)
    }

    /// The rooted file layer refuses paths that leave the root, whatever the caller builds.
    @Test func pathsOutsideTheRootAreRefused() throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        let io = try FileIO().rooted(at: fixture.root)
        for path in [
            fixture.sentinel.root + "/important.txt", fixture.root + "/../sentinel/important.txt",
            fixture.root + "/./x", fixture.root + "x/y", "/etc/passwd", "relative",
        ] {
            #expect(throws: Errno.escapesRoot) { _ = try io.readFile(path, limit: 1 << 20) }
            #expect(throws: Errno.escapesRoot) { try io.unlink(path) }
        }
        #expect(FileManager.default.fileExists(atPath: fixture.sentinel.root + "/important.txt"))
    }

    /// A collection's removal from a folder it opened once (`unlink(_:inFolder:)`) takes one
    /// name: a path, `.`, `..` or nothing is refused before any system call, a folder is never
    /// removed, and a link goes without its target.
    @Test func unlinkInAFolderTakesOneNameOnly() throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        let folder = fixture.root + "/ab"
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: folder + "/file", contents: Data("x".utf8))
        try FileManager.default.createSymbolicLink(atPath: folder + "/link", withDestinationPath: fixture.sentinel.root + "/important.txt")
        let io = try FileIO().rooted(at: fixture.root)
        let fd = try io.openDirectory(folder)
        defer { io.close(fd) }
        for bad in ["", ".", "..", "../ab/file", "sub/x", "../../sentinel/important.txt", "file\u{0}x"] {
            #expect(throws: Errno.escapesRoot, "\(bad.debugDescription)") { try io.unlink(bad, inFolder: fd) }
        }
        #expect(throws: Errno.self) { try io.unlink("sub", inFolder: fd) }
        #expect(FileManager.default.fileExists(atPath: folder + "/sub"))
        #expect(try io.unlink("link", inFolder: fd))
        #expect(FileManager.default.fileExists(atPath: fixture.sentinel.root + "/important.txt"))
        #expect(try io.unlink("file", inFolder: fd))
        #expect(try !io.unlink("file", inFolder: fd))
        #expect(!FileManager.default.fileExists(atPath: folder + "/file"))
    }

    @Test func relativePathsAreCheckedComponentByComponent() throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        let root = try #require(try FileIO().rooted(at: fixture.root).root)
        let r = fixture.root
        #expect(root.relativePath(of: r) == "")
        #expect(root.relativePath(of: r + "/ab/abc") == "ab/abc")
        #expect(root.relativePath(of: r + "/.larder") == ".larder")
        #expect(root.relativePath(of: r + "/...") == "...")
        #expect(root.relativePath(of: r + "/a..") == "a..")
        for bad in [r + "/", r + "/.", r + "/..", r + "/a/../b", r + "/a//b", r + "/a/", r + "/./a", r + "x", r + "/a\u{0}b", "/", "rel"] {
            #expect(root.relativePath(of: bad) == nil, "\(bad.debugDescription)")
            #expect(root.components(of: bad) == nil || bad == r + "/" || bad == r + "/a//b" || bad == r + "/a/", "\(bad.debugDescription)")
        }
    }

    /// `components(of:)` splits at every `/` byte. Splitting the string by characters, as it
    /// once did, did not split where a combining mark follows the slash: `../\u{301}` was one
    /// component, not `..`, and `openat` would have walked up out of the root.
    @Test func componentsSplitAtEverySlashByte() throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        let root = try #require(try FileIO().rooted(at: fixture.root).root)
        let r = fixture.root
        #expect(root.components(of: r + "/../\u{301}") == nil)
        #expect(root.components(of: r + "/a/./\u{301}") == nil)
        #expect(root.components(of: r + "/a/\u{301}") == ["a", "\u{301}"])
        #expect(root.components(of: r + "/e\u{301}/日本") == ["e\u{301}", "日本"])
        func reference(_ path: String) -> [String]? {
            if path == r { return [] }
            guard path.utf8.starts(with: (r + "/").utf8) else { return nil }
            var result: [String] = []
            for part in path.utf8.dropFirst(r.utf8.count + 1).split(separator: UInt8(ascii: "/")) {
                let name = String(decoding: part, as: UTF8.self)
                if name == "." || name == ".." || part.contains(0) { return nil }
                result.append(name)
            }
            return result
        }
        let parts = ["ab", ".", "..", "...", ".a", "a.", "", "e\u{301}", "\u{301}", "日本", "a\u{0}b", "x y", "🙂"]
        var generator = SplitMix64(seed: 19)
        var paths = [r, r + "/", r + "x", "/", ""]
        for _ in 0 ..< 2_000 {
            let count = Int.random(in: 1 ... 4, using: &generator)
            paths.append(r + "/" + (0 ..< count).map { _ in parts.randomElement(using: &generator)! }.joined(separator: "/"))
        }
        for path in paths {
            #expect(root.components(of: path) == reference(path), "\(path.debugDescription)")
        }
    }

    /// The Swift-named helpers over `stat` and `statvfs` that keep C out of `Disk/`.
    @Test func fileAndVolumeInfoSpeakSwift() throws {
        let fixture = HostileFixture("larder-escape")
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.root, withIntermediateDirectories: true)
        let io = try FileIO().rooted(at: fixture.root)
        _ = FileManager.default.createFile(atPath: fixture.root + "/f", contents: Data(repeating: 1, count: 5000))
        #expect(HostileFiles.symlink("/etc/passwd", at: fixture.root + "/l"))
        #expect(HostileFiles.mkfifo(fixture.root + "/p"))
        let file = try #require(try io.info(atPath: fixture.root + "/f"))
        #expect(file.kind == .regular && file.size == 5000 && file.linkCount == 1 && file.allocatedBytes >= 4096)
        #expect(file.ownerID == ProcessIdentity.effectiveUserID && file.modificationTime > 1_700_000_000)
        #expect(try io.info(atPath: fixture.root + "/l")?.kind == .symbolicLink)
        #expect(try io.info(atPath: fixture.root + "/p")?.kind == .fifo)
        #expect(try io.info(atPath: fixture.root)?.kind == .directory)
        #expect(try io.info(atPath: fixture.root + "/missing") == nil)
        #expect(throws: Errno.notARegularFile) { _ = try io.readFile(fixture.root + "/p", limit: 100) }
        #expect(throws: Errno.tooManySymbolicLinks) { _ = try io.readFile(fixture.root + "/l", limit: 100) }
        let volume = try io.volumeInfo(fixture.root)
        #expect(volume.size > 0 && volume.available <= volume.size)
    }
}
