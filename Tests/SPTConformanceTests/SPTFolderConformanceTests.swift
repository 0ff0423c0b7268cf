import Foundation
import LarderTestSupport
import Testing

@testable import Larder

/// Folders SPTPersistentCache wrote (flat and sharded, random keys, ttls and locks, planted
/// corruption), written byte by byte in its format without Larder's metadata, opened with
/// `DiskCacheOptions.spt(directory:)` (the layout left to detection), then read, listed and
/// collected, each against SPT's rules step by step.
@Suite("SPT folders") struct SPTFolderConformanceTests {
    static let now: Double = 1_700_000_000
    static let seeds: [UInt64] = [1, 2, 3, 1_417_002_282]

    /// A planted folder, and a cache opened on it.
    struct Planted {
        let directory: TemporaryDirectory
        let folder: SPTFolder
        let records: [SPTFolder.Record]
        let events = EventLog()

        init(layout: FolderLayout, seed: UInt64) throws {
            directory = TemporaryDirectory("spt-folder")
            folder = SPTFolder(root: directory.path, useDirectorySeparation: layout == .sharded)
            var random = SplitMix64(seed: seed)
            records = SPTFolder.randomRecords(count: 120, now: SPTFolderConformanceTests.now, random: &random)
            for record in records { try folder.write(record, random: &random) }
        }

        /// The SPT preset, the layout not set: a flat folder is told by its files.
        func open() throws -> DiskCache {
            var options = DiskCacheOptions.spt(directory: directory.url)
            options.clock = ManualClock(now: SPTFolderConformanceTests.now)
            options.eventHandler = events.handler
            return try DiskCache(options: options)
        }

        func isExpired(_ record: SPTFolder.Record) -> Bool { record.isExpired(now: SPTFolderConformanceTests.now, defaultExpiration: 600) }
        var corrupt: [SPTFolder.Record] { records.filter { $0.corruption != nil && $0.corruption != .badMagic } }
        /// Files without the magic: no records, so foreign, and never removed.
        var foreign: [SPTFolder.Record] { records.filter { $0.corruption == .badMagic } }
        var expired: [SPTFolder.Record] { records.filter { $0.corruption == nil && isExpired($0) } }
        var live: [SPTFolder.Record] { records.filter { $0.corruption == nil && !isExpired($0) } }

        /// The files left beneath the root (Larder's hidden ones aside), by SPT's paths.
        var files: Set<String> { Set(sptFiles(atPath: directory.path).map { directory.path + "/" + $0 }) }
    }

    static var cases: [(FolderLayout, UInt64)] { FolderLayout.allCases.flatMap { layout in seeds.map { (layout, $0) } } }

    @Test(arguments: cases) func readAndList(layout: FolderLayout, seed: UInt64) async throws {
        let planted = try Planted(layout: layout, seed: seed)
        defer { planted.directory.remove() }
        #expect(!planted.corrupt.isEmpty && !planted.expired.isEmpty && !planted.live.isEmpty)
        #expect(planted.live.contains { $0.refCount > 0 && $0.ttl > 0 && Int64(Self.now) - Int64($0.updateTime) > Int64($0.ttl) })
        let cache = try planted.open()
        defer { cache.close() }
        #expect(cache.folderLayout == layout)
        #expect(planted.events.all.contains(.opened(name: "persistent.cache", layout: layout, layoutWasDetected: true)))

        // List: live records, least recently used first (an SPT header's only time is its update
        // time); expired ones too when asked; corrupt ones never.
        let listed = try await cache.keys()
        #expect(Set(listed) == Set(planted.live.map(\.key)))
        let updateTimes = Dictionary(uniqueKeysWithValues: planted.records.map { ($0.key, $0.updateTime) })
        #expect(zip(listed, listed.dropFirst()).allSatisfy { updateTimes[$0]! <= updateTimes[$1]! })
        #expect(Set(try await cache.keys(includingExpired: true)) == Set((planted.live + planted.expired).map(\.key)))
        for record in planted.records.prefix(20) {
            for prefix in [String(record.key.prefix(1)), String(record.key.prefix(3))] {
                let expected = planted.live.filter { $0.key.hasPrefix(prefix) }.map(\.key)
                #expect(Set(try await cache.keys(withPrefix: prefix)) == Set(expected), "prefix \(prefix.debugDescription)")
            }
        }

        // Read: live records as stored; expired and corrupt ones are misses.
        for record in planted.records {
            let read = try await cache.record(forKey: record.key)
            if record.corruption == nil, !planted.isExpired(record) {
                let read = try #require(read, "\(record.key.debugDescription)")
                #expect(read.data == record.payload && read.lockCount == Int(record.refCount))
                #expect(read.expiry == (record.ttl == 0 ? .default : .seconds(Double(record.ttl))))
                if record.ttl > 0 { #expect(read.updateTime == Double(record.updateTime)) }
            } else {
                #expect(read == nil, "\(record.key.debugDescription)")
            }
        }
        let removals = planted.events.corruptRemovals
        for record in planted.corrupt {
            #expect(removals[record.key]?.rawValue == record.corruption?.reasonName)
        }
        #expect(cache.statistics.corruptRecordsRemoved == planted.corrupt.count)
        // A read removes what it found corrupt or expired; the live records stay where SPT put
        // them, and the foreign files where they were.
        let expectedFiles = Set((planted.live + planted.foreign).map { planted.folder.path(for: $0.key) })
        #expect(
            planted.files == expectedFiles,
            "extra \(planted.files.subtracting(expectedFiles)), missing \(expectedFiles.subtracting(planted.files))")
    }

    @Test(arguments: cases) func collect(layout: FolderLayout, seed: UInt64) async throws {
        let planted = try Planted(layout: layout, seed: seed)
        defer { planted.directory.remove() }
        let cache = try planted.open()
        defer { cache.close() }
        let report = try await cache.collectGarbage()
        // SPT's collector removes expired unlocked records and keeps locked ones whatever their age.
        #expect(Set(report.removed.compactMap(\.key)) == Set(planted.expired.map(\.key)))
        #expect(report.removed.allSatisfy { $0.reason == .expired && !$0.wasLocked })
        // Corrupt records are removed and counted. Difference: SPT's collector skips a file
        // whose header it cannot read (SPTPersistentCache.m:867-886), and removes a
        // WrongPayloadSize record only once its header says it has expired.
        #expect(cache.statistics.corruptRecordsRemoved == planted.corrupt.count)
        let removals = planted.events.corruptRemovals
        for record in planted.corrupt {
            #expect(removals[record.key]?.rawValue == record.corruption?.reasonName)
        }
        #expect(planted.files == Set((planted.live + planted.foreign).map { planted.folder.path(for: $0.key) }))
        #expect(cache.count == planted.live.count)
        #expect(try await cache.collectGarbage().removed.isEmpty)
        for record in planted.live { #expect(try await cache.value(forKey: record.key) == record.payload) }
    }

    /// A key starting with `.`: SPT stores it as a hidden file, which its own enumerations skip.
    /// Larder keeps such names for its own files: it refuses the key, and leaves a file SPT wrote
    /// under one alone (not listed, not read, not collected).
    @Test func hiddenNamesAreNotRecords() async throws {
        let directory = TemporaryDirectory("spt-folder")
        defer { directory.remove() }
        let folder = SPTFolder(root: directory.path, useDirectorySeparation: true)
        var random = SplitMix64(seed: 11)
        for key in [".hidden", "visible"] {
            try folder.write(SPTFolder.Record(key: key, payload: Data(key.utf8), ttl: 1, refCount: 0, updateTime: 1), random: &random)
        }
        var options = DiskCacheOptions.spt(directory: directory.url)
        options.clock = ManualClock(now: Self.now)
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        #expect(try await cache.keys(includingExpired: true) == ["visible"])
        await #expect(throws: CacheError.self) { try await cache.value(forKey: ".hidden") }
        await #expect(throws: CacheError.self) { try await cache.store(Data(), forKey: ".other") }
        #expect(try await cache.collectGarbage().removed.map(\.key) == ["visible"])
        #expect(FileManager.default.fileExists(atPath: folder.path(for: ".hidden")))
    }
}
