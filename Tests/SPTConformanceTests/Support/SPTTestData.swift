import Foundation
import LarderTestSupport
import Testing

@testable import Larder

/// SPT's test data and constants (SPTPersistentCacheTests.m:30-95), and the helpers over them.
enum SPTTestData {
    /// `kImages`: the images' names, which are also their keys (SPTPersistentCacheTests.m:30).
    static let images = [
        "b91998ae68b9639cee6243df0886d69bdeb75854",
        "c3b19963fc076930dd36ce3968757704bbc97357",
        "fc22d4f65c1ba875f6bb5ba7d35a7fd12851ed5c",
        "c5aec3eef2478bfe47aef16787a6b4df31eb45f2",
        "ee678d23b8dba2997c52741e88fa7a1fdeaf2863",
        "f7501f27f70162a9a7da196c5d2ece3151a2d80a",
        "e5a1921f8f75d42412e08aff4da33e1132f7ee8a",
        "e5b8abdc091921d49e86687e28b74abb3139df70",
        "ee6b44ab07fa3937a6d37f449355b64c09677295",
        "f50512901688b79a7852999d384d097a71fad788",
        "eee9747e967c4440eb90bb812d148aa3d0056700",
        "f1eeb834607dcc2b01909bd740d4356f2abb4cd1",
        "b02c1be08c00bac5f4f1a62c6f353a24487bb024",
        "b3e04bf446b486412a13659af71e3a333c6152f4",
        "b53aed36cdc67dd43b496db74843ac32fe1f64bb",
        "aad0e75ab0a6828d0a9b37a68198cc9d70d84850",
        "ab3d97d4d7b3df5417490aa726c5a49b9ee98038",
    ]

    /// `StoreParamsType`: how the image at the same index of the shuffled list is stored.
    struct StoreParams: Sendable {
        var ttl: UInt64
        var locked: Bool
        /// `corruptReason`: `nil` for -1, not corrupted.
        var corruption: SPTLoadingError?
    }

    static let ttl1: UInt64 = 7200  // kTTL1
    static let ttl2: UInt64 = 604_800  // kTTL2
    static let ttl3: UInt64 = 1495  // kTTL3
    static let ttl4: UInt64 = 86400  // kTTL4
    /// `kCorruptedFileSize`: the length a `NotEnoughDataToGetHeader` record is cut to.
    static let corruptedFileSize = 15
    /// `kTestEpochTime`: the time of setUp's stores, seconds since 1970.
    static let testEpochTime: Double = 1488
    /// `SPTPersistentCacheDefaultExpirationTimeSec`.
    static let defaultExpiration: TimeInterval = 600

    /// `kParams` (SPTPersistentCacheTests.m:69), without its end marker.
    static let params: [StoreParams] = [
        StoreParams(ttl: 0, locked: true),
        StoreParams(ttl: 0, locked: true),
        StoreParams(ttl: 0, locked: false),
        StoreParams(ttl: 0, locked: false),
        StoreParams(ttl: ttl1, locked: true),
        StoreParams(ttl: ttl2, locked: true),
        StoreParams(ttl: ttl3, locked: false),
        StoreParams(ttl: ttl4, locked: false),
        StoreParams(ttl: 0, locked: false),
        StoreParams(ttl: 0, locked: false),
        StoreParams(ttl: 0, locked: false),
        StoreParams(ttl: 0, locked: false),
        StoreParams(ttl: 0, locked: false, corruption: .magicMismatch),
        StoreParams(ttl: 0, locked: false, corruption: .wrongHeaderSize),
        StoreParams(ttl: 0, locked: false, corruption: .wrongPayloadSize),
        StoreParams(ttl: 0, locked: false, corruption: .invalidHeaderCRC),
        StoreParams(ttl: 0, locked: false, corruption: .notEnoughDataToGetHeader),
    ]

    /// `params_GetFilesNumber(locked)`: uncorrupted records with that lock state.
    static func filesNumber(locked: Bool) -> Int { params.count { $0.corruption == nil && $0.locked == locked } }
    /// `params_GetCorruptedFilesNumber()`.
    static var corruptedFilesNumber: Int { params.count { $0.corruption != nil } }
    /// The corrupted files left without the record magic: to Larder no records but foreign
    /// files, which it never removes (``larderReason(for:)`` is `nil`).
    static var foreignFilesNumber: Int { params.count { $0.corruption.map { larderReason(for: $0) == nil } ?? false } }
    /// `params_GetDefaultExpireFilesNumber()`: uncorrupted, unlocked records with ttl 0.
    static var defaultExpireFilesNumber: Int { params.count { $0.ttl == 0 && $0.corruption == nil && !$0.locked } }

    /// The seed of the shuffle and of the corruptions: `LARDER_SPT_SEED`, else the first of the
    /// "failed seeds" SPT's tests keep (SPTPersistentCacheTests.m:158).
    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["LARDER_SPT_SEED"].flatMap { UInt64($0) } ?? 1_417_002_282
    }

    /// What SPT's tests read from `[NSDate timeIntervalSinceReferenceDate]` for "no expiration"
    /// (SPTPersistentCacheTests.m:254), fixed so that runs repeat, with a fraction above a half
    /// so that SPT's `llrint` (SPTPersistentCache.m:249) rounds it up where rounding down would not.
    static let referenceTime: Double = 786_297_600.6

    /// The bytes of an image (`[self.thisBundle pathForResource:name ofType:@"dat"]`).
    static func imageData(_ name: String) throws -> Data {
        try Data(contentsOf: Fixtures.root.appendingPathComponent("spt-images/\(name).dat"))
    }

    /// The ``CorruptionReason`` Larder reports for SPT's error code; `nil` where the file is left
    /// without the record magic (MagicMismatch, and NotEnoughDataToGetHeader's zeroed bytes), which
    /// to Larder is no record but a foreign file: a miss, never reported or removed.
    static func larderReason(for error: SPTLoadingError) -> CorruptionReason? {
        switch error {
        case .magicMismatch: nil
        case .wrongHeaderSize: .badHeaderSize
        case .wrongPayloadSize: .badPayloadSize
        case .invalidHeaderCRC: .badHeaderChecksum
        case .notEnoughDataToGetHeader: nil
        }
    }
}

/// What SPTPersistentCacheTests' `setUp` leaves (SPTPersistentCacheTests.m:172-234): the 17
/// images stored in a folder through the callback API at `kTestEpochTime`, shuffled, with
/// `kParams`' ttls and locks, then five of them corrupted in place.
///
/// SPT's setUp keeps its cache open (`self.cache`), and each test opens another one on the same
/// folder with `createCacheWithTimeCallback:expirationTime:`. Larder allows one writer per folder,
/// so setUp's cache is closed before the corruption, and each test opens its own with
/// ``makeCache(clock:expiration:events:systemCalls:configure:)``; `self.cache` is the one opened at
/// `kTestEpochTime` with SPT's default expiration.
struct SPTImageFolder: Sendable {
    let directory: TemporaryDirectory
    /// `self.imageNames`: `kImages`, shuffled; `imageNames[i]` is stored with `kParams[i]`.
    let imageNames: [String]

    var path: String { directory.path }

    static func make(seed: UInt64 = SPTTestData.seed) async throws -> SPTImageFolder {
        var random = SplitMix64(seed: seed)
        var names = SPTTestData.images
        // setUp's Fisher-Yates shuffle, on a seeded generator instead of arc4random.
        for old in 0 ..< names.count - 1 {
            names.swapAt(old, old + random.below(names.count - old))
        }
        let folder = SPTImageFolder(directory: TemporaryDirectory("spt-conformance"), imageNames: names)
        let cache = try folder.makeCache(clock: ManualClock(now: SPTTestData.testEpochTime))
        await withTaskGroup(of: Void.self) { group in
            for (i, name) in names.enumerated() {
                group.addTask {
                    let data = try! SPTTestData.imageData(name)
                    // "Image is invalid": every image is a PNG.
                    #expect(data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
                    let response = await callback { queue, completion in
                        cache.store(
                            data, forKey: name,
                            expiry: SPTTestData.params[i].ttl == 0 ? .default : .seconds(Double(SPTTestData.params[i].ttl)),
                            locked: SPTTestData.params[i].locked, queue: queue, completion: completion)
                    }
                    // putFile's callback: a store succeeds, with neither record nor error.
                    #expect(response.value != nil && response.error == nil)
                }
            }
        }
        cache.close()
        for (i, name) in names.enumerated() {
            if let error = SPTTestData.params[i].corruption {
                try corrupt(filePath: folder.path(forKey: name), error: error, random: &random)
            }
        }
        return folder
    }

    /// `createCacheWithTimeCallback:expirationTime:` (SPTPersistentCacheTests.m:1943): the SPT
    /// preset on this folder, named "Test", with `clock` for the time callback.
    func makeCache(
        clock: ManualClock, expiration: TimeInterval = SPTTestData.defaultExpiration, events: EventLog? = nil,
        systemCalls: SystemCalls = .live, configure: (inout DiskCacheOptions) -> Void = { _ in }
    ) throws -> DiskCache {
        var options = DiskCacheOptions.spt(directory: directory.url)
        options.name = "Test"
        options.defaultExpiration = expiration
        options.clock = clock
        options.eventHandler = events?.handler
        configure(&options)
        return try DiskCache(options: options, systemCalls: systemCalls)
    }

    /// `[fileManager pathForKey:key]`.
    func path(forKey key: String) -> String { SPTPaths.path(root: path, key: key) }

    /// `kParams[i]` of the image stored under `key`.
    func params(forKey key: String) -> SPTTestData.StoreParams { SPTTestData.params[imageNames.firstIndex(of: key)!] }

    func remove() { directory.remove() }

    /// `corruptFile:pdcError:` (SPTPersistentCacheTests.m:1848), byte for byte.
    static func corrupt(filePath: String, error: SPTLoadingError, random: inout SplitMix64) throws {
        if error == .notEnoughDataToGetHeader {
            // O_TRUNC, then the first kCorruptedFileSize bytes of a zeroed header.
            try Data(count: SPTTestData.corruptedFileSize).write(to: URL(fileURLWithPath: filePath))
            return
        }
        var header = try #require(SPTHeader.read(atPath: filePath))
        switch error {
        case .magicMismatch:
            header.magic = 0xFFFF_5454
        case .wrongHeaderSize:
            header.headerSize = UInt32(SPTHeader.size) + 1 + UInt32(random.below(106))
            header.crc = header.calculatedCRC
        case .wrongPayloadSize:
            // payloadSizeBytes += 1 + (arc4random_uniform(size) - (size - 1) / 2), in unsigned
            // arithmetic; a draw that would leave the size unchanged is drawn again.
            let size = header.payloadSizeBytes
            var delta: UInt64 = 0
            while delta == 0 { delta = 1 &+ (UInt64(random.below(Int(size))) &- (size - 1) / 2) }
            header.payloadSizeBytes &+= delta
            header.crc = header.calculatedCRC
        case .invalidHeaderCRC:
            header.crc &+= 5
        case .notEnoughDataToGetHeader:
            break
        }
        try header.write(toFileAtPath: filePath)
    }
}

/// The SPT tests' classification of load responses: succeeded, not found, error.
struct LoadTally {
    var succeeded: [Int] = []
    var notFound: [Int] = []
    var failed: [Int] = []

    init(_ responses: [CacheResponse<CacheRecord>]) {
        for (i, response) in responses.enumerated() {
            switch response {
            case .success: succeeded.append(i)
            case .notFound: notFound.append(i)
            case .failure: failed.append(i)
            }
        }
    }
}

extension SPTImageFolder {
    /// Loads every image through the callback API, concurrently, as SPT's tests do.
    func loadAll(_ cache: DiskCache) async -> [CacheResponse<CacheRecord>] {
        await withTaskGroup(of: (Int, CacheResponse<CacheRecord>).self) { group in
            for (i, key) in imageNames.enumerated() {
                group.addTask { (i, await callback { cache.record(forKey: key, queue: $0, completion: $1) }) }
            }
            var responses = [CacheResponse<CacheRecord>](repeating: .notFound, count: imageNames.count)
            for await (i, response) in group { responses[i] = response }
            return responses
        }
    }

    /// SPT's checks of a successful load of image `i`: a valid image, no error, the lock state,
    /// ttl and key it was stored with (here compared with `locked`, since some tests flip it).
    func checkRecord(_ response: CacheResponse<CacheRecord>, index i: Int, locked: Bool? = nil) throws {
        let record = try #require(response.value)
        #expect(response.error == nil)
        #expect(record.data == (try SPTTestData.imageData(imageNames[i])))
        #expect(record.isLocked == (locked ?? SPTTestData.params[i].locked), "Same files must be locked")
        let ttl = SPTTestData.params[i].ttl
        #expect(record.expiry == (ttl == 0 ? .default : .seconds(Double(ttl))), "Same files must have same TTL")
        #expect(record.key == imageNames[i], "Same files must have same key")
    }

    /// The indexes of the images planted corrupt.
    var corruptedIndexes: [Int] { SPTTestData.params.indices.filter { SPTTestData.params[$0].corruption != nil } }
}
