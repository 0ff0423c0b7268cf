import Foundation
import Testing
@testable import Larder

/// Keys that Swift's `==` calls equal (canonically equivalent: "café" composed and decomposed)
/// but whose bytes differ are two keys on disk: two file names, two records, as SPTPersistentCache
/// and the file system see them. No part of the disk tier (the index, the kept descriptors, the
/// snapshot, the header scan) may mistake one for the other.
@Suite struct CanonicallyEqualKeyTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    @Test(arguments: [KeyEncoding.verbatim, .sha256])
    func composedAndDecomposedKeysAreTwoRecords(encoding: KeyEncoding) throws {
        // The premise: Swift calls them equal, their bytes differ.
        #expect(Self.composed == Self.decomposed)
        #expect(Array(Self.composed.utf8) != Array(Self.decomposed.utf8))
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let options = testOptions(dir.url, encoding: encoding)

        func check(_ cache: DiskCache) throws {
            #expect(cache.count == 2)
            // Read each more than once: a kept descriptor must serve its own file only (the
            // payloads have one length, so that a length check cannot tell them apart).
            for _ in 0 ..< 3 {
                #expect(try cache.value(forKey: Self.composed) == bytes("composed-1"))
                #expect(try cache.value(forKey: Self.decomposed) == bytes("decompos-2"))
            }
            let keys = try cache.keys().map { Array($0.utf8) }
            #expect(keys.count == 2)
            #expect(keys.contains(Array(Self.composed.utf8)) && keys.contains(Array(Self.decomposed.utf8)))
        }

        let cache = try DiskCache(options: options)
        try cache.store(bytes("composed-1"), forKey: Self.composed)
        try cache.store(bytes("decompos-2"), forKey: Self.decomposed)
        try check(cache)
        cache.close()

        // From the snapshot the close wrote, then from the headers alone.
        let fromSnapshot = try DiskCache(options: options)
        fromSnapshot.waitForIndex()
        try check(fromSnapshot)
        fromSnapshot.close()
        #expect(FileManager.default.fileExists(atPath: dir.url.appendingPathComponent(DiskLayout.snapshotName).path))
        try FileManager.default.removeItem(at: dir.url.appendingPathComponent(DiskLayout.snapshotName))
        let fromHeaders = try DiskCache(options: options)
        fromHeaders.waitForIndex()
        try check(fromHeaders)

        // Removing one leaves the other.
        #expect(try fromHeaders.remove(forKey: Self.decomposed))
        #expect(try fromHeaders.value(forKey: Self.composed) == bytes("composed-1"))
        #expect(try fromHeaders.value(forKey: Self.decomposed) == nil)
        #expect(fromHeaders.count == 1)
        fromHeaders.close()
    }
}
