import Foundation
import LarderTestSupport
import Testing

@testable import Larder

// SPTPersistentCache's `Tests/SPTPersistentCacheRecordTests.m` and
// `Tests/SPTPersistentCacheResponseTests.m` (upstream 1.2.0), test by test. SPT's record and
// response are classes built by a designated initializer and described as
// `<Class: 0x…; key = "value">`; Larder's are value types (`CacheRecord`, `CacheResponse`)
// described in Swift's style: the type's name, then each stored property by its label, in
// declaration order (`String(describing:)`), or the module-qualified type
// (`String(reflecting:)`). The descriptions are listed with the options' among the plumbing
// tests of the migration guide.
@Suite("SPTPersistentCacheRecordTests") struct SPTPersistentCacheRecordTests {
    static let data = Data("TestData".utf8)  // SPTPersistentCacheRecordTestDataString
    static let key = "TestKey"  // SPTPersistentCacheRecordTestKey
    static let refCount = 10  // SPTPersistentCacheRecordTestRefCount
    static let ttl: TimeInterval = 16  // SPTPersistentCacheRecordTestTTL

    static let record = CacheRecord(
        key: key, data: data, expiry: .seconds(ttl), lockCount: refCount, updateTime: 1488, lastAccessTime: 1488,
        expirationTime: nil)

    /// SPTPersistentCacheRecordTests.m:33. The record keeps what it was made with; and a record
    /// a load returns carries the stored key, payload, lock count (`refCount`) and ttl.
    @Test func testDesignatedInitializer() throws {
        #expect(Self.record.data == Self.data)
        #expect(Self.record.key == Self.key)
        #expect(Self.record.lockCount == Self.refCount)
        #expect(Self.record.expiry == .seconds(Self.ttl))

        let dir = TemporaryDirectory("spt-record")
        defer { dir.remove() }
        var options = DiskCacheOptions.spt(directory: dir.url)
        options.clock = ManualClock(now: 1488)
        let cache = try DiskCache(options: options)
        defer { cache.close() }
        try cache.store(Self.data, forKey: Self.key, expiry: .seconds(Self.ttl), locked: true)
        let loaded = try #require(try cache.record(forKey: Self.key))
        #expect(loaded.data == Self.data && loaded.key == Self.key && loaded.lockCount == 1 && loaded.expiry == .seconds(Self.ttl))
    }

    /// SPTPersistentCacheRecordTests.m:43. Swift's style: the type's name and its labelled fields.
    @Test func testDescriptionAdheresToStyle() {
        let description = String(describing: Self.record)
        #expect(description.hasPrefix("CacheRecord(key: \"TestKey\", data: "))
        #expect(description.hasSuffix(")"))
    }

    /// SPTPersistentCacheRecordTests.m:52
    @Test func testDescriptionContainsClassName() {
        #expect(String(describing: Self.record).contains("CacheRecord"))
    }

    /// SPTPersistentCacheRecordTests.m:60. The debug description is the module-qualified type
    /// with the same labelled fields.
    @Test func testDebugDescriptionAdheresToStyle() {
        let description = String(reflecting: Self.record)
        #expect(description.hasPrefix("Larder.CacheRecord(key: \"TestKey\", data: "))
        #expect(description.hasSuffix(")"))
    }

    /// SPTPersistentCacheRecordTests.m:69
    @Test func testDebugDescriptionContainsClassName() {
        #expect(String(reflecting: Self.record).contains("CacheRecord"))
    }
}

@Suite("SPTPersistentCacheResponseTests") struct SPTPersistentCacheResponseTests {
    /// `testError`: SPT's `NSError` with code 404; here the `CacheError` a failed call delivers.
    static let error = CacheError(.ioFailure, "test", key: "TestKey", errno: 5)

    /// SPTPersistentCacheResponseTests.m:37. SPT's response holds a result code, an error and a
    /// record; Larder's holds a record (`.success`), nothing (`.notFound`) or an error
    /// (`.failure`), and gives each back.
    @Test func testDesignatedInitializer() async throws {
        let record = SPTPersistentCacheRecordTests.record
        let succeeded = CacheResponse<CacheRecord>.success(record)
        #expect(succeeded.value == record && succeeded.error == nil)
        let failed = CacheResponse<CacheRecord>.failure(Self.error)
        #expect(failed.value == nil && failed.error?.code == .ioFailure && failed.error?.errno == 5)
        let missing = CacheResponse<CacheRecord>.notFound
        #expect(missing.value == nil && missing.error == nil)

        // A call delivers the response its synchronous twin's outcome makes.
        let dir = TemporaryDirectory("spt-response")
        defer { dir.remove() }
        let cache = try DiskCache(options: .spt(directory: dir.url))
        defer { cache.close() }
        guard case .notFound = await callback({ cache.record(forKey: "absent", queue: $0, completion: $1) }) else {
            Issue.record("expected NotFound")
            return
        }
        let bad = await callback { cache.record(forKey: "", queue: $0, completion: $1) }
        #expect(bad.error?.code == .invalidKey)
    }

    /// SPTPersistentCacheResponseTests.m:46. A case is described by its name, with its payload.
    @Test func testDescriptionAdheresToStyle() {
        #expect(String(describing: CacheResponse<Int>.notFound) == "notFound")
        #expect(String(describing: CacheResponse<Int>.success(7)) == "success(7)")
    }

    /// SPTPersistentCacheResponseTests.m:55. Difference: Swift describes an enum's case, not its
    /// type; the type's name is in the debug description.
    @Test func testDescriptionContainsClassName() {
        #expect(!String(describing: CacheResponse<Int>.notFound).contains("CacheResponse"))
        #expect(String(reflecting: CacheResponse<Int>.notFound).contains("CacheResponse"))
    }

    /// SPTPersistentCacheResponseTests.m:63
    @Test func testDebugDescriptionContainsClassName() {
        #expect(String(reflecting: CacheResponse<Int>.success(1)).contains("CacheResponse"))
    }

    /// SPTPersistentCacheResponseTests.m:71. Every outcome is described differently.
    @Test func testStringFromResponseCodeUniqueness() {
        let all: [CacheResponse<Int>] = [.success(0), .notFound, .failure(Self.error)]
        let names = all.map { String(describing: $0) }
        #expect(Set(names).count == all.count)
    }
}
