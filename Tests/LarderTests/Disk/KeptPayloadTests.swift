#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// Records kept in memory beside their kept descriptors (``DiskCacheOptions/maximumPayloadMemory``):
/// the byte bound, retirement with the descriptor, and what a change behind the cache's back does.
@Suite("Kept record payloads")
struct KeptPayloadTests {
    static func options(_ dir: TemporaryDirectory, payloadMemory: Int, clock: ManualClock = ManualClock(now: 1_700_000_000))
        -> DiskCacheOptions
    {
        var options = DescriptorCacheTests.options(dir, limit: 6, clock: clock)
        options.maximumPayloadMemory = payloadMemory
        return options
    }

    /// A made-up kept record of `size` bytes (a file of `size` bytes: header, then payload).
    static func record(_ size: Int, tag: UInt8) -> KeptRecord {
        let payload = Data(repeating: tag, count: size - RecordHeader.size)
        let contents = RecordContents(
            header: RecordHeader(updateTimeSec: 1_700_000_000, payloadSizeBytes: UInt64(payload.count)), storedKey: nil,
            payload: payload, fileSize: size)
        return KeptRecord(contents: contents, isVerified: true)
    }

    @Test("the default is 4 MiB; 0 keeps none; a negative bound is refused; the hybrid's disk tier keeps none")
    func defaults() throws {
        #expect(DiskCacheOptions.defaultMaximumPayloadMemory == 4_194_304)
        let dir = TemporaryDirectory("larder-payload")
        defer { dir.remove() }
        #expect(DiskCacheOptions(directory: dir.url).maximumPayloadMemory == 4_194_304)
        var options = Self.options(dir, payloadMemory: -1)
        #expect(throws: CacheError.self) { try DiskCache(options: options) }
        options.maximumPayloadMemory = 0
        do {
            let cache = try DiskCache(options: options)
            defer { cache.close() }
            #expect(try #require(cache.records.descriptors).payloadCapacity == 0)
            try cache.store(DescriptorCacheTests.payload("a", 0), forKey: "a")
            for _ in 0 ..< 5 { _ = try cache.value(forKey: "a") }
            #expect(try #require(cache.records.descriptors).recordCounts.records == 0)
        }
        let hybrid = try HybridCache(options: HybridCacheOptions(disk: Self.options(dir, payloadMemory: 1 << 20)))
        defer { hybrid.close() }
        #expect(try #require(hybrid.disk.records.descriptors).payloadCapacity == 0)
    }

    @Test("a hit on a kept record returns the kept Data itself, not a copy, and makes no read")
    func hitsShareTheKeptData() throws {
        let dir = TemporaryDirectory("larder-payload")
        defer { dir.remove() }
        let cache = try DiskCache(options: Self.options(dir, payloadMemory: 64 * 1024))
        defer { cache.close() }
        let data = DescriptorCacheTests.payload("a", 1, size: 2_000)
        try cache.store(data, forKey: "a")
        let name = try cache.options.keyEncoding.fileName(for: "a")
        let descriptors = try #require(cache.records.descriptors)
        // First read: opened; second: descriptor kept; third: read through it, record kept.
        for _ in 0 ..< 3 { #expect(try cache.value(forKey: "a") == data) }
        #expect(descriptors.isKeepingRecord(name))
        let first = try #require(try cache.value(forKey: "a"))
        let second = try #require(try cache.value(forKey: "a"))
        #expect(first == data)
        let firstBase = first.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let secondBase = second.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        #expect(firstBase == secondBase)
        // Reads still count as uses.
        #expect(cache.statistics.hits >= 5)
    }

    /// The bytes of another cache's record file for "a" holding `data`, under `name`.
    static func otherFile(_ data: Data, in other: TemporaryDirectory, name: String) throws -> (path: String, bytes: Data) {
        let writer = try DiskCache(options: DescriptorCacheTests.options(other, limit: 0))
        defer { writer.close() }
        try writer.store(data, forKey: "a")
        let otherPath = writer.layout.path(for: name)
        return (otherPath, try Data(contentsOf: URL(fileURLWithPath: otherPath)))
    }

    /// Writes `bytes` over the start of the file at `path`, in place.
    static func writeInPlace(_ bytes: Data, at path: String, offset: UInt64 = 0) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: bytes)
        try handle.close()
    }

    /// The documented contract: a hit on a kept record makes no system call, so a record
    /// changed, replaced or removed behind a writable cache's back (which breaks the folder
    /// contract) is served as it was read until the cache itself changes or drops it.
    @Test("a kept record is served as read, whatever happens to its file behind the cache's back, until the cache changes it")
    func changesBehindTheCachesBack() throws {
        let dir = TemporaryDirectory("larder-payload")
        defer { dir.remove() }
        let other = TemporaryDirectory("larder-payload-other")
        defer { other.remove() }
        let cache = try DiskCache(options: Self.options(dir, payloadMemory: 64 * 1024))
        defer { cache.close() }
        let descriptors = try #require(cache.records.descriptors)
        let name = try cache.options.keyEncoding.fileName(for: "a")
        let path = cache.layout.path(for: name)
        func keep(_ expected: Data) throws {
            for _ in 0 ..< 4 { #expect(try cache.value(forKey: "a") == expected) }
            #expect(descriptors.isKeepingRecord(name))
        }
        let v0 = DescriptorCacheTests.payload("a", 0)
        try cache.store(v0, forKey: "a")
        try keep(v0)

        // Renamed over, written in place, resized, removed: still the record as read.
        let renamed = try Self.otherFile(DescriptorCacheTests.payload("a", 1), in: other, name: name)
        #expect(rename(renamed.path, path) == 0)
        #expect(try cache.value(forKey: "a") == v0)
        let inPlace = try Self.otherFile(DescriptorCacheTests.payload("a", 2), in: other, name: name)
        try Self.writeInPlace(inPlace.bytes, at: path)
        #expect(try cache.value(forKey: "a") == v0)
        try Self.writeInPlace(Data(repeating: 0xEE, count: 16), at: path, offset: UInt64(RecordHeader.size + 8))
        #expect(try cache.value(forKey: "a") == v0)
        #expect(truncate(path, off_t(RecordHeader.size + 10)) == 0)
        #expect(try cache.value(forKey: "a") == v0)
        #expect(unlink(path) == 0)
        #expect(try cache.value(forKey: "a") == v0, "a purge only costs memory until the cache drops the record")
        #expect(descriptors.isKeepingRecord(name))

        // The cache's own store retires the record before it returns.
        let v3 = DescriptorCacheTests.payload("a", 3)
        try cache.store(v3, forKey: "a")
        #expect(!descriptors.isKeepingRecord(name))
        #expect(try cache.value(forKey: "a") == v3)
        try keep(v3)
        // And its own removal.
        try cache.remove(forKey: "a")
        #expect(!descriptors.isKeeping(name) && !descriptors.isKeepingRecord(name))
        #expect(try cache.value(forKey: "a") == nil)
    }

    /// Without kept records, a hit through a kept descriptor whose check is due `fstat`s it
    /// first (here every hit: `keptFileRecheckInterval` 0): a file renamed over, resized or
    /// removed behind the cache's back is not read through the old descriptor, and one written
    /// in place is read as it is now.
    @Test("without kept records, a kept descriptor's file replaced, resized, removed or written in place is read as it is now")
    func keptDescriptorsCheckTheFile() throws {
        let dir = TemporaryDirectory("larder-payload")
        defer { dir.remove() }
        let other = TemporaryDirectory("larder-payload-other")
        defer { other.remove() }
        var options = Self.options(dir, payloadMemory: 0)
        options.keptFileRecheckInterval = 0
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        let descriptors = try #require(cache.records.descriptors)
        let name = try cache.options.keyEncoding.fileName(for: "a")
        let path = cache.layout.path(for: name)
        func keep(_ expected: Data) throws {
            for _ in 0 ..< 4 { #expect(try cache.value(forKey: "a") == expected) }
            #expect(descriptors.isKeeping(name) && !descriptors.isKeepingRecord(name))
        }

        try cache.store(DescriptorCacheTests.payload("a", 0), forKey: "a")
        try keep(DescriptorCacheTests.payload("a", 0))

        // Renamed over by a record of the same length.
        let renamed = try Self.otherFile(DescriptorCacheTests.payload("a", 1), in: other, name: name)
        #expect(rename(renamed.path, path) == 0)
        #expect(try cache.value(forKey: "a") == DescriptorCacheTests.payload("a", 1))
        try keep(DescriptorCacheTests.payload("a", 1))

        // Another record of the same length written in place over the kept file.
        let inPlace = try Self.otherFile(DescriptorCacheTests.payload("a", 2), in: other, name: name)
        #expect(inPlace.bytes.count == (try Data(contentsOf: URL(fileURLWithPath: path))).count)
        try Self.writeInPlace(inPlace.bytes, at: path)
        #expect(try cache.value(forKey: "a") == DescriptorCacheTests.payload("a", 2))
        try keep(DescriptorCacheTests.payload("a", 2))

        // Garbage in place: corrupt, removed, descriptor dropped.
        try Self.writeInPlace(Data(repeating: 0xEE, count: 16), at: path, offset: UInt64(RecordHeader.size + 8))
        #expect(try cache.value(forKey: "a") == nil)
        #expect(!descriptors.isKeeping(name))

        // Resized, then removed.
        try cache.store(DescriptorCacheTests.payload("a", 3), forKey: "a")
        try keep(DescriptorCacheTests.payload("a", 3))
        #expect(truncate(path, off_t(RecordHeader.size + 10)) == 0)
        #expect(try cache.value(forKey: "a") == nil)
        try cache.store(DescriptorCacheTests.payload("a", 4), forKey: "a")
        try keep(DescriptorCacheTests.payload("a", 4))
        #expect(unlink(path) == 0)
        #expect(try cache.value(forKey: "a") == nil)
        #expect(!descriptors.isKeeping(name))
        #expect(descriptors.recordCounts.records == 0)
    }

    /// Between two checks (`keptFileRecheckInterval`), a hit through a kept descriptor is one
    /// `pread` and no `fstat`: the length it proves still catches a file resized behind the
    /// cache's back, and a file written in place is read as it is now; a file renamed over is
    /// read through the old descriptor until the next check, and noticed then.
    @Test("between checks, a kept descriptor's hit makes no fstat; a resize is still caught; a rename only at the next check")
    func recheckInterval() throws {
        let dir = TemporaryDirectory("larder-payload")
        defer { dir.remove() }
        let other = TemporaryDirectory("larder-payload-other")
        defer { other.remove() }
        let stats = LarderMutex(0)
        var calls = SystemCalls.live
        calls.fstat = { fd, buffer in
            stats.withLock { $0 += 1 }
            return SystemCalls.live.fstat(fd, buffer)
        }
        var options = Self.options(dir, payloadMemory: 0)
        options.keptFileRecheckInterval = 3_600
        #expect(options.keptFileRecheckInterval == 3_600 && DiskCacheOptions(directory: dir.url).keptFileRecheckInterval == 1)
        let cache = try DiskCache(options: options, systemCalls: calls)
        defer { cache.close() }
        // The index, built in the background at open, first: a build that lists the folder after
        // the store below reads that record's header (an open and an `fstat`), which the count of
        // the hits then took for theirs (seen once, under the thread sanitizer).
        cache.waitForIndex()
        let descriptors = try #require(cache.records.descriptors)
        #expect(descriptors.recheckInterval == 3_600_000_000_000)
        let name = try cache.options.keyEncoding.fileName(for: "a")
        let path = cache.layout.path(for: name)
        func keep(_ expected: Data) throws {
            for _ in 0 ..< 4 { #expect(try cache.value(forKey: "a") == expected) }
            #expect(descriptors.isKeeping(name) && !descriptors.isKeepingRecord(name))
        }
        let v0 = DescriptorCacheTests.payload("a", 0)
        try cache.store(v0, forKey: "a")
        try keep(v0)
        let before = stats.withLock { $0 }
        for _ in 0 ..< 10 { #expect(try cache.value(forKey: "a") == v0) }
        #expect(stats.withLock { $0 } == before, "hits through a kept descriptor between checks make no fstat")

        // Written in place: read as it is now (the same inode).
        let inPlace = try Self.otherFile(DescriptorCacheTests.payload("a", 2), in: other, name: name)
        try Self.writeInPlace(inPlace.bytes, at: path)
        #expect(try cache.value(forKey: "a") == DescriptorCacheTests.payload("a", 2))

        // Resized: the pread of one byte more sees it; the descriptor goes, the file is read anew.
        try cache.store(DescriptorCacheTests.payload("a", 3), forKey: "a")
        try keep(DescriptorCacheTests.payload("a", 3))
        #expect(truncate(path, off_t(RecordHeader.size + 10)) == 0)
        #expect(try cache.value(forKey: "a") == nil)
        #expect(!descriptors.isKeeping(name))

        // Renamed over: the old file until the next check. Invalid argument: a negative interval.
        try cache.store(DescriptorCacheTests.payload("a", 4), forKey: "a")
        try keep(DescriptorCacheTests.payload("a", 4))
        let renamed = try Self.otherFile(DescriptorCacheTests.payload("a", 5), in: other, name: name)
        #expect(rename(renamed.path, path) == 0)
        #expect(try cache.value(forKey: "a") == DescriptorCacheTests.payload("a", 4))
        var negative = Self.options(dir, payloadMemory: 0)
        negative.keptFileRecheckInterval = -1
        #expect(throws: CacheError.self) { try DiskCache(options: negative) }
    }

    /// A check that is due (`keptFileRecheckInterval` passed; a cache whose interval is a
    /// microsecond) notices a file renamed over behind the cache's back.
    @Test("once the recheck interval has passed, a kept descriptor's file renamed over is noticed")
    func recheckNoticesARename() throws {
        let dir = TemporaryDirectory("larder-payload")
        defer { dir.remove() }
        let other = TemporaryDirectory("larder-payload-other")
        defer { other.remove() }
        var options = Self.options(dir, payloadMemory: 0)
        options.keptFileRecheckInterval = 1e-6
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        let name = try cache.options.keyEncoding.fileName(for: "a")
        let v0 = DescriptorCacheTests.payload("a", 0)
        try cache.store(v0, forKey: "a")
        for _ in 0 ..< 4 { #expect(try cache.value(forKey: "a") == v0) }
        #expect(try #require(cache.records.descriptors).isKeeping(name))
        let renamed = try Self.otherFile(DescriptorCacheTests.payload("a", 1), in: other, name: name)
        #expect(rename(renamed.path, cache.layout.path(for: name)) == 0)
        // Wait out the microsecond without a timed assertion: the check only has to be due.
        let start = DescriptorCache.now()
        while DescriptorCache.now() &- start < 1_000 {}
        #expect(try cache.value(forKey: "a") == DescriptorCacheTests.payload("a", 1))
    }

    /// One step of the randomized test over a cache.
    enum Step: CaseIterable {
        case store, read, read2, read3, remove, collect, advance, lock, flush, storeLarge
    }

    @Test(
        "randomized: reads equal a model under a byte bound while stores, removals and collections drop kept records",
        arguments: [11, 12, 13, 14])
    func randomizedAgainstModel(seed: UInt64) throws {
        let dir = TemporaryDirectory("larder-payload-model")
        defer { dir.remove() }
        let before = openDescriptors(beneath: dir.url)
        let clock = ManualClock(now: 1_700_000_000)
        var random = SplitMix64(seed: seed)
        // A bound of 4 KiB: records of about 700 bytes with header and key, up to 512 each.
        let bound = 4_096
        // No record expires: the clock moves at most 200 s of the default 600.
        let cache = try DiskCache(options: Self.options(dir, payloadMemory: bound, clock: clock))
        let descriptors = try #require(cache.records.descriptors)
        var model: [String: Data] = [:]
        let keys = (0 ..< 10).map { "key-\($0)" }
        var version = 0
        var keptSeen = 0
        func isKept(_ key: String) throws -> Bool { descriptors.isKeepingRecord(try cache.options.keyEncoding.fileName(for: key)) }
        for step in 0 ..< 2_000 {
            // Skewed, so that some records are read often enough to be kept.
            let key = keys[Int(min(random.next() % 10, random.next() % 10))]
            switch Step.allCases[Int(random.next() % UInt64(Step.allCases.count))] {
            case .store, .storeLarge:
                version += 1
                let large = random.next() % 5 == 0
                let data = DescriptorCacheTests.payload(key, version, size: large ? 700 : 300 + version % 50)
                try cache.store(data, forKey: key)
                #expect(try !isKept(key), "step \(step): a store drops the kept record")
                model[key] = data
            case .read, .read2, .read3:
                let expected = model[key]
                #expect(try cache.value(forKey: key) == expected, "step \(step): read \(key)")
            case .remove:
                try cache.remove(forKey: key)
                #expect(try !isKept(key), "step \(step): a removal drops the kept record")
                model[key] = nil
            case .collect:
                _ = try cache.collectGarbage()
                for key in keys where model[key] == nil {
                    #expect(try !isKept(key), "step \(step): nothing is kept for an absent record")
                }
            case .advance:
                clock.advance(by: 1)
            case .lock:
                if model[key] != nil {
                    #expect(try cache.lock(forKeys: [key]) == [key])
                    #expect(try !isKept(key), "step \(step): a header change drops the kept record")
                    #expect(try cache.unlock(forKeys: [key]) == [key])
                }
            case .flush:
                _ = try cache.flush()
            }
            let counts = descriptors.recordCounts
            #expect(counts.bytes <= bound, "step \(step): \(counts.bytes) bytes kept")
            keptSeen += counts.records
        }
        // The test exercised kept records.
        #expect(keptSeen > 100)
        for key in keys { #expect(try cache.value(forKey: key) == model[key]) }
        cache.close()
        #expect(descriptors.recordCounts.records == 0)
        #expect(openDescriptors(beneath: dir.url) == before)
    }

    @Test("randomized, on the descriptor cache alone: byte bound, records only beside their descriptors, retired with them")
    func descriptorCacheModel() {
        let closes = RecordedCloses(performing: false)
        let bound = 8_192
        let cache = DescriptorCache(limit: 6, payloadCapacity: bound, calls: closes.calls)
        var random = SplitMix64(seed: 21)
        let names = (0 ..< 12).map { "n\($0)" }
        var next: Int32 = 500
        /// The record last offered for each name's present descriptor (the only one a borrow may return).
        var offered: [String: (fd: Int32, tag: UInt8, size: Int)] = [:]
        var served = 0
        var refused = 0
        for step in 0 ..< 6_000 {
            let name = names[Int(min(random.next() % 12, random.next() % 12))]
            switch random.next() % 8 {
            case 0, 1, 2, 3:
                // Mostly a read of the length last offered; sometimes of another (the file changed).
                let expected = offered[name]
                let asksAnother = random.next() % 8 == 0
                let size = (expected?.size ?? 1) + (asksAnother ? 1 : 0)
                let read = KeptRecord.Read(fileSize: size, verifyPayload: true, expectedKey: nil)
                switch cache.borrow(RecordName(name), hash: NameHash.of(name), serving: read) {
                case .record(let contents):
                    #expect(!asksAnother, "step \(step): a record of another length served")
                    #expect(contents.payload?.first == expected?.tag, "step \(step): not the last record offered")
                    // Served without lending: the descriptor is the one it was kept beside, and free.
                    let fd = cache.lend(name)
                    #expect(fd != nil && fd == expected?.fd, "step \(step): a record kept beside another descriptor")
                    if let fd { cache.giveBack(fd) }
                    served += 1
                case .descriptor(let loan):
                    // A record that does not answer the read is dropped with the loan.
                    #expect(!cache.isKeepingRecord(name), "step \(step): a refused record kept")
                    if asksAnother, expected != nil { refused += 1 }
                    let tag = UInt8(truncatingIfNeeded: step)
                    let size = random.next() % 6 == 0 ? 2_000 : 600 + Int(random.next() % 300)
                    cache.keepRecord(Self.record(size, tag: tag), readThrough: loan.fd, as: name)
                    offered[name] = (loan.fd, tag, size)
                    cache.giveBack(loan.fd)
                case nil:
                    next += 1
                    if cache.keep(next, as: name) { offered[name] = nil }
                }
            case 4:
                cache.retire(name)
                #expect(!cache.isKeepingRecord(name), "step \(step)")
                offered[name] = nil
            case 5:
                // A read no kept record answers (no record has length 0) drops the name's record
                // and keeps its descriptor.
                let read = KeptRecord.Read(fileSize: 0, verifyPayload: true, expectedKey: nil)
                let wasKept = cache.isKeeping(name)
                if case .descriptor(let loan) = cache.borrow(RecordName(name), hash: NameHash.of(name), serving: read) {
                    cache.giveBack(loan.fd)
                }
                #expect(!cache.isKeepingRecord(name), "step \(step)")
                #expect(cache.isKeeping(name) == wasKept, "step \(step)")
            case 6:
                if random.next() % 10 == 0 {
                    _ = cache.relieve()
                }
            default:
                // A record offered for another descriptor than the one kept is not kept.
                let before = cache.recordCounts
                cache.keepRecord(Self.record(700, tag: 1), readThrough: -1, as: name)
                #expect(cache.recordCounts == before, "step \(step)")
            }
            let counts = cache.recordCounts
            #expect(counts.bytes <= bound, "step \(step)")
            #expect(counts.records <= cache.counts.kept, "step \(step)")
            for name in names where cache.isKeepingRecord(name) { #expect(cache.isKeeping(name), "step \(step)") }
        }
        #expect(served > 200)
        #expect(refused > 20)
        cache.retireAll(closing: true)
        #expect(cache.recordCounts == (0, 0))
    }
}
