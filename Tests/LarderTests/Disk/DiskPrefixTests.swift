import Dispatch
import Foundation
import Testing
@testable import Larder

/// `DiskCache.remove(withPrefix:)`: bulk invalidation from the index, under both key encodings
/// (verbatim: the file name is the key; sha256: the record stores it).
@Suite struct DiskPrefixTests {
    static let encodings: [KeyEncoding] = [.verbatim, .sha256]

    @Test(arguments: encodings)
    func removesEveryRecordWithThePrefixExpiredOrNot(encoding: KeyEncoding) throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        var cache: DiskCache? = try DiskCache(options: testOptions(temporary.url, clock: clock, encoding: encoding))
        try cache!.store(bytes("expired"), forKey: "user-1-old", expiry: .seconds(10))
        clock.advance(by: 20)
        for key in ["user-1-a", "user-2-a", "user-1-b", "user-10-a", "user-1"] { try cache!.store(bytes(key), forKey: key) }
        try cache!.store(bytes("locked"), forKey: "user-1-locked", locked: true)

        let removed = try cache!.remove(withPrefix: "user-1-")
        // Live records only, least recently used first; the expired one goes too, unlisted.
        #expect(removed == ["user-1-a", "user-1-b", "user-1-locked"])
        #expect(recordFiles(in: temporary.url).count == 3)
        for key in ["user-1-a", "user-1-b", "user-1-locked", "user-1-old"] { #expect(try cache!.value(forKey: key) == nil) }
        for key in ["user-2-a", "user-10-a", "user-1"] { #expect(try cache!.value(forKey: key) == bytes(key)) }
        #expect(DiskAudit.indexMismatches(cache!).isEmpty)

        // Gone for good: a reopened cache (index from the snapshot) does not bring them back.
        cache!.close()
        cache = nil
        let reopened = try DiskCache(options: testOptions(temporary.url, clock: clock, encoding: encoding))
        #expect(try reopened.keys().sorted() == ["user-1", "user-10-a", "user-2-a"])
        #expect(try reopened.remove(withPrefix: "nobody") == [])
        // The empty prefix removes everything.
        #expect(try reopened.remove(withPrefix: "").sorted() == ["user-1", "user-10-a", "user-2-a"])
        #expect(recordFiles(in: temporary.url).isEmpty && reopened.count == 0)
        #expect(DiskAudit.indexMismatches(reopened).isEmpty)
    }

    @Test func aReadOnlyOrClosedCacheRefuses() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        do {
            let cache = try DiskCache(options: testOptions(temporary.url))
            try cache.store(bytes("x"), forKey: "a")
            cache.close()
            #expect(cacheErrorCode { try cache.remove(withPrefix: "a") } == .closed)
        }
        var options = testOptions(temporary.url)
        options.isReadOnly = true
        let readOnly = try DiskCache(options: options)
        #expect(cacheErrorCode { try readOnly.remove(withPrefix: "a") } == .readOnly)
        #expect(try readOnly.value(forKey: "a") == bytes("x"))
    }

    @Test(arguments: encodings)
    func underConcurrentStoresEveryRecordStoredBeforeTheCallGoes(encoding: KeyEncoding) throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try DiskCache(options: testOptions(temporary.url, encoding: encoding))
        let old = (0 ..< 300).map { "old-\($0)" }
        for key in old { try cache.store(bytes(key), forKey: key) }
        let kept = (0 ..< 300).map { "keep-\($0)" }
        let late = (0 ..< 100).map { "old-late-\($0)" }
        let removed = LarderMutex<[String]>([])
        let failures = LarderMutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            do {
                switch worker {
                case 0: removed.withLock { $0 = (try? cache.remove(withPrefix: "old-")) ?? ["failed"] }
                case 1: for key in kept { try cache.store(bytes(key), forKey: key) }
                default: for key in late { try cache.store(bytes(key), forKey: key) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let removedKeys = Set(removed.withLock { $0 })
        #expect(removedKeys.isSuperset(of: old) && removedKeys.isSubset(of: Set(old + late)))
        for key in old { #expect(try cache.value(forKey: key) == nil) }
        for key in kept { #expect(try cache.value(forKey: key) == bytes(key)) }
        // A late key was either removed or is intact: never half there.
        for key in late {
            let value = try cache.value(forKey: key)
            #expect(value == bytes(key) || (value == nil && removedKeys.contains(key)))
        }
        #expect(DiskAudit.indexMismatches(cache).isEmpty)
        #expect(recordFiles(in: temporary.url).count == cache.count)
    }

    @Test func theAsyncFormRemovesToo() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try DiskCache(options: testOptions(temporary.url))
        for key in ["a/1", "a/2", "b/1"] { try await cache.store(bytes(key), forKey: key) }
        #expect(try await cache.remove(withPrefix: "a/") == ["a/1", "a/2"])
        #expect(cache.count == 1)
    }

    @Test func theCallbackFormReportsOnTheQueueGiven() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try DiskCache(options: testOptions(temporary.url))
        for key in ["a/1", "b/1"] { try cache.store(bytes(key), forKey: key) }
        let marked = MarkedQueue("larder.test.prefix")
        let response = awaitCallback { completion in cache.remove(withPrefix: "b/", queue: marked.queue, completion: completion) }
        #expect(response.response.value == ["b/1"] && response.queue == marked.name)
        #expect(cache.count == 1)
    }
}
