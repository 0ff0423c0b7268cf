import Foundation
import Testing
@testable import Larder

/// Attack 1: `.larder.lock` linking to a victim's file was truncated and overwritten with the
/// pid; a dangling link created a file elsewhere. The lock file must be a regular file, with one
/// link, owned by the user, before anything is written to it.
@Suite struct LockFileTests {
    /// A cache folder with one record, closed, and the sentinel's fingerprint.
    static func prepared(_ fixture: HostileFixture) throws -> [String: String] {
        let cache = try DiskCache(options: fixture.options())
        try cache.store(Data("payload".utf8), forKey: "record")
        cache.close()
        _ = unlink(fixture.root + "/.larder.lock")
        return fixture.sentinel.fingerprint()
    }

    @Test(arguments: [HostilePlant.linkToFile, .danglingLink, .linkLoop, .linkToFolder, .fifo, .folder, .folderWithFile])
    func lockFileThatIsNotARegularFileIsRefused(plant: HostilePlant) throws {
        let fixture = HostileFixture("larder-lock")
        defer { fixture.remove() }
        let before = try Self.prepared(fixture)
        #expect(plant.plant(at: fixture.root + "/.larder.lock", sentinel: fixture.sentinel))
        // Opens without blocking (a FIFO) and refuses without writing through the link.
        expectCacheError(.unsafeDirectory, "\(plant)") { () throws(CacheError) in _ = try DiskCache(options: fixture.options()) }
        #expect(fixture.sentinel.fingerprint() == before, "\(plant): the sentinel changed")
        #expect(!FileManager.default.fileExists(atPath: fixture.sentinel.root + "/created-through-a-link"))
        // A reader takes no lock and still works.
        let reader = try DiskCache(options: fixture.options(readOnly: true))
        #expect(try reader.record(forKey: "record")?.data == Data("payload".utf8))
    }

    @Test func hardLinkedLockFileIsRefused() throws {
        let fixture = HostileFixture("larder-lock")
        defer { fixture.remove() }
        let before = try Self.prepared(fixture)
        #expect(HostileFiles.link(fixture.sentinel.root + "/passwd", at: fixture.root + "/.larder.lock"))
        expectCacheError(.unsafeDirectory) { () throws(CacheError) in _ = try DiskCache(options: fixture.options()) }
        #expect(fixture.sentinel.fingerprint() == before)
    }

    @Test(.enabled(if: HostileFiles.isRoot, "needs root to give the file away"))
    func lockFileOwnedByAnotherUserIsRefused() throws {
        let fixture = HostileFixture("larder-lock")
        defer { fixture.remove() }
        _ = try Self.prepared(fixture)
        let lock = fixture.root + "/.larder.lock"
        #expect(FileManager.default.createFile(atPath: lock, contents: Data("1\n".utf8)))
        #expect(HostileFiles.chown(lock))
        expectCacheError(.unsafeDirectory) { () throws(CacheError) in _ = try DiskCache(options: fixture.options()) }
        #expect(FileManager.default.contents(atPath: lock) == Data("1\n".utf8))
        // A group cache shares the lock file between users.
        var group = fixture.options()
        group.sharing = .group
        HostileFiles.chmod(lock, 0o660)
        let cache = try DiskCache(options: group)
        #expect(try cache.record(forKey: "record") != nil)
    }

    @Test func aRegularLockFileIsReusedAndHoldsThePid() throws {
        let fixture = HostileFixture("larder-lock")
        defer { fixture.remove() }
        _ = try Self.prepared(fixture)
        let cache = try DiskCache(options: fixture.options())
        defer { cache.close() }
        let text = String(decoding: FileManager.default.contents(atPath: fixture.root + "/.larder.lock") ?? Data(), as: UTF8.self)
        #expect(text == "\(getpid())\n")
    }
}
