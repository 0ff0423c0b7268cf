#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// The descriptors this process holds open on files beneath `directory` (from `/proc/self/fd`),
/// so that tests running in parallel, which open their own files, do not disturb the count.
func openDescriptors(beneath directory: URL) -> Int {
    let prefix = directory.resolvingSymlinksInPath().path
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    var count = 0
    for entry in entries {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(entry)", &buffer, buffer.count - 1)
        guard n > 0 else { continue }
        let target = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if target.hasPrefix(prefix + "/") { count += 1 }
    }
    return count
}

@Suite("Kept record descriptors")
struct DescriptorCacheTests {
    /// A payload that names its key and version, so that a read shows which store it came from.
    static func payload(_ key: String, _ version: Int, size: Int = 300) -> Data {
        var bytes = Array("\(key)#\(version)#".utf8)
        while bytes.count < size { bytes.append(UInt8(truncatingIfNeeded: bytes.count &* 31 &+ version)) }
        return Data(bytes)
    }

    static func options(_ dir: TemporaryDirectory, limit: Int, clock: ManualClock = ManualClock(now: 1_700_000_000)) -> DiskCacheOptions {
        var options = testOptions(dir.url, clock: clock)
        options.maximumOpenFiles = limit
        options.flushesOnBackground = false
        return options
    }

    @Test("the default bound is an eighth of the descriptor limit, at most 4,096; negative bounds are refused")
    func defaultBound() throws {
        var limit = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        #expect(DiskCacheOptions.defaultMaximumOpenFilesCap == 4_096)
        let expected = limit.rlim_cur == rlim_t.max ? 256 : min(4_096, Int(limit.rlim_cur) / 8)
        #expect(DiskCacheOptions.defaultMaximumOpenFiles == expected)
        let dir = TemporaryDirectory("larder-fd")
        defer { dir.remove() }
        #expect(DiskCacheOptions(directory: dir.url).maximumOpenFiles == expected)
        var options = Self.options(dir, limit: -1)
        #expect(throws: CacheError.self) { try DiskCache(options: options) }
        options.maximumOpenFiles = 0
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        #expect(cache.records.descriptors == nil)
    }

    @Test("hits keep descriptors up to the bound; close releases every one")
    func boundAndClose() throws {
        let dir = TemporaryDirectory("larder-fd")
        defer { dir.remove() }
        let before = openDescriptors(beneath: dir.url)
        do {
            let cache = try DiskCache(options: Self.options(dir, limit: 4))
            for i in 0 ..< 10 { try cache.store(Self.payload("k\(i)", 0), forKey: "k\(i)") }
            for round in 0 ..< 3 {
                for i in 0 ..< 10 { #expect(try cache.value(forKey: "k\(i)") == Self.payload("k\(i)", 0), "round \(round)") }
            }
            let counts = try #require(cache.records.descriptors).counts
            #expect(counts.kept == 4)
            #expect(counts.draining == 0)
            // The root, plus at most the bound of record files.
            #expect(openDescriptors(beneath: dir.url) <= before + 1 + 4)
            cache.close()
            #expect(try #require(cache.records.descriptors).counts.kept == 0)
            #expect(throws: CacheError.self) { try cache.value(forKey: "k0") }
        }
        #expect(openDescriptors(beneath: dir.url) == before)
    }

    @Test("a read-only cache keeps no descriptor")
    func readOnlyKeepsNone() throws {
        let dir = TemporaryDirectory("larder-fd")
        defer { dir.remove() }
        let writer = try DiskCache(options: Self.options(dir, limit: 8))
        try writer.store(Self.payload("a", 0), forKey: "a")
        var options = Self.options(dir, limit: 8)
        options.isReadOnly = true
        let reader = try DiskCache(options: options)
        #expect(reader.records.descriptors == nil)
        #expect(try reader.value(forKey: "a") == Self.payload("a", 0))
        try writer.store(Self.payload("a", 1), forKey: "a")
        #expect(try reader.value(forKey: "a") == Self.payload("a", 1))
        reader.close()
        writer.close()
    }

    @Test("a record removed, replaced or rewritten behind the cache's back is not read from its kept descriptor")
    func changesBehindTheCachesBack() throws {
        let dir = TemporaryDirectory("larder-fd")
        defer { dir.remove() }
        let other = TemporaryDirectory("larder-fd-other")
        defer { other.remove() }
        // Without kept records: a hit on one checks nothing on disk (see KeptPayloadTests). The
        // link count checked on every read (the default checks once a second: see
        // KeptPayloadTests.recheckInterval).
        var options = Self.options(dir, limit: 8)
        options.maximumPayloadMemory = 0
        options.keptFileRecheckInterval = 0
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        let path = cache.layout.path(for: try cache.options.keyEncoding.fileName(for: "a"))
        try cache.store(Self.payload("a", 0), forKey: "a")
        #expect(try cache.value(forKey: "a") == Self.payload("a", 0))
        #expect(try cache.value(forKey: "a") == Self.payload("a", 0))
        #expect(try #require(cache.records.descriptors).counts.kept == 1)

        // Renamed over by a record of the same length (another cache's file for the same key).
        let writer = try DiskCache(options: Self.options(other, limit: 0))
        try writer.store(Self.payload("a", 1), forKey: "a")
        let otherPath = writer.layout.path(for: try writer.options.keyEncoding.fileName(for: "a"))
        writer.close()
        #expect(rename(otherPath, path) == 0)
        #expect(try cache.value(forKey: "a") == Self.payload("a", 1))

        // Garbage written in place over the kept file: corrupt, removed, descriptor retired.
        #expect(try cache.value(forKey: "a") == Self.payload("a", 1))
        #expect(try #require(cache.records.descriptors).counts.kept == 1)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(RecordHeader.size + 8))
        try handle.write(contentsOf: Data(repeating: 0xEE, count: 16))
        try handle.close()
        #expect(try cache.value(forKey: "a") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try #require(cache.records.descriptors).counts.kept == 0)

        // Removed behind its back: a miss, as without kept descriptors.
        try cache.store(Self.payload("a", 2), forKey: "a")
        #expect(try cache.value(forKey: "a") == Self.payload("a", 2))
        #expect(try cache.value(forKey: "a") == Self.payload("a", 2))
        #expect(try #require(cache.records.descriptors).counts.kept == 1)
        #expect(unlink(path) == 0)
        #expect(try cache.value(forKey: "a") == nil)
        #expect(try #require(cache.records.descriptors).counts == (0, 0, 8))
    }

    /// What the model knows of a record.
    struct ModelEntry {
        var data: Data
        /// The last second it is live in, for records stored with `.seconds(_:)`.
        var expiresAfter: Double?
        var lockCount = 0

        func isExpired(at now: Double) -> Bool {
            guard lockCount == 0, let expiresAfter else { return false }
            return now.rounded(.down) > expiresAfter
        }
    }

    /// One step of the randomized test.
    enum Step: CaseIterable {
        case store, storeShortLived, read, read2, remove, collect, advance, removeAll, reopen, lock, unlock, flush
    }

    @Test(
        "randomized: reads always equal a model while stores, removals, collections and reopens retire descriptors",
        arguments: [1, 2, 3, 4])
    func randomizedAgainstModel(seed: UInt64) throws {
        let dir = TemporaryDirectory("larder-fd-model")
        defer { dir.remove() }
        let before = openDescriptors(beneath: dir.url)
        let clock = ManualClock(now: 1_700_000_000)
        var random = SplitMix64(seed: seed)
        // Key -> (payload, expires after this second when short-lived).
        var model: [String: ModelEntry] = [:]
        let keys = (0 ..< 9).map { "key-\($0)" }
        var version = 0
        var cache = try DiskCache(options: Self.options(dir, limit: 3, clock: clock))
        func isLive(_ key: String) -> Bool { model[key].map { !$0.isExpired(at: clock.now) } ?? false }
        func isKept(_ key: String) throws -> Bool {
            try #require(cache.records.descriptors).isKeeping(cache.options.keyEncoding.fileName(for: key))
        }
        for step in 0 ..< 1_500 {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            let action = Step.allCases[Int(random.next() % UInt64(Step.allCases.count))]
            switch action {
            case .store:
                version += 1
                let data = Self.payload(key, version, size: 100 + version % 7)
                _ = try cache.value(forKey: key)
                try cache.store(data, forKey: key)
                #expect(try !isKept(key), "step \(step): a store retires the descriptor")
                model[key] = ModelEntry(data: data)
            case .storeShortLived:
                version += 1
                try cache.store(Self.payload(key, version), forKey: key, expiry: .seconds(4))
                model[key] = ModelEntry(data: Self.payload(key, version), expiresAfter: clock.now.rounded(.down) + 4)
            case .read, .read2:
                let expected = isLive(key) ? model[key]?.data : nil
                #expect(try cache.value(forKey: key) == expected, "step \(step): read \(key)")
                if expected == nil { model[key] = nil }
            case .remove:
                _ = try cache.value(forKey: key)
                try cache.remove(forKey: key)
                #expect(try !isKept(key), "step \(step): a removal retires the descriptor")
                model[key] = nil
            case .collect:
                _ = try cache.collectGarbage()
                for key in keys where model[key]?.isExpired(at: clock.now) == true {
                    #expect(try !isKept(key), "step \(step): a collection retires the descriptor")
                }
                model = model.filter { !$0.value.isExpired(at: clock.now) }
            case .advance:
                clock.advance(by: 3)
            case .removeAll:
                if random.next() % 4 == 0 {
                    try cache.removeAll()
                    #expect(try #require(cache.records.descriptors).counts.kept == 0)
                    model = [:]
                }
            case .reopen:
                cache.close()
                cache = try DiskCache(options: Self.options(dir, limit: 3, clock: clock))
            case .lock:
                // Locking an expired record fails (SPT).
                #expect(try cache.lock(forKeys: [key]) == (isLive(key) ? [key] : []), "step \(step): lock \(key)")
                if isLive(key) { model[key]!.lockCount += 1 }
            case .unlock:
                let locked = (model[key]?.lockCount ?? 0) > 0
                #expect(try cache.unlock(forKeys: [key]) == (locked ? [key] : []), "step \(step): unlock \(key)")
                if locked { model[key]!.lockCount -= 1 }
            case .flush:
                _ = try cache.flush()
            }
            let counts = try #require(cache.records.descriptors).counts
            #expect(counts.kept <= 3 && counts.draining == 0, "step \(step)")
        }
        for key in keys {
            #expect(try cache.value(forKey: key) == (isLive(key) ? model[key]?.data : nil))
        }
        cache.close()
        #expect(openDescriptors(beneath: dir.url) == before)
    }
}
