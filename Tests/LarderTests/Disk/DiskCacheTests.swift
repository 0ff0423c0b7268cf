import Foundation
import Testing
@testable import Larder

@Suite struct DiskCacheTests {
    @Test(arguments: [KeyEncoding.sha256, .verbatim])
    func roundTripOfEveryCall(encoding: KeyEncoding) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock, encoding: encoding))
        try cache.store(Data("one".utf8), forKey: "alpha", expiry: .seconds(100))
        try cache.store(Data("two".utf8), forKey: "alpine", locked: true)
        try cache.store(Data(), forKey: "beta")
        let one = try #require(try cache.record(forKey: "alpha"))
        #expect(one.key == "alpha" && one.data == Data("one".utf8) && one.expiry == .seconds(100) && !one.isLocked)
        #expect(one.updateTime == 1_700_000_000 && one.expirationTime == 1_700_000_100)
        let two = try #require(try cache.record(forKey: "alpine"))
        #expect(two.lockCount == 1 && two.isLocked && two.expirationTime == nil)
        #expect(try cache.record(forKey: "beta")?.data == Data())
        #expect(cache.contains("alpha") && !cache.contains("gamma"))
        #expect(try cache.touch(forKey: "beta") && !(try cache.touch(forKey: "gamma")))
        #expect(try cache.keys(withPrefix: "alp") == ["alpha", "alpine"])
        #expect(try cache.keys(withPrefix: "") == ["alpha", "alpine", "beta"])
        #expect(try cache.lock(forKeys: ["alpha", "gamma"]) == ["alpha"])
        #expect(try cache.record(forKey: "alpha")?.lockCount == 1)
        #expect(try cache.unlock(forKeys: ["alpha", "alpine", "beta"]) == ["alpha", "alpine"])
        #expect(try cache.record(forKey: "alpine")?.lockCount == 0)
        #expect(try cache.remove(forKeys: ["alpha", "gamma"]) == ["alpha"])
        #expect(try cache.record(forKey: "alpha") == nil)
        #expect(cache.count == 2)
        let stats = cache.statistics
        #expect(stats.insertions == 3 && stats.misses == 1 && stats.hits == 5)
    }

    @Test func storeReplacesAndLoadsNeverSeeOldBytes() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        for version in 0 ..< 20 {
            try cache.store(Data("v\(version)".utf8), forKey: "k")
            #expect(try cache.record(forKey: "k")?.data == Data("v\(version)".utf8))
        }
        #expect(cache.count == 1)
        #expect(recordFiles(in: dir.url).count == 1)
    }

    // SPT's TTL table: default and explicit TTLs, the strict boundary, locked records surviving
    // expiry, and the sliding window only for ttl 0.
    @Test func ttlTable() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_000_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock))  // default expiration 600
        try cache.store(Data("d".utf8), forKey: "default")
        try cache.store(Data("e".utf8), forKey: "explicit", expiry: .seconds(60))
        try cache.store(Data("l".utf8), forKey: "locked", expiry: .seconds(60), locked: true)
        try cache.store(Data("s".utf8), forKey: "slides")
        clock.advance(by: 60)
        #expect(try cache.record(forKey: "explicit") != nil)  // exactly at the threshold: not expired
        clock.advance(by: 1)
        #expect(try cache.record(forKey: "explicit") == nil)  // one second past
        #expect(try cache.record(forKey: "locked") != nil)
        clock.advance(by: 400)  // t = 461
        #expect(try cache.touch(forKey: "slides"))  // slides the ttl 0 record to 461
        clock.advance(by: 139)  // t = 600
        #expect(try cache.record(forKey: "default") != nil)  // exactly 600: alive, and now slid to 600
        clock.advance(by: 601)  // t = 1201: "default" was last used at 600, "slides" at 461
        #expect(try cache.record(forKey: "default") == nil)
        #expect(try cache.record(forKey: "slides") == nil)
        #expect(try cache.record(forKey: "locked")?.data == Data("l".utf8))
        #expect(cache.statistics.expirations == 3)
    }

    @Test func explicitTTLDoesNotSlideOnReads() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 5_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock))
        try cache.store(Data("x".utf8), forKey: "k", expiry: .seconds(100))
        for _ in 0 ..< 10 {
            clock.advance(by: 10)
            #expect(try cache.record(forKey: "k")?.updateTime == 5_000)
        }
        clock.advance(by: 1)
        #expect(try cache.record(forKey: "k") == nil)
    }

    @Test func lockCountsNeverGoNegativeAndExpiredRecordsCannotBeLocked() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 10_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock))
        try cache.store(Data("x".utf8), forKey: "k", expiry: .seconds(10))
        #expect(try cache.lock(forKeys: ["k", "k", "k"]) == ["k", "k", "k"])
        #expect(try cache.record(forKey: "k")?.lockCount == 3)
        #expect(try cache.unlock(forKeys: ["k", "k", "k", "k"]) == ["k", "k", "k"])
        #expect(try cache.record(forKey: "k")?.lockCount == 0)
        clock.advance(by: 11)
        #expect(try cache.lock(forKeys: ["k"]) == [])
        #expect(try cache.record(forKey: "k") == nil)
    }

    @Test func lockCountsSurviveReopen() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 10_000)
        do {
            let cache = try DiskCache(options: testOptions(dir.url, clock: clock))
            try cache.store(Data("x".utf8), forKey: "k")
            try cache.lock(forKeys: ["k", "k"])
            cache.close()
        }
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock))
        #expect(try cache.record(forKey: "k")?.lockCount == 2)
        #expect(cache.lockedSize == cache.totalSize && cache.totalSize > 0)
    }

    @Test(arguments: ["", ".", "..", ".hidden", ".larder", "a/b", "../x", "/etc/passwd", "nul\0byte", String(repeating: "k", count: 256)])
    func verbatimRejectsUnsafeKeys(key: String) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url, encoding: .verbatim))
        #expect { try cache.store(Data("x".utf8), forKey: key) } throws: { ($0 as? CacheError)?.code == .invalidKey }
        #expect { try cache.record(forKey: key) } throws: { ($0 as? CacheError)?.code == .invalidKey }
        #expect(recordFiles(in: dir.url).isEmpty)
    }

    @Test func sha256AcceptsAnyKeyAndStoresIt() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        let keys = ["../x", "/etc/passwd", ".larder", "", String(repeating: "é", count: 1000), "nul\0byte"]
        for (i, key) in keys.enumerated() { try cache.store(Data([UInt8(i)]), forKey: key) }
        for (i, key) in keys.enumerated() { #expect(try cache.record(forKey: key)?.data == Data([UInt8(i)])) }
        // Least recently used first: stored, then read, in this order.
        #expect(try cache.keys(withPrefix: "") == keys)
        #expect(try cache.keys(withPrefix: "").sorted() == keys.sorted())
        let files = recordFiles(in: dir.url)
        #expect(files.count == keys.count)
        #expect(files.allSatisfy { $0.count == 67 && $0.dropFirst(3).hasPrefix($0.prefix(2)) })
    }

    @Test func storedKeysUpToTheMaximumLengthAreAccepted() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        #expect(RecordHeader.maximumKeyLength == 8 * 1024)
        let longest = String(repeating: "k", count: RecordHeader.maximumKeyLength)
        try cache.store(Data("x".utf8), forKey: longest)
        #expect(try cache.record(forKey: longest)?.data == Data("x".utf8))
        #expect { try cache.store(Data("y".utf8), forKey: longest + "k") } throws: { ($0 as? CacheError)?.code == .invalidKey }
        #expect(cache.count == 1)
    }

    @Test func customEncodingIsRecordedAndValidated() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let upper = KeyEncoding.custom(name: "upper") { $0.uppercased() }
        let cache = try DiskCache(options: testOptions(dir.url, encoding: upper))
        try cache.store(Data("x".utf8), forKey: "abc")
        #expect(FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("AB/ABC").path))
        #expect { try cache.store(Data("x".utf8), forKey: "a/b") } throws: { ($0 as? CacheError)?.code == .invalidKey }
        #expect(try cache.keys(withPrefix: "") == ["abc"])
        cache.close()
        #expect { try DiskCache(options: testOptions(dir.url, encoding: .custom(name: "lower") { $0 })) } throws: {
            ($0 as? CacheError)?.code == .keyEncodingMismatch
        }
    }

    @Test func openingWithAnotherEncodingIsAnError() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try DiskCache(options: testOptions(dir.url, encoding: .sha256)).close()
        #expect { try DiskCache(options: testOptions(dir.url, encoding: .verbatim)) } throws: {
            ($0 as? CacheError)?.code == .keyEncodingMismatch
        }
        // An SPT folder (records, no metadata) is verbatim.
        let spt = dir.appending("spt")
        try Fixtures.copySPTCache(to: spt)
        #expect { try DiskCache(options: testOptions(spt, encoding: .sha256)) } throws: {
            ($0 as? CacheError)?.code == .keyEncodingMismatch
        }
        #expect(try DiskCache(options: testOptions(spt, encoding: .verbatim)).count > 0)
    }

    @Test func secondWriterGetsDirectoryInUseWithPid() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let first = try DiskCache(options: testOptions(dir.url))
        try first.store(Data("x".utf8), forKey: "k")
        #expect { try DiskCache(options: testOptions(dir.url)) } throws: { error in
            let error = error as? CacheError
            return error?.code == .directoryInUse && error?.holderPID == getpid()
        }
        var readOnly = testOptions(dir.url)
        readOnly.isReadOnly = true
        let reader = try DiskCache(options: readOnly)
        #expect(try reader.record(forKey: "k")?.data == Data("x".utf8))
        #expect { try reader.store(Data(), forKey: "k") } throws: { ($0 as? CacheError)?.code == .readOnly }
        first.close()
        let second = try DiskCache(options: testOptions(dir.url))
        #expect(try second.record(forKey: "k") != nil)
    }

    @Test func aWriterAnswersMissesFromItsIndexAndAReaderFromTheDisk() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let opens = LarderMutex(0)
        var calls = SystemCalls.live
        calls.openat = { directory, path, flags, mode in
            opens.withLock { $0 += 1 }
            return SystemCalls.live.openat(directory, path, flags, mode)
        }
        calls.openBeneath = { directory, path, flags, mode in
            opens.withLock { $0 += 1 }
            return SystemCalls.live.openBeneath(directory, path, flags, mode)
        }
        let cache = try DiskCache(options: testOptions(dir.url), systemCalls: calls)
        try cache.store(Data("x".utf8), forKey: "present")
        #expect(cache.count == 1)  // waits for the index
        let before = opens.withLock { $0 }
        for i in 0 ..< 10 { #expect(try cache.record(forKey: "absent-\(i)") == nil) }
        #expect(opens.withLock { $0 } == before, "misses opened files")
        #expect(try cache.record(forKey: "present") != nil)
        // One openat2 beneath the root, or the shard folder then the record where the kernel lacks it.
        #expect((before + 1 ... before + 2).contains(opens.withLock { $0 }))
        #expect(cache.statistics.misses == 10)
        // A read-only reader does not own the directory: it asks the disk.
        var readOnly = testOptions(dir.url)
        readOnly.isReadOnly = true
        let reader = try DiskCache(options: readOnly, systemCalls: calls)
        _ = reader.count
        let readerBefore = opens.withLock { $0 }
        #expect(try reader.record(forKey: "absent") == nil)
        // One openat2, or the shard folder (absent, so nothing more) or the shard folder and the record.
        #expect((readerBefore + 1 ... readerBefore + 2).contains(opens.withLock { $0 }))
    }

    @Test func aRecordReplacedBehindTheCachesBackIsReadAtItsRealLength() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let cache = try DiskCache(options: testOptions(dir.url, encoding: .verbatim))
        try cache.store(Data(repeating: 1, count: 100), forKey: "kk")
        #expect(try cache.record(forKey: "kk")?.data.count == 100)  // the index now knows its length
        for length in [300, 40, 100] {
            // The same key written elsewhere, then copied over the cache's file.
            let other = try DiskCache(options: testOptions(scratch.url, encoding: .verbatim))
            try other.store(Data(repeating: UInt8(length % 251), count: length), forKey: "kk")
            other.close()
            let target = dir.url.appendingPathComponent("kk/kk")
            try FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: scratch.url.appendingPathComponent("kk/kk"), to: target)
            #expect(try cache.record(forKey: "kk")?.data == Data(repeating: UInt8(length % 251), count: length), "length \(length)")
        }
    }

    @Test func closedCacheThrowsClosed() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url))
        cache.close()
        cache.close()
        #expect { try cache.record(forKey: "k") } throws: { ($0 as? CacheError)?.code == .closed }
    }

    @Test func verbatimRecordsValidateAsSPTRecords() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try DiskCache(options: testOptions(dir.url, encoding: .verbatim))
        let payload = Data((0 ..< 3000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try cache.store(payload, forKey: "abcdef", expiry: .seconds(77), locked: true)
        try cache.store(Data("x".utf8), forKey: "z")
        cache.close()
        let parsed = try #require(IndependentSPTParser.parse(Array(try Data(contentsOf: dir.url.appendingPathComponent("ab/abcdef")))))
        #expect(parsed.payload == Array(payload) && parsed.refCount == 1 && parsed.ttl == 77 && parsed.updateTime == 1_700_000_000)
        #expect(IndependentSPTParser.parse(Array(try Data(contentsOf: dir.url.appendingPathComponent("z"))))?.payload == Array("x".utf8))
    }

    @Test func fixtureReadsAsManifestSays() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let copy = dir.appending("spt")
        try Fixtures.copySPTCache(to: copy)
        let manifest = try Fixtures.manifest()
        let events = EventLog()
        var options = testOptions(copy, clock: ManualClock(now: manifest.now), encoding: .verbatim)
        options.defaultExpiration = manifest.defaultExpiration
        options.eventHandler = events.handler
        let cache = try DiskCache(options: options)
        for record in manifest.records {
            let loaded = try cache.record(forKey: record.key)
            #expect((loaded != nil) == record.readable, "\(record.key)")
            if let loaded {
                #expect(loaded.data.withUnsafeBytes { SHA256Hash.hex($0) } == record.payloadSha256)
                #expect(
                    loaded.lockCount == record.refCount
                        && loaded.expiry == (record.ttl == 0 ? .default : .seconds(TimeInterval(record.ttl))))
            }
            // A damaged record goes; a file planted without the magic is no record, and stays.
            if record.corruption != nil {
                #expect(
                    FileManager.default.fileExists(atPath: copy.appendingPathComponent(record.file).path) == record.isForeign,
                    "\(record.key)")
            }
        }
        let corrupt = manifest.records.filter { $0.corruption != nil && !$0.isForeign }
        #expect(cache.statistics.corruptRecordsRemoved == corrupt.count)
        let reported = events.all.compactMap { event -> String? in
            if case .corruptRecordRemoved(let key, _, _) = event { return key }
            return nil
        }
        #expect(Set(reported) == Set(corrupt.map(\.key)))
    }

    @Test func corruptPayloadIsAMissAndRemoved() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let events = EventLog()
        var options = testOptions(dir.url)
        options.eventHandler = events.handler
        let cache = try DiskCache(options: options)
        try cache.store(Data(repeating: 7, count: 100), forKey: "k")
        let file = dir.url.appendingPathComponent(try #require(recordFiles(in: dir.url).first))
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: file)
        #expect(try cache.record(forKey: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(events.all.contains(.corruptRecordRemoved(key: "k", file: file.path, reason: .badPayloadChecksum)))
        // Without verification the same damage would be returned, so the flag matters.
        var unverified = testOptions(dir.appending("u"))
        unverified.verifiesPayloadChecksum = false
        let loose = try DiskCache(options: unverified)
        try loose.store(Data(repeating: 7, count: 100), forKey: "k")
        let looseFile = dir.appending("u").appendingPathComponent(try #require(recordFiles(in: dir.appending("u")).first))
        var looseBytes = try Data(contentsOf: looseFile)
        looseBytes[looseBytes.count - 1] ^= 0xFF
        try looseBytes.write(to: looseFile)
        #expect(try loose.record(forKey: "k")?.data.last == 7 ^ 0xFF)
    }

    @Test func leftoverTemporaryFilesAreRemovedAtOpen() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try DiskCache(options: testOptions(dir.url)).close()
        let leftover = dir.url.appendingPathComponent(".larder-tmp/99999-1")
        try Data("partial".utf8).write(to: leftover)
        _ = try DiskCache(options: testOptions(dir.url))
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
    }

    @Test func invalidOptionsAreTypedErrors() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var options = testOptions(dir.url)
        options.sizeLimit = -1
        #expect { try DiskCache(options: options) } throws: { ($0 as? CacheError)?.code == .invalidOptions }
        options = testOptions(dir.url)
        options.garbageCollectionInterval = 0
        #expect { try DiskCache(options: options) } throws: { ($0 as? CacheError)?.code == .invalidOptions }
        options = testOptions(dir.url)
        options.defaultExpiration = -5
        #expect { try DiskCache(options: options) } throws: { ($0 as? CacheError)?.code == .invalidOptions }
        for wait in [-1, TimeInterval.nan, .infinity] {
            options = testOptions(dir.url)
            options.writerWaitTimeout = wait
            #expect { try DiskCache(options: options) } throws: { error in
                guard let error = error as? CacheError else { return false }
                return error.code == .invalidOptions && error.message.hasPrefix("writerWaitTimeout must be 0 or a positive")
            }
        }
        // The longest wait opens a free folder at once (no overflow of the deadline).
        options = testOptions(dir.url)
        options.writerWaitTimeout = .greatestFiniteMagnitude
        try DiskCache(options: options).close()
        let cache = try DiskCache(options: testOptions(dir.url))
        // A negative expiry is a call's argument, not an option: invalidArgument (was invalidOptions for `ttl: -1`).
        #expect { try cache.store(Data(), forKey: "k", expiry: .seconds(-1)) } throws: { ($0 as? CacheError)?.code == .invalidArgument }
        // A directory that cannot be made: its parent is a file.
        let file = dir.url.appendingPathComponent("file")
        try Data().write(to: file)
        #expect { try DiskCache(options: testOptions(file.appendingPathComponent("cache"))) } throws: {
            ($0 as? CacheError)?.code == .ioFailure
        }
    }

    @Test func defaultsAreAsDocumented() {
        let options = DiskCacheOptions(directory: URL(fileURLWithPath: "/tmp/x"))
        #expect(options.defaultExpiration == 30 * 24 * 3600)
        #expect(options.writerWaitTimeout == 0)
        #expect(options.garbageCollectionInterval == 363)
        #expect(options.verifiesPayloadChecksum && !options.isReadOnly)
        #expect(options.durability == .atomicRename && options.minimumFreeDiskSpace == .zero)
        #expect(options.sizeLimit == 0 && options.countLimit == 0)
        if case .sha256 = options.keyEncoding {} else { Issue.record("default key encoding is not sha256") }
    }

    // MARK: The unified API (issue 11)

    @Test func invalidExpiriesAreRejectedAndThePreviousRecordStays() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock, encoding: .verbatim))
        try cache.store(Data("old".utf8), forKey: "k", expiry: .seconds(100))
        let file = dir.url.appendingPathComponent("k")
        let bytesBefore = try Data(contentsOf: file)
        let before = cache.statistics
        for expiry in invalidExpiries {
            let error = #expect(throws: CacheError.self, "\(expiry)") { try cache.store(Data("new".utf8), forKey: "k", expiry: expiry) }
            #expect(error?.code == .invalidArgument, "\(expiry)")
            #expect(error?.key == "k", "\(expiry)")
            // The typed store takes the same path.
            let typed = #expect(throws: CacheError.self, "\(expiry)") { try cache.store([1, 2], forKey: "k", expiry: expiry) }
            #expect(typed?.code == .invalidArgument, "\(expiry)")
        }
        #expect(cache.statistics == before)
        #expect(try Data(contentsOf: file) == bytesBefore)
        #expect(recordFiles(in: dir.url) == ["k"])
        let record = try #require(try cache.record(forKey: "k"))
        #expect(record.data == Data("old".utf8) && record.expiry == .seconds(100))
        #expect(record.expirationTime == 1_700_000_100)
    }

    @Test func expiriesAreClampedToTheMaximumAndRoundedUpToWholeSeconds() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock, encoding: .verbatim))
        try cache.store(Data("x".utf8), forKey: "huge", expiry: .seconds(1e30))
        try cache.store(Data("x".utf8), forKey: "half", expiry: .seconds(0.5))
        try cache.store(Data("x".utf8), forKey: "default")
        let huge = try #require(try cache.record(forKey: "huge"))
        #expect(huge.expiry == .seconds(Expiry.maximumSeconds))
        #expect(huge.expirationTime == 1_700_000_000 + Expiry.maximumSeconds)
        #expect(try cache.record(forKey: "half")?.expiry == .seconds(1))
        #expect(try cache.record(forKey: "default")?.expiry == .default)
        // What the headers say: the clamped seconds, ceil(0.5), and SPT's 0 for the default.
        func ttl(_ name: String) throws -> UInt64 {
            try RecordHeader.decode(Array(try Data(contentsOf: dir.url.appendingPathComponent(name)))).ttl
        }
        #expect(try ttl("hu/huge") == 3_155_760_000)
        #expect(try ttl("ha/half") == 1)
        #expect(try ttl("de/default") == 0)
        // The clamped record lives its hundred years, and not a second more.
        clock.advance(by: Expiry.maximumSeconds)
        #expect(cache.contains("huge"))
        clock.advance(by: 1)
        #expect(!cache.contains("huge"))
        #expect(try cache.record(forKey: "huge") == nil)
    }

    @Test func removeSaysWhatItRemoved() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: testOptions(dir.url, clock: clock))
        for key in ["a", "b", "c", "d"] { try cache.store(Data(key.utf8), forKey: key) }
        try cache.store(Data("s".utf8), forKey: "stale", expiry: .seconds(1))
        try cache.store(Data("l".utf8), forKey: "locked", expiry: .seconds(1), locked: true)
        _ = cache.count  // the index knows every record
        clock.advance(by: 2)
        #expect(try cache.remove(forKey: "a"))
        #expect(!(try cache.remove(forKey: "a")))
        #expect(!(try cache.remove(forKey: "never")))
        // Absent and expired keys are not listed; a key given twice is removed once.
        #expect(try cache.remove(forKeys: ["d", "missing", "b", "a", "stale", "d", "locked"]) == ["d", "b", "locked"])
        #expect(try cache.keys(withPrefix: "") == ["c"])
        #expect(recordFiles(in: dir.url).count == 1)  // the expired record's file went all the same
        #expect(try cache.remove(forKeys: []) == [])
        #expect(try cache.remove(forKeys: ["c"]) == ["c"])
        #expect(cache.count == 0 && recordFiles(in: dir.url).isEmpty)
        // Async and callback twins report the same.
        try cache.store(Data("e".utf8), forKey: "e")
        let removed = awaitCallback { cache.remove(forKeys: ["e", "f"], queue: DispatchQueue(label: "t"), completion: $0) }
        #expect(removed.response.value == ["e"])
    }

    @Test func containsIsNotAUse() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let events = EventLog()
        var options = testOptions(dir.url, clock: clock)  // default expiration 600
        options.countLimit = 3
        options.eventHandler = events.handler
        let cache = try DiskCache(options: options)
        _ = cache.count  // limits apply once the index is built
        try cache.store(Data("a".utf8), forKey: "a")
        clock.advance(by: 1)
        try cache.store(Data("b".utf8), forKey: "b", expiry: .seconds(5))  // expires at t = 7
        clock.advance(by: 1)
        try cache.store(Data("c".utf8), forKey: "c")  // default: expired from t = 603 unless used
        let before = cache.statistics
        // Asked most recent first, so that a contains that counted as a use would reverse the order.
        #expect(cache.contains("c") && cache.contains("b") && cache.contains("a") && !cache.contains("z"))
        #expect(try cache.keys(withPrefix: "") == ["a", "b", "c"])
        #expect(cache.statistics == before)
        // "a" was not used by contains, so it is the one a new record evicts.
        try cache.store(Data("d".utf8), forKey: "d")
        #expect(try cache.keys(withPrefix: "") == ["b", "c", "d"])
        let evicted = events.all.compactMap { event -> String? in
            if case .recordEvicted(let key, _, .countLimit) = event { return key }
            return nil
        }
        #expect(evicted == ["a"])
        #expect(cache.statistics.evictions == [.countLimit: 1])
        // An expired record is not contained, and contains does not drop it or count anything.
        let afterStore = cache.statistics
        clock.advance(by: 5)  // t = 7
        #expect(!cache.contains("b"))
        #expect(cache.count == 3 && cache.statistics == afterStore)
        // contains does not slide a default-expiry record: "c" goes 600 s after its store.
        clock.advance(by: 595)  // t = 602: exactly 600 s, still alive
        #expect(cache.contains("c"))
        #expect(cache.contains("c"))
        clock.advance(by: 1)  // t = 603
        #expect(!cache.contains("c"))
        #expect(try cache.record(forKey: "c") == nil)
    }

    @Test func aStoreOverTheSizeLimitEvictsUnderSizeLimit() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let events = EventLog()
        var options = testOptions(dir.url, clock: clock)
        options.eventHandler = events.handler
        let probeDir = TemporaryDirectory()
        defer { probeDir.remove() }
        let probe = try DiskCache(options: testOptions(probeDir.url))  // for the block size
        options.sizeLimit = 3 * probe.blockSize
        options.policy = .lru
        probe.close()
        let cache = try DiskCache(options: options)
        _ = cache.count
        for i in 0 ..< 5 {
            try cache.store(Data(repeating: 1, count: 100), forKey: "k\(i)")
            clock.advance(by: 1)
        }
        #expect(try cache.keys(withPrefix: "") == ["k2", "k3", "k4"])
        #expect(cache.statistics.evictions == [.sizeLimit: 2])
        #expect(cache.statistics.totalEvictions == 2)
        let reasons = events.all.compactMap { event -> EvictionReason? in
            if case .recordEvicted(_, _, let reason) = event { return reason }
            return nil
        }
        #expect(reasons == [.sizeLimit, .sizeLimit])
    }

    @Test func aCollectionOverTheFreeSpaceFloorCountsItsEvictionsUnderSizeLimit() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        // The volume: 10,000 blocks of 4 KiB, with `free` blocks available.
        let free = LarderMutex(5_000)
        var calls = SystemCalls.live
        calls.statvfs = { _, buf in
            buf.pointee = StatVFS()
            buf.pointee.f_frsize = 4096
            buf.pointee.f_blocks = 10_000
            buf.pointee.f_bavail = .init(free.withLock { $0 })
            return 0
        }
        var options = testOptions(dir.url, clock: clock)
        options.minimumFreeDiskSpace = .bytes(1_000 * 4096)
        let cache = try DiskCache(options: options, systemCalls: calls)
        for i in 0 ..< 6 {
            try cache.store(Data(repeating: 1, count: 100), forKey: "k\(i)")
            clock.advance(by: 1)
        }
        #expect(cache.count == 6 && cache.statistics.totalEvictions == 0)
        // The volume fills up behind the cache's back: 2 blocks short of the floor, so a collection
        // frees at least as much, least recently used first.
        free.withLock { $0 = 998 }
        let report = try cache.collectGarbage()
        let removed = report.count(for: .sizeLimit)
        #expect(removed >= 1 && removed < 6)
        #expect(report.removed.allSatisfy { $0.reason == .sizeLimit })
        #expect(report.removed.map(\.key) == (0 ..< removed).map { "k\($0)" })
        #expect(report.bytesFreed >= 2 * 4096)
        #expect(cache.statistics.evictions == [.sizeLimit: removed])
        #expect(cache.statistics.collections == 1)
    }
}
