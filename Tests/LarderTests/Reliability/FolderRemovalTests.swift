#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import Testing
@testable import Larder

/// The cache's folder deleted behind its back, as iOS empties an app's `Caches` folder when the
/// device runs short of space: loads miss, stores succeed (the folder, its metadata, temporary
/// folder and lock file are made again), totals and the index converge at the next store or
/// collection, nothing throws, and `CacheEvent.folderRecreated` reports it; on every tier, and
/// mid-collection.
@Suite struct FolderRemovalTests {
    static let keys = (0 ..< 12).map { "key-\($0)" }

    static func payload(_ key: String, version: UInt64 = 1) -> Data {
        Data(StampedPayload.make(key: key, version: version, length: 700))
    }

    /// A cache in `<dir>/caches/images` holding every key of ``keys``, with an event log.
    static func filledCache(_ dir: TemporaryDirectory, configure: (inout DiskCacheOptions) -> Void = { _ in }) throws -> (
        DiskCache, EventLog, URL
    ) {
        let root = dir.appending("caches/images")
        let events = EventLog()
        var options = testOptions(root)
        options.eventHandler = events.handler
        configure(&options)
        let cache = try DiskCache(options: options)
        for key in keys { try cache.store(payload(key), forKey: key) }
        #expect(cache.count == keys.count)
        return (cache, events, root)
    }

    static func recreations(_ events: EventLog) -> [String] {
        events.all.compactMap { event in
            if case .folderRecreated(let path) = event { return path }
            return nil
        }
    }

    /// Larder's own files are back, and the lock is held again.
    static func expectFolderRemade(_ cache: DiskCache, root: URL) {
        let layout = cache.layout
        for path in [layout.metadataPath, layout.lockPath] {
            #expect(FileManager.default.fileExists(atPath: path), "\(path) was not made again")
        }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: layout.temporaryFolder, isDirectory: &isDirectory) && isDirectory.boolValue)
        // A second writer is still refused: the new lock file is locked.
        expectCacheError(.directoryInUse) { () throws(CacheError) in _ = try DiskCache(options: testOptions(root)) }
        #expect(DiskAudit.indexMismatches(cache).isEmpty, "\(DiskAudit.indexMismatches(cache))")
        #expect(DiskAudit.strayFiles(in: root.path).isEmpty)
    }

    @Test func diskLoadsMissThenAStoreMakesTheFolderAgain() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, events, root) = try Self.filledCache(dir)
        // iOS removes the whole Caches folder, parents of the cache's folder included.
        try FileManager.default.removeItem(at: dir.appending("caches"))
        for key in Self.keys { #expect(try cache.value(forKey: key) == nil, "\(key) was served from a deleted folder") }
        #expect(try !cache.remove(forKey: "key-0"))
        #expect(try !cache.touch(forKey: "key-1"))
        #expect(try cache.lock(forKeys: ["key-2"]).isEmpty)
        #expect(Self.recreations(events).isEmpty, "loads alone do not make the folder")
        #expect(!FileManager.default.fileExists(atPath: root.path))

        try cache.store(Self.payload("new"), forKey: "new")
        #expect(Self.recreations(events) == [root.path])
        #expect(try cache.value(forKey: "new") == Self.payload("new"))
        #expect(cache.count == 1 && cache.totalSize == cache.diskSize(DiskAudit.recordFiles(in: root.path).values.reduce(0, +)))
        #expect(try cache.keys() == ["new"])
        #expect(try cache.value(forKey: "key-3") == nil)
        Self.expectFolderRemade(cache, root: root)

        // The folder holds a whole cache again: it reopens with what was stored since.
        cache.close()
        let reopened = try DiskCache(options: testOptions(root))
        #expect(try reopened.keys() == ["new"])
        #expect(try reopened.value(forKey: "new") == Self.payload("new"))
    }

    @Test func nothingThrowsAfterTheFolderIsDeleted() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, events, root) = try Self.filledCache(dir)
        try FileManager.default.removeItem(at: root)
        #expect(DirectoryFaultTests.exerciseEverything(cache, label: "purged") == 0)
        #expect(Self.recreations(events) == [root.path], "one recreation, by the first store")
        #expect(try cache.value(forKey: "key-4") == nil)
        Self.expectFolderRemade(cache, root: root)
    }

    @Test func aCollectionMakesTheFolderAgainAndConverges() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, events, root) = try Self.filledCache(dir)
        try FileManager.default.removeItem(at: root)
        #expect(cache.count == Self.keys.count, "the index only learns at the next store or collection")
        let report = try cache.collectGarbage()
        #expect(report.remainingCount == 0 && report.remainingSize == 0)
        #expect(Self.recreations(events) == [root.path])
        #expect(cache.count == 0 && cache.totalSize == 0)
        // The collection's snapshot went into the new folder.
        #expect(FileManager.default.fileExists(atPath: cache.layout.snapshotPath))
        Self.expectFolderRemade(cache, root: root)
        try cache.store(Self.payload("after"), forKey: "after")
        #expect(try cache.keys() == ["after"])
    }

    @Test func aFlushMakesTheFolderAgain() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, events, root) = try Self.filledCache(dir)
        try FileManager.default.removeItem(at: root)
        #expect(try cache.flush())
        #expect(Self.recreations(events) == [root.path])
        #expect(cache.count == 0)
        #expect(FileManager.default.fileExists(atPath: cache.layout.snapshotPath))
        Self.expectFolderRemade(cache, root: root)
    }

    /// The folder goes while a collection is removing expired records: the pass carries on over
    /// missing files, throws nothing, and leaves a new folder with an index that agrees with it.
    @Test func folderDeletedDuringACollection() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let root = dir.appending("cache")
        let events = EventLog()
        let clock = ManualClock(now: 1_700_000_000)
        var options = testOptions(root, clock: clock)
        options.eventHandler = events.handler
        // The first removal of a record deletes the whole folder first.
        let deletions = Atomic<Int>(0)
        let rootPath = root.path
        var calls = SystemCalls.live
        let live = SystemCalls.live
        calls.unlinkat = { directory, path, flags in
            // Record files only, not the snapshot the first change withdraws.
            if !String(cString: path).hasPrefix("."), deletions.add(1, ordering: .relaxed).newValue == 1 {
                try? FileManager.default.removeItem(atPath: rootPath)
            }
            return live.unlinkat(directory, path, flags)
        }
        let cache = try DiskCache(options: options, systemCalls: calls)
        for key in Self.keys { try cache.store(Self.payload(key), forKey: key, expiry: .seconds(10)) }
        _ = cache.count
        deletions.store(0, ordering: .relaxed)
        clock.advance(by: 60)
        let report = try cache.collectGarbage()
        #expect(deletions.load(ordering: .relaxed) >= 1, "the collection removed nothing")
        #expect(!report.removed.isEmpty, "the pass stopped at the deleted folder")
        #expect(Self.recreations(events) == [rootPath])
        #expect(cache.count == 0 && report.remainingCount == 0)
        Self.expectFolderRemade(cache, root: root)
        try cache.store(Self.payload("after"), forKey: "after")
        #expect(try cache.keys() == ["after"] && cache.count == 1)
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
    }

    /// Stores from several threads find the folder gone at once: one makes it again, the others
    /// wait and retry, every store succeeds, and one event is reported.
    @Test func concurrentStoresMakeTheFolderOnce() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, events, root) = try Self.filledCache(dir)
        try FileManager.default.removeItem(at: root)
        let failures = LarderMutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for round in 0 ..< 10 {
                let key = "w\(worker)-\(round)"
                do {
                    try cache.store(Self.payload(key), forKey: key)
                    if try cache.value(forKey: key) != Self.payload(key) { failures.withLock { $0.append("\(key): wrong bytes") } }
                } catch {
                    failures.withLock { $0.append("\(key): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(Self.recreations(events) == [root.path])
        #expect(cache.count == 80)
        Self.expectFolderRemade(cache, root: root)
    }

    /// Deleted twice: each time the folder comes back.
    @Test func deletedAgainAfterBeingMadeAgain() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, events, root) = try Self.filledCache(dir)
        for round in 1 ... 3 {
            try FileManager.default.removeItem(at: root)
            try cache.store(Self.payload("r\(round)"), forKey: "r\(round)")
            #expect(Self.recreations(events).count == round)
            #expect(try cache.keys() == ["r\(round)"])
        }
        Self.expectFolderRemade(cache, root: root)
    }

    /// Someone made the folder again with records in it (copied from another cache): the cache
    /// moves to it and indexes what it holds, rather than answering misses for it.
    @Test func aFolderMadeAgainWithRecordsIsIndexed() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let backup = dir.appending("backup")
        do {
            let other = try DiskCache(options: testOptions(backup))
            for key in ["b1", "b2"] { try other.store(Self.payload(key), forKey: key) }
            other.close()
        }
        let (cache, events, root) = try Self.filledCache(dir)
        try FileManager.default.removeItem(at: root)
        try FileManager.default.copyItem(at: backup, to: root)
        try FileManager.default.removeItem(at: root.appendingPathComponent(DiskLayout.lockName))
        try cache.store(Self.payload("new"), forKey: "new")
        #expect(Self.recreations(events) == [root.path])
        #expect(Set(try cache.keys()) == ["b1", "b2", "new"])
        #expect(try cache.value(forKey: "b1") == Self.payload("b1"))
        Self.expectFolderRemade(cache, root: root)
    }

    /// A folder made again by someone else, writable by others, is refused as at open: the store
    /// throws, and nothing is written into it.
    @Test func anUnsafeFolderMadeAgainIsRefused() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, events, root) = try Self.filledCache(dir)
        try FileManager.default.removeItem(at: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: false)
        HostileFiles.chmod(root.path, 0o777)
        expectCacheError(.unsafeDirectory) { () throws(CacheError) in try cache.store(Self.payload("x"), forKey: "x") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).isEmpty, "the cache wrote into an unsafe folder")
        #expect(Self.recreations(events).isEmpty)
        // Loads still just miss; a collection reports the failure as an event instead of throwing.
        #expect(try cache.value(forKey: "key-0") == nil)
        _ = try cache.collectGarbage()
        #expect(events.all.contains { if case .ioError("recreate", _, _) = $0 { true } else { false } })
        // Made safe, the folder is used.
        HostileFiles.chmod(root.path, 0o700)
        try cache.store(Self.payload("x"), forKey: "x")
        #expect(Self.recreations(events) == [root.path])
        Self.expectFolderRemade(cache, root: root)
    }

    /// Another writer opened the folder made again first: this cache does not write beside it.
    @Test func aFolderMadeAgainAndLockedByAnotherWriterIsRefused() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let (cache, _, root) = try Self.filledCache(dir)
        try FileManager.default.removeItem(at: root)
        let other = try DiskCache(options: testOptions(root))
        expectCacheError(.directoryInUse) { () throws(CacheError) in try cache.store(Self.payload("x"), forKey: "x") }
        #expect(try other.keys().isEmpty)
        other.close()
        try cache.store(Self.payload("x"), forKey: "x")
        #expect(try cache.keys() == ["x"])
    }

    @Test func readOnlyCacheLoadsJustMiss() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let root = dir.appending("cache")
        do {
            let writer = try DiskCache(options: testOptions(root))
            for key in Self.keys { try writer.store(Self.payload(key), forKey: key) }
            writer.close()
        }
        var options = testOptions(root)
        options.isReadOnly = true
        let reader = try DiskCache(options: options)
        #expect(try reader.value(forKey: "key-0") == Self.payload("key-0"))
        try FileManager.default.removeItem(at: root)
        for key in Self.keys { #expect(try reader.value(forKey: key) == nil) }
        #expect(try reader.flush())
        expectCacheError(.readOnly) { () throws(CacheError) in try reader.store(Self.payload("x"), forKey: "x") }
        #expect(!FileManager.default.fileExists(atPath: root.path), "a read-only cache made its folder again")
    }

    /// The hybrid: memory keeps serving what it holds (the last value stored or read for each
    /// key), the disk misses the rest, and a store makes the disk's folder again.
    @Test func hybridKeepsMemoryAndMakesTheDiskFolderAgain() throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let root = dir.appending("cache")
        let events = EventLog()
        var options = HybridCacheOptions(disk: testOptions(root))
        options.disk.eventHandler = events.handler
        let cache = try HybridCache(options: options)
        try cache.store(Self.payload("memory"), forKey: "memory")
        try cache.store(Self.payload("disk-only"), forKey: "disk-only", in: .disk)
        try FileManager.default.removeItem(at: root)

        #expect(try cache.value(forKey: "memory") == Self.payload("memory"))
        #expect(try cache.value(forKey: "disk-only") == nil)
        #expect(try cache.value(forKey: "memory", from: .disk) == nil)
        try cache.store(Self.payload("new"), forKey: "new")
        #expect(Self.recreations(events) == [root.path])
        #expect(try cache.value(forKey: "new", from: .disk) == Self.payload("new"))
        #expect(try cache.value(forKey: "memory") == Self.payload("memory"), "memory dropped what it held")
        #expect(try cache.keys() == ["new", "memory"])
        #expect(cache.disk.count == 1)
        Self.expectFolderRemade(cache.disk, root: root)
    }

    @Test func hybridAsyncAndCallbackFormsThrowNothing() async throws {
        let dir = TemporaryDirectory("larder-purge")
        defer { dir.remove() }
        let root = dir.appending("cache")
        let events = EventLog()
        var options = HybridCacheOptions(disk: testOptions(root))
        options.disk.eventHandler = events.handler
        let cache = try HybridCache(options: options)
        try await cache.store(Self.payload("a"), forKey: "a", in: .disk)
        try FileManager.default.removeItem(at: root)
        #expect(try await cache.value(forKey: "a") == nil)
        try await cache.store(Self.payload("b"), forKey: "b")
        #expect(try await cache.value(forKey: "b", from: .disk) == Self.payload("b"))
        let response = await withCheckedContinuation { continuation in
            cache.flush(queue: .global()) { continuation.resume(returning: $0) }
        }
        #expect(response.error == nil && response.value == true)
        #expect(Self.recreations(events) == [root.path])
    }
}
