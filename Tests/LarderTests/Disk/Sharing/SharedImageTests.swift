import Foundation
import Testing
@testable import Larder

/// The index image of a folder that writers share (`DiskCache+SharedImage.swift`): written under
/// the change lock with its place in the change log, loaded by an opener that then replays the
/// log after that place, and unused once the log starts a new generation or a writer that holds
/// the folder alone has changed it.
@Suite struct SharedImageTests {
    static let keyCount = 40

    /// A sharing writer holding `keyCount` records, flushed (so the shared image is written),
    /// then changed after the image: one record replaced, one removed, one locked.
    static func fill(_ a: DiskCache) throws {
        for i in 0 ..< keyCount { try a.store(SharedFolderCacheTests.payload("k\(i)", 1), forKey: "k\(i)") }
        #expect(try a.flush())
        try a.store(SharedFolderCacheTests.payload("k0", 2), forKey: "k0")
        #expect(try a.remove(forKey: "k1"))
        #expect(try a.lock(forKeys: ["k2"]) == ["k2"])
    }

    @Test func anOpenerStartsFromTheImageAndReplaysTheLogAfterIt() throws {
        let dir = TemporaryDirectory("larder-shared-image")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let a = try SharedFolderCacheTests.open(dir, clock: clock)
        try Self.fill(a)
        let b = try SharedFolderCacheTests.open(dir, clock: clock)
        // Every record was in the image: no header was read.
        #expect(!b.state.withLock { $0.buildReadHeaders })
        // What the log recorded after the image is in B's index, not only in the files.
        #expect(!b.contains("k1"))
        #expect(b.count == Self.keyCount - 1)
        #expect(b.totalSize == a.totalSize)
        #expect(b.lockedSize == a.lockedSize && b.lockedSize > 0)
        #expect(try b.value(forKey: "k0") == SharedFolderCacheTests.payload("k0", 2))
        let keys = Set(try b.keys())
        let (total, locked) = (b.totalSize, b.lockedSize)
        a.close()
        b.close()
        // The files say the same: a reader that reads every header.
        var options = testOptions(dir.url, clock: clock, encoding: .verbatim)
        options.isReadOnly = true
        let reader = try DiskCache(options: options)
        defer { reader.close() }
        #expect(Set(try reader.keys()) == keys)
        #expect(reader.totalSize == total && reader.lockedSize == locked)
    }

    /// A writer that died mid-change (its mark left set) left the folder with a change the log
    /// does not hold: the next opener starts a new generation, so the image is not trusted.
    @Test func aChangeLeftMarkedBegunMakesTheNextOpenerReadTheFolder() throws {
        let dir = TemporaryDirectory("larder-shared-image")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let a = try SharedFolderCacheTests.open(dir, clock: clock)
        defer { a.close() }
        try Self.fill(a)
        // A removal on disk that no log record holds, and the mark its writer would have left.
        let name = try a.options.keyEncoding.fileName(for: "k3")
        #expect(unlink(a.layout.path(for: name)) == 0)
        let sharing = FileHandle(forUpdatingAtPath: dir.url.path + "/" + SharedFolder.sharingFileName)
        try sharing?.write(contentsOf: Data([1]))
        try sharing?.close()
        let b = try SharedFolderCacheTests.open(dir, clock: clock)
        defer { b.close() }
        #expect(b.state.withLock { $0.buildReadHeaders })
        #expect(!b.contains("k3"))
        #expect(b.count == Self.keyCount - 2)
        // The new generation reaches A too: it reads the folder at its next operation.
        #expect(a.count == Self.keyCount - 2)
    }

    /// A writer that holds the folder alone records nothing in the log: it removes the shared
    /// image when it opens, so that a sharing writer after it does not trust an image its
    /// changes (here a lock, which leaves every folder's stamp as it was) are missing from.
    @Test func aWriterAloneWithdrawsTheSharedImage() throws {
        let dir = TemporaryDirectory("larder-shared-image")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let a = try SharedFolderCacheTests.open(dir, clock: clock)
        try Self.fill(a)
        a.close()
        #expect(FileManager.default.fileExists(atPath: dir.url.path + "/" + DiskLayout.sharedImageName))
        var options = testOptions(dir.url, clock: clock, encoding: .verbatim)
        options.sharesFolderWithWriters = false
        let alone = try DiskCache(options: options)
        #expect(!FileManager.default.fileExists(atPath: dir.url.path + "/" + DiskLayout.sharedImageName))
        #expect(try alone.lock(forKeys: ["k4"]) == ["k4"])
        let locked = alone.lockedSize
        alone.close()
        let b = try SharedFolderCacheTests.open(dir, clock: clock)
        defer { b.close() }
        #expect(b.lockedSize == locked)
        #expect(b.count == Self.keyCount - 1)
    }
}
