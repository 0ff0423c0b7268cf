import Foundation
import Synchronization
import Testing
@testable import Larder

/// Attack 6 and the preloaded half of attack 7: FIFOs hung `DiskCache.init`, `count`/`close`
/// and `HybridCache.init` with preloaded files; preloaded `.files` folders followed links out of
/// them. Every open is non-blocking and checked to be a regular file, so these tests return
/// (a hang would stall the suite, and CI's time limit fails it).
@Suite struct FIFOTests {
    enum Place: String, CaseIterable, Sendable {
        case record, shard, metadata, snapshot, journal, lock, temporaryFolder
    }

    @Test(arguments: Place.allCases)
    func fifosNeverBlock(place: Place) throws {
        let fixture = HostileFixture("larder-fifo")
        defer { fixture.remove() }
        let first = try DiskCache(options: fixture.options())
        try first.store(Data("keep".utf8), forKey: "keep")
        try first.store(Data("victim".utf8), forKey: "victim")
        first.close()
        let path: String =
            switch place {
            case .record: fixture.recordPath("victim")
            case .shard: fixture.root + "/vi"
            case .metadata: fixture.root + "/.larder"
            case .snapshot: fixture.root + "/.larder-index"
            case .journal: fixture.root + "/.larder-journal"
            case .lock: fixture.root + "/.larder.lock"
            case .temporaryFolder: fixture.root + "/.larder-tmp"
            }
        // A close leaves no journal (it wrote a new base); the others exist.
        if place != .journal { try FileManager.default.removeItem(atPath: path) }
        #expect(HostileFiles.mkfifo(path))
        for readOnly in [false, true] {
            let cache: DiskCache
            do {
                cache = try DiskCache(options: fixture.options(readOnly: readOnly))
            } catch {
                // Larder's own files: refused with a typed error.
                #expect(error.code == .unsafeDirectory && (place == .metadata || (place == .lock && !readOnly)), "\(place): \(error)")
                continue
            }
            #expect(place != .metadata)
            #expect(cache.count >= 1)
            #expect(try cache.record(forKey: "keep")?.data == Data("keep".utf8))
            #expect(try cache.record(forKey: "victim") == nil || (place != .record && place != .shard))
            if !readOnly, place == .record || place == .shard { #expect(try !cache.keys(withPrefix: "").contains("victim")) }
            _ = cache.contains("victim")
            if !readOnly {
                _ = try? cache.store(Data("new".utf8), forKey: "other")
                _ = try cache.collectGarbage()
            }
            cache.close()
        }
    }

    /// A hit whose length the index knows reads it with one `pread` and no `fstat`: a FIFO or a
    /// folder swapped in behind the cache's back must be a miss, not a hang or a hit; and, being
    /// no record the cache wrote, it is left where it is, not reported as a corrupt record.
    @Test(arguments: ["fifo", "folder"])
    func aRecordSwappedForAFIFOOrAFolderIsAMissOnTheKnownLengthPath(kind: String) throws {
        let fixture = HostileFixture("larder-fifo")
        defer { fixture.remove() }
        let events = Mutex<[CacheEvent]>([])
        var options = fixture.options()
        options.eventHandler = { event in events.withLock { $0.append(event) } }
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        try cache.store(Data("victim".utf8), forKey: "victim")
        #expect(try cache.record(forKey: "victim")?.data == Data("victim".utf8))
        let path = fixture.recordPath("victim")
        try FileManager.default.removeItem(atPath: path)
        if kind == "fifo" {
            #expect(HostileFiles.mkfifo(path))
        } else {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        }
        #expect(try cache.record(forKey: "victim") == nil)
        let reasons = events.withLock { list in
            list.compactMap { event -> CorruptionReason? in
                if case .corruptRecordRemoved(_, _, let reason) = event { reason } else { nil }
            }
        }
        #expect(reasons.isEmpty)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func preloadedFilesFollowNoLinkAndSkipFIFOs() throws {
        let fixture = HostileFixture("larder-fifo")
        defer { fixture.remove() }
        let bundle = fixture.dir.path("bundle")
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: bundle + "/good", contents: Data("good".utf8))
        #expect(HostileFiles.mkfifo(bundle + "/pipe"))
        #expect(HostileFiles.symlink(fixture.sentinel.root + "/important.txt", at: bundle + "/escape"))
        #expect(HostileFiles.symlink(fixture.sentinel.root + "/inner", at: bundle + "/folder"))
        let before = fixture.sentinel.fingerprint()
        for mode in [PreloadedEntries.Mode.copyIfMissing, .readThrough] {
            for format in [PreloadedEntries.Format.files, .records] {
                let root = fixture.dir.path("cache-\(mode)-\(format)")
                var options = HybridCacheOptions(directory: URL(fileURLWithPath: root))
                options.disk.keyEncoding = .verbatim
                options.preloaded = PreloadedEntries(directory: URL(fileURLWithPath: bundle), format: format, mode: mode)
                let cache = try HybridCache(options: options)
                #expect(try cache.value(forKey: "escape") == nil, "\(mode) \(format): followed a link out of the bundle")
                #expect(try cache.value(forKey: "pipe") == nil)
                #expect(try cache.value(forKey: "secret") == nil)
                if format == .files {
                    #expect(try cache.value(forKey: "good") == Data("good".utf8))
                    if mode == .copyIfMissing { #expect(cache.preloadReport?.imported == ["good"]) }
                }
            }
        }
        #expect(fixture.sentinel.fingerprint() == before)
    }
}
