import Foundation
import LarderTestSupport
import Testing

@testable import Larder

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The index snapshot's shard folder stamps: an open lists only the folders whose stamps
/// changed since the snapshot was written, and keeps every guarantee of the listing for them.
@Suite struct FolderStampTests {
    static let keys = (0 ..< 64).map { "key-\($0)" }

    /// Sets a folder's modification time `offset` seconds from now (its change time becomes now).
    static func setModificationTime(_ path: String, offset: Int) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let time = timespec(tv_sec: now.tv_sec + offset, tv_nsec: 0)
        let times = [time, time]
        #expect(utimensat(AT_FDCWD, path, times, 0) == 0)
    }

    /// The shard folders of a cache folder.
    static func shardFolders(_ layout: DiskLayout) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: layout.root).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// A closed cache of ``keys``, its folders' times an hour back (so that no stamp is racy,
    /// whatever the clock's granularity), then closed again so that the snapshot stamps them.
    static func makeClosedCache(_ dir: TemporaryDirectory, backdate: Int = -3600) throws -> (DiskCacheOptions, DiskLayout) {
        let options = DiskCacheOptions(directory: dir.url)
        let cache = try DiskCache(options: options)
        for key in keys { try cache.store(Data(key.utf8), forKey: key) }
        let layout = cache.layout
        cache.close()
        for folder in try shardFolders(layout) { setModificationTime(layout.root + "/" + folder, offset: backdate) }
        // Reopened and closed: its snapshot stamps the folders as they are now.
        let again = try DiskCache(options: options)
        again.waitForIndex()
        again.close()
        return (options, layout)
    }

    /// Keys, count and size of a cache opened on `options`, and how many folders it trusted.
    static func open(_ options: DiskCacheOptions) throws -> (keys: [String], count: Int, size: Int, vouched: Int) {
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        cache.waitForIndex()
        cache.state.withLock { $0.index._checkInvariants() }
        return (
            try cache.keys(withPrefix: "", includingExpired: true).sorted(), cache.count, cache.totalSize,
            cache.state.withLock { $0.foldersVouchedFor }
        )
    }

    /// What an open without the snapshot finds: a scan of every header.
    static func scan(_ options: DiskCacheOptions, _ layout: DiskLayout) throws -> (keys: [String], count: Int, size: Int) {
        _ = unlink(layout.snapshotPath)
        let scanned = try open(options)
        return (scanned.keys, scanned.count, scanned.size)
    }

    @Test func stampsRoundTrip() throws {
        let stamps = FolderStamps(
            reference: FileTime(seconds: 1_700_000_123, nanoseconds: 456_789),
            byFolder: [
                "ab": FolderStamp(
                    modification: FileTime(seconds: -5, nanoseconds: 999_999_999), change: FileTime(seconds: .max, nanoseconds: 1),
                    inode: .max, size: 4096),
                "é✓": FolderStamp(
                    modification: FileTime(seconds: 1, nanoseconds: 2), change: FileTime(seconds: 3, nanoseconds: 4), inode: 5, size: 6),
            ])
        let entries = [
            IndexEntry(name: "abc", key: "abc", diskSize: 4096, updateTime: 7, lastAccessMs: 8, ttl: 9, lockCount: 1)
        ]
        let bytes = IndexSnapshot.encode(entries, stamps: stamps)
        #expect(IndexSnapshot.decodeStamps(bytes) == stamps)
        #expect(IndexSnapshot.decode(bytes)?.map(\.name) == ["abc"])
        #expect(IndexSnapshot.decodeStamps(IndexSnapshot.encode(entries)) == FolderStamps.none)
        // The version is 4; a version-3 snapshot (the same bytes, relabelled) is ignored.
        #expect(bytes[4] == 4)
        var relabelled = bytes
        relabelled[4] = 3
        relabelled.replaceSubrange((relabelled.count - 4)..., with: Self.crc(relabelled.dropLast(4)))
        #expect(IndexSnapshot.decode(relabelled) == nil)
    }

    static func crc(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        let crc = Array(bytes).withUnsafeBytes { CRC32.checksum($0) }
        return withUnsafeBytes(of: crc.littleEndian) { Array($0) }
    }

    @Test func racyStamps() {
        let stamp = FolderStamp(
            modification: FileTime(seconds: 100, nanoseconds: 5), change: FileTime(seconds: 100, nanoseconds: 5), inode: 1, size: 1)
        var stamps = FolderStamps(reference: FileTime(seconds: 100, nanoseconds: 6), byFolder: ["ab": stamp])
        #expect(stamps.vouches(for: "ab", current: stamp))
        #expect(!stamps.vouches(for: "cd", current: stamp))
        var moved = stamp
        moved.inode = 2
        #expect(!stamps.vouches(for: "ab", current: moved))
        // Not strictly older than the reference: the same tick, racy.
        stamps.reference = FileTime(seconds: 100, nanoseconds: 5)
        #expect(!stamps.vouches(for: "ab", current: stamp))
    }

    @Test func anUnchangedFolderIsNotListed() throws {
        let dir = TemporaryDirectory("larder-stamps")
        defer { dir.remove() }
        let (options, layout) = try Self.makeClosedCache(dir)
        let folders = try Self.shardFolders(layout)
        #expect(folders.count > 8)
        let opened = try Self.open(options)
        #expect(opened.vouched == folders.count)
        #expect(opened.keys == Self.keys.sorted())
        // A clean close stamps them again.
        #expect(try Self.open(options).vouched == folders.count)
        let scanned = try Self.scan(options, layout)
        #expect(opened.keys == scanned.keys && opened.count == scanned.count && opened.size == scanned.size)
    }

    enum Change: CaseIterable {
        case added, removed, renamed, replacedFolder
    }

    /// A folder changed behind a closed cache's back is listed and reconciled; the others are not.
    @Test(arguments: Change.allCases)
    func aFolderChangedBehindTheCachesBackIsListed(change: Change) throws {
        let dir = TemporaryDirectory("larder-stamps")
        defer { dir.remove() }
        let (options, layout) = try Self.makeClosedCache(dir)
        let folders = try Self.shardFolders(layout)
        let victim = try options.keyEncoding.fileName(for: "key-7")
        let folder = try #require(layout.folder(for: victim).split(separator: "/").last.map(String.init))
        let fm = FileManager.default
        var expected = Set(Self.keys)
        switch change {
        case .added:
            // A record copied in from another cache folder: its key appears.
            let other = TemporaryDirectory("larder-stamps-other")
            defer { other.remove() }
            let donor = try DiskCache(options: DiskCacheOptions(directory: other.url))
            var extra = "extra-0"
            for i in 0 ..< 10_000 {
                extra = "extra-\(i)"
                if layout.folder(for: try options.keyEncoding.fileName(for: extra)).hasSuffix("/" + folder) { break }
            }
            try donor.store(Data(extra.utf8), forKey: extra)
            let name = try options.keyEncoding.fileName(for: extra)
            try fm.copyItem(atPath: donor.layout.path(for: name), toPath: layout.path(for: name))
            donor.close()
            expected.insert(extra)
        case .removed:
            try fm.removeItem(atPath: layout.path(for: victim))
            expected.remove("key-7")
        case .renamed:
            // Under a name no key maps to: indexed from its header, as any file the listing finds.
            try fm.moveItem(atPath: layout.path(for: victim), toPath: layout.root + "/" + folder + "/" + folder + "-renamed")
        case .replacedFolder:
            // The folder swapped for a copy without the record, its times set back as they were.
            let copy = layout.root + "/" + folder + "-copy"
            try fm.copyItem(atPath: layout.root + "/" + folder, toPath: copy)
            try fm.removeItem(atPath: copy + "/" + victim)
            try fm.removeItem(atPath: layout.root + "/" + folder)
            try fm.moveItem(atPath: copy, toPath: layout.root + "/" + folder)
            Self.setModificationTime(layout.root + "/" + folder, offset: -3600)
            expected.remove("key-7")
        }
        let opened = try Self.open(options)
        #expect(opened.keys == expected.sorted())
        #expect(opened.vouched == folders.count - 1, "only \(folder) is listed")
        let scanned = try Self.scan(options, layout)
        #expect(opened.keys == scanned.keys && opened.count == scanned.count && opened.size == scanned.size)
    }

    /// A record copied in while a cache is open, into a folder the cache does not change, shows
    /// at the next open: the close stamps that folder as the open found it, not as it is then.
    /// A folder the cache changed meanwhile is stamped afresh (the documented limit).
    @Test func aFileAddedWhileTheCacheIsOpenShowsAtTheNextOpen() throws {
        let dir = TemporaryDirectory("larder-stamps")
        defer { dir.remove() }
        let (options, layout) = try Self.makeClosedCache(dir)
        let folders = try Self.shardFolders(layout)
        let cache = try DiskCache(options: options)
        cache.waitForIndex()
        #expect(cache.state.withLock { $0.foldersVouchedFor } == folders.count)
        // The cache changes one folder: it stores a new version of key-7.
        try cache.store(Data("changed".utf8), forKey: "key-7")
        let changed = try #require(layout.shard(for: try options.keyEncoding.fileName(for: "key-7")))
        // Another cache folder makes a record for a key in another folder, which is copied in.
        let other = TemporaryDirectory("larder-stamps-other")
        defer { other.remove() }
        let donor = try DiskCache(options: DiskCacheOptions(directory: other.url))
        var extra = "extra-0"
        for i in 0 ..< 10_000 {
            extra = "extra-\(i)"
            let shard = layout.shard(for: try options.keyEncoding.fileName(for: extra))
            if let shard, shard != changed, folders.contains(shard) { break }
        }
        try donor.store(Data(extra.utf8), forKey: extra)
        let name = try options.keyEncoding.fileName(for: extra)
        try FileManager.default.copyItem(atPath: donor.layout.path(for: name), toPath: layout.path(for: name))
        donor.close()
        cache.close()
        let opened = try Self.open(options)
        #expect(opened.keys == (Self.keys + [extra]).sorted())
        // Listed: the folder the copy went into, and the one the cache changed (its stamp was
        // taken afresh at close, but racy or not, it is not the one the open found).
        #expect(opened.vouched <= folders.count - 1)
        let scanned = try Self.scan(options, layout)
        #expect(opened.keys == scanned.keys && opened.count == scanned.count && opened.size == scanned.size)
    }

    /// A folder whose time is not strictly older than the snapshot's reference is listed,
    /// whatever its stamp says: a change within the same clock tick would not show.
    @Test func racyFoldersAreListed() throws {
        let dir = TemporaryDirectory("larder-stamps")
        defer { dir.remove() }
        // Their times an hour ahead: every stamp is as new as the snapshot, or newer.
        let (options, layout) = try Self.makeClosedCache(dir, backdate: 3600)
        let stamps = try #require(IndexSnapshot.decodeStamps(Array(try Data(contentsOf: URL(fileURLWithPath: layout.snapshotPath)))))
        #expect(stamps.byFolder.count == (try Self.shardFolders(layout)).count)
        let opened = try Self.open(options)
        #expect(opened.vouched == 0)
        #expect(opened.keys == Self.keys.sorted())
    }

    /// A stamps section that does not add up damages the snapshot (it is ignored, the index
    /// rebuilt from the headers); stamps that lie about a folder cost at most a miss and an
    /// unlisted file, never another key's payload.
    @Test func craftedStamps() throws {
        let dir = TemporaryDirectory("larder-stamps")
        defer { dir.remove() }
        let (options, layout) = try Self.makeClosedCache(dir)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: layout.snapshotPath)))
        // The stamps section's length one byte off, the checksum made good.
        var damaged = bytes
        let lengthAt = damaged.count - 8
        damaged[lengthAt] &+= 1
        damaged.replaceSubrange((damaged.count - 4)..., with: Self.crc(damaged.dropLast(4)))
        #expect(IndexSnapshot.decodeIndex(damaged, keyEncoding: .sha256) == nil)
        #expect(IndexSnapshot.decodeIndex(bytes, keyEncoding: .sha256) != nil)
        try Data(damaged).write(to: URL(fileURLWithPath: layout.snapshotPath))
        let rebuilt = try Self.open(options)
        #expect(rebuilt.vouched == 0)
        #expect(rebuilt.keys == Self.keys.sorted())

        // Stamps copied from the folders as they are, with a reference far ahead, and entries
        // that lie: one for a file that is not there, one naming another key's file.
        let stamps = FolderStamps(reference: FileTime(seconds: .max, nanoseconds: 0), byFolder: try layout.shardStamps(io: FileIO()))
        // A ghost in a folder that is there (and vouched for).
        var ghostKey = "ghost"
        for i in 0 ..< 10_000 {
            ghostKey = "ghost-\(i)"
            if stamps.byFolder[layout.shard(for: try options.keyEncoding.fileName(for: ghostKey)) ?? ""] != nil { break }
        }
        let ghost = try options.keyEncoding.fileName(for: ghostKey)
        let other = try options.keyEncoding.fileName(for: "key-3")
        let now = UInt64(Date().timeIntervalSince1970)
        let entries = [
            IndexEntry(name: ghost, key: ghostKey, diskSize: 4096, updateTime: now, lastAccessMs: now * 1000, ttl: 0, lockCount: 0),
            IndexEntry(name: other, key: "spoof", diskSize: 4096, updateTime: now, lastAccessMs: now * 1000, ttl: 0, lockCount: 0),
        ]
        try Data(IndexSnapshot.encode(entries, stamps: stamps)).write(to: URL(fileURLWithPath: layout.snapshotPath))
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        cache.waitForIndex()
        #expect(cache.state.withLock { $0.foldersVouchedFor } > 0)
        #expect(try cache.value(forKey: "spoof") == nil, "a key answered with another key's file")
        #expect(cache.contains(ghostKey), "the snapshot is trusted for a folder its stamp vouches for")
        #expect(try cache.value(forKey: ghostKey) == nil)
        #expect(!cache.contains(ghostKey), "a load that finds no file drops the entry")
    }

    /// `mustList`: folders an index journal changed are listed whatever their stamps say.
    @Test func mustListFoldersAreListed() throws {
        let dir = TemporaryDirectory("larder-stamps")
        defer { dir.remove() }
        let (options, layout) = try Self.makeClosedCache(dir)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: layout.snapshotPath)))
        let folders = try Self.shardFolders(layout)
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        cache.waitForIndex()
        let names = try ["key-1", "key-2"].map { try options.keyEncoding.fileName(for: $0) }
        let mustList = cache.shardFolders(of: names)
        #expect(mustList == Set(names.map { String($0.prefix(2)) }))
        var events: [CacheEvent] = []
        let stamps = try #require(IndexSnapshot.decodeStamps(bytes))
        let reconciled = cache.reconcile(
            IndexSnapshot.decodeIndex(bytes, keyEncoding: options.keyEncoding), stamps: stamps, mustList: mustList, events: &events)
        #expect(reconciled.vouchedFolders.count == folders.count - mustList.count)
        #expect(reconciled.vouchedFolders.isDisjoint(with: mustList))
        #expect(reconciled.index.count == Self.keys.count)
        #expect(reconciled.listedEverything)
    }
}
