import Foundation
import Testing
@testable import Larder

/// Several `DiskCache` writers open on one folder at once, each with its own index, kept in step
/// through the folder's change log (`sharesFolderWithWriters`). Each cache has its own open of
/// the lock files, so their `flock`s exclude one another as other processes' would.
@Suite struct SharedFolderCacheTests {
    /// A sharing writer on `dir` (verbatim keys), making its system calls through `systemCalls`,
    /// with `configure` applied last to its options.
    static func open(
        _ dir: TemporaryDirectory, sizeLimit: Int = 0, clock: ManualClock, systemCalls: SystemCalls = .live,
        configure: (inout DiskCacheOptions) -> Void = { _ in }
    ) throws -> DiskCache {
        var options = testOptions(dir.url, clock: clock, encoding: .verbatim)
        options.sharesFolderWithWriters = true
        options.sizeLimit = sizeLimit
        configure(&options)
        return try DiskCache(options: options, systemCalls: systemCalls)
    }

    /// Two sharing writers on a new folder with one manual clock (``withTwoSharingCaches(_:openA:openB:close:_:)``):
    /// A makes its system calls through `systemCallsOfA`, with `configureA` applied to its options;
    /// B is a plain one.
    static func withTwoWriters(
        _ name: String, systemCallsOfA: SystemCalls = .live, configureA: (inout DiskCacheOptions) -> Void = { _ in },
        _ body: (TemporaryDirectory, ManualClock, DiskCache, DiskCache) throws -> Void
    ) throws {
        try withTwoSharingCaches(
            name, openA: { dir, clock in try open(dir, clock: clock, systemCalls: systemCallsOfA, configure: configureA) },
            openB: { dir, clock in try open(dir, clock: clock) }, close: { $0.close() }, body)
    }

    /// The bytes each key's record holds in the model.
    static func payload(_ key: String, _ version: Int) -> Data { Data("\(key)=\(version)".utf8) }

    @Test func writersShareAFolderWithoutRefusalWhileAWriterAloneIsStillRefused() throws {
        let dir = TemporaryDirectory("larder-shared")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let a = try Self.open(dir, clock: clock)
        let b = try Self.open(dir, clock: clock)
        // A writer that holds the folder alone is refused while sharing writers are present...
        #expect(throws: CacheError.self) { _ = try DiskCache(options: testOptions(dir.url, clock: clock, encoding: .verbatim)) }
        a.close()
        b.close()
        // ...and, once they are gone, keeps sharing writers out.
        let alone = try DiskCache(options: testOptions(dir.url, clock: clock, encoding: .verbatim))
        #expect(throws: CacheError.self) { _ = try Self.open(dir, clock: clock) }
        alone.close()
    }

    @Test func aChangeInOneWriterIsSeenByTheOtherAtItsNextOperation() throws {
        try Self.withTwoWriters("larder-shared") { _, _, a, b throws in
            // B's index knows every key: its miss of "x" comes from the index unless it replays A's store.
            #expect(try b.value(forKey: "x") == nil)
            try a.store(Data("one".utf8), forKey: "x")
            #expect(try b.value(forKey: "x") == Data("one".utf8))
            #expect(try b.keys() == ["x"])
            try a.store(Data("two".utf8), forKey: "x")
            #expect(try b.value(forKey: "x") == Data("two".utf8))
            #expect(try a.lock(forKeys: ["x"]) == ["x"])
            #expect(try b.record(forKey: "x")?.lockCount == 1)
            #expect(b.lockedSize == a.lockedSize && b.lockedSize > 0)
            #expect(try b.unlock(forKeys: ["x"]) == ["x"])
            #expect(a.lockedSize == 0)
            #expect(try a.remove(forKey: "x"))
            #expect(try b.value(forKey: "x") == nil)
            #expect(!b.contains("x"))
            #expect(b.count == 0 && b.totalSize == 0)
        }
    }

    /// Random stores, removals, locks, reads and collections spread over the writers, compared
    /// step by step with what the folder must hold: every read in any writer answers the latest
    /// change made in any, and every writer's totals and listing are the folder's.
    @Test(arguments: [2, 4] as [Int], [1, 2] as [UInt64])
    func writersAgreeWithTheFolderAfterEveryChange(writers count: Int, seed: UInt64) throws {
        let dir = TemporaryDirectory("larder-shared")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let caches = try (0 ..< count).map { _ in try Self.open(dir, clock: clock) }
        defer { for cache in caches { cache.close() } }
        var random = SplitMix64(seed: seed)
        var model: [String: (version: Int, locks: Int)] = [:]
        let keys = (0 ..< 16).map { "k\($0)" }
        for step in 0 ..< 400 {
            let cache = caches[Int.random(in: 0 ..< count, using: &random)]
            let key = keys.randomElement(using: &random)!
            switch Int.random(in: 0 ..< 100, using: &random) {
            case 0 ..< 40:
                try cache.store(Self.payload(key, step), forKey: key)
                model[key] = (step, 0)
            case 40 ..< 55:
                #expect(try cache.remove(forKey: key) == (model[key] != nil), "step \(step)")
                model[key] = nil
            case 55 ..< 65:
                #expect(try cache.lock(forKeys: [key]) == (model[key] != nil ? [key] : []), "step \(step)")
                model[key]?.locks += 1
            case 65 ..< 70:
                let unlocks = model[key].map { $0.locks > 0 } ?? false
                #expect(try cache.unlock(forKeys: [key]) == (unlocks ? [key] : []), "step \(step)")
                if unlocks { model[key]?.locks -= 1 }
            case 70 ..< 72:
                _ = try cache.collectGarbage()
            default:
                break
            }
            // Any writer reads what the folder holds.
            let reader = caches[Int.random(in: 0 ..< count, using: &random)]
            let probe = keys.randomElement(using: &random)!
            let record = try reader.record(forKey: probe)
            #expect(record?.data == model[probe].map { Self.payload(probe, $0.version) }, "step \(step) key \(probe)")
            #expect(record.map { $0.lockCount } == model[probe].map { $0.locks }, "step \(step) key \(probe)")
        }
        let files = recordFiles(in: dir.url)
        for (i, cache) in caches.enumerated() {
            #expect(try Set(cache.keys()) == Set(model.keys), "writer \(i)")
            #expect(cache.count == model.count, "writer \(i)")
            #expect(cache.count == files.count, "writer \(i)")
            #expect(cache.totalSize == caches[0].totalSize, "writer \(i)")
            #expect(cache.lockedSize == caches[0].lockedSize, "writer \(i)")
        }
    }

    @Test func aSizeLimitHoldsForTheFolderAsAWhole() throws {
        let dir = TemporaryDirectory("larder-shared")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let limit = 64 << 10
        let a = try Self.open(dir, sizeLimit: limit, clock: clock)
        let b = try Self.open(dir, sizeLimit: limit, clock: clock)
        defer {
            a.close()
            b.close()
        }
        let payload = Data(repeating: 7, count: 3000)
        for i in 0 ..< 60 {
            // Each writer alone stays under the limit; together they are far over it.
            try (i.isMultiple(of: 2) ? a : b).store(payload, forKey: "k\(i)")
            clock.advance(by: 1)
        }
        for cache in [a, b] {
            #expect(cache.totalSize <= limit)
        }
        var onDisk = 0
        for file in recordFiles(in: dir.url) {
            let size = try FileManager.default.attributesOfItem(atPath: dir.url.appendingPathComponent(file).path)[.size] as? Int ?? 0
            onDisk += size
        }
        #expect(onDisk <= limit)
        #expect(a.count == b.count && a.count == recordFiles(in: dir.url).count)
        // The most recently stored records stay, whichever writer stored them.
        #expect(try a.value(forKey: "k59") == payload)
        #expect(try b.value(forKey: "k58") == payload)
    }
}
