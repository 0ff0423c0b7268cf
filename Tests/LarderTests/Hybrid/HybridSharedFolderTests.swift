import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// Several `HybridCache`s whose disk tiers share one folder (`sharesFolderWithWriters`), each
/// with its own memory tier: what one changes is a hit, a miss or a lock in the other at its
/// next operation on that key, memory hits included. Each cache has its own open of the lock
/// files, so they exclude one another as other processes' caches would.
@Suite struct HybridSharedFolderTests {
    static func open(_ dir: TemporaryDirectory, clock: ManualClock) throws -> HybridCache {
        var options = hybridOptions(dir.url, clock: clock)
        options.disk.sharesFolderWithWriters = true
        return try HybridCache(options: options)
    }

    /// Two hybrids on a new folder with one manual clock (``withTwoSharingCaches(_:openA:openB:close:_:)``).
    static func withTwoHybrids(_ name: String, _ body: (ManualClock, HybridCache, HybridCache) throws -> Void) throws {
        try withTwoSharingCaches(
            name, openA: { dir, clock in try open(dir, clock: clock) }, openB: { dir, clock in try open(dir, clock: clock) },
            close: { $0.close() }, { _, clock, a, b throws in try body(clock, a, b) })
    }

    @Test func anotherWritersReplacementAndRemovalReachAMemoryCopy() throws {
        try Self.withTwoHybrids("larder-hybrid-shared") { _, a, b throws in
            try a.store(bytes("one"), forKey: "x")
            #expect(try b.value(forKey: "x") == bytes("one"))
            #expect(b.memory.peek("x")?.value == bytes("one"))
            try a.store(bytes("two"), forKey: "x")
            // B's memory held "one": its next read replays A's store and drops that copy.
            #expect(try b.value(forKey: "x") == bytes("two"))
            #expect(try b.value(forKey: "x", from: .memory) == bytes("two"))
            #expect(try a.remove(forKey: "x"))
            #expect(try b.value(forKey: "x", from: .memory) == nil)
            #expect(try b.value(forKey: "x") == nil)
            #expect(!b.contains("x"))
            // A memory-only look sees the change too.
            try a.store(bytes("three"), forKey: "y")
            #expect(try b.value(forKey: "y") == bytes("three"))
            try a.store(bytes("four"), forKey: "y")
            #expect(try b.value(forKey: "y", from: .memory) == nil)
        }
    }

    @Test func anotherWritersLockAndUnlockReachAMemoryCopy() throws {
        try Self.withTwoHybrids("larder-hybrid-shared") { clock, a, b throws in
            try a.store(bytes("kept"), forKey: "x", expiry: .seconds(60))
            #expect(try b.value(forKey: "x") == bytes("kept"))
            let unlockedDeadline = try #require(b.memory.peek("x")?.deadline)
            #expect(unlockedDeadline < .infinity)
            // A lock in A: B's copy, which held the record's expiry, goes; the next read holds it
            // without one, as the disk does.
            #expect(try a.lock(forKeys: ["x"]) == ["x"])
            #expect(try b.value(forKey: "x") == bytes("kept"))
            #expect(b.memory.peek("x")?.deadline == .infinity)
            // An unlock in A: B's copy, which held no expiry, goes, and the record expires in B
            // when it does on disk.
            #expect(try a.unlock(forKeys: ["x"]) == ["x"])
            clock.advance(by: 120)
            #expect(try b.value(forKey: "x") == nil)
            #expect(try b.value(forKey: "x", from: .memory) == nil)
        }
    }

    @Test func aTypedViewAndAnAsyncReadSeeAnotherWritersChange() async throws {
        let dir = TemporaryDirectory("larder-hybrid-shared")
        defer { dir.remove() }
        let clock = ManualClock(now: 1_700_000_000)
        let a = try Self.open(dir, clock: clock)
        let b = try Self.open(dir, clock: clock)
        defer {
            a.close()
            b.close()
        }
        let typedA = try a.typed(Profile.self)
        let typedB = try b.typed(Profile.self)
        try await typedA.store(Profile(name: "ann", age: 30, tags: []), forKey: "me")
        #expect(try await typedB.value(forKey: "me")?.age == 30)
        #expect(typedB.memory.peek("me")?.value.age == 30)
        try await typedA.store(Profile(name: "ann", age: 31, tags: []), forKey: "me")
        #expect(try await typedB.value(forKey: "me")?.age == 31)
        try await a.store(bytes("raw"), forKey: "r")
        #expect(try await b.value(forKey: "r") == bytes("raw"))
        try await a.remove(forKey: "r")
        #expect(try await b.value(forKey: "r") == nil)
    }

    @Test func aLocalStoreAfterTheReplayKeepsItsMemoryCopy() throws {
        try Self.withTwoHybrids("larder-hybrid-shared") { _, a, b throws in
            try b.store(bytes("b1"), forKey: "x")
            try a.store(bytes("a1"), forKey: "x")
            // B's store replays A's first, then is the later one: its copy stays in memory.
            try b.store(bytes("b2"), forKey: "x")
            #expect(b.memory.peek("x")?.value == bytes("b2"))
            #expect(try b.value(forKey: "x") == bytes("b2"))
            #expect(try a.value(forKey: "x") == bytes("b2"))
        }
    }

    @Test func anotherWritersRemovalOfEverythingEmptiesMemory() throws {
        try Self.withTwoHybrids("larder-hybrid-shared") { _, a, b throws in
            for key in ["k1", "k2", "k3"] { try a.store(bytes(key), forKey: key) }
            for key in ["k1", "k2", "k3"] { #expect(try b.value(forKey: key) == bytes(key)) }
            try a.removeAll()
            for key in ["k1", "k2", "k3"] { #expect(try b.value(forKey: key, from: .memory) == nil) }
            #expect(try b.keys().isEmpty)
        }
    }

    /// Two hybrids on one folder, driven at random from a seeded generator, checked against a
    /// model dictionary after every step: every read, from either cache, through every tier or
    /// memory alone, returns the model's value (memory alone: it or nothing).
    @Test(arguments: [1, 2, 3] as [UInt64])
    func twoHybridsAgreeWithAModel(seed: UInt64) throws {
        try Self.withTwoHybrids("larder-hybrid-shared") { _, a, b throws in
            var random = SplitMix64(seed: seed)
            let keys = (0 ..< 8).map { "\($0.isMultiple(of: 2) ? "a" : "b")/\($0)" }
            var model: [String: Data] = [:]
            var locks: [String: Int] = [:]
            var version = 0
            for step in 0 ..< 600 {
                let cache = random.next() % 2 == 0 ? a : b
                let key = keys[Int(random.next() % UInt64(keys.count))]
                switch random.next() % 100 {
                case 0 ..< 30:
                    version += 1
                    let data = bytes("\(key)=\(version)")
                    try cache.store(data, forKey: key)
                    model[key] = data
                    locks[key] = nil
                case 30 ..< 40:
                    #expect(try cache.remove(forKey: key) == (model[key] != nil), "step \(step)")
                    model[key] = nil
                    locks[key] = nil
                case 40 ..< 45:
                    let locked = try cache.lock(forKeys: [key])
                    #expect(locked == (model[key] != nil ? [key] : []), "step \(step)")
                    if model[key] != nil { locks[key, default: 0] += 1 }
                case 45 ..< 50:
                    let unlocked = try cache.unlock(forKeys: [key])
                    #expect(unlocked == ((locks[key] ?? 0) > 0 ? [key] : []), "step \(step)")
                    if let count = locks[key], count > 0 { locks[key] = count - 1 }
                case 50 ..< 51:
                    try cache.removeAll()
                    model = [:]
                    locks = [:]
                case 51 ..< 53:
                    let prefix = random.next() % 2 == 0 ? "a/" : "b/"
                    let removed = try cache.remove(withPrefix: prefix)
                    let expected = model.keys.filter { $0.hasPrefix(prefix) }
                    #expect(Set(removed) == Set(expected), "step \(step): remove(withPrefix: \(prefix))")
                    for key in expected {
                        model[key] = nil
                        locks[key] = nil
                    }
                case 53 ..< 60:
                    let held = try cache.value(forKey: key, from: .memory)
                    #expect(held == nil || held == model[key], "step \(step): \(key) from memory")
                default:
                    #expect(try cache.value(forKey: key) == model[key], "step \(step): \(key)")
                }
            }
            for key in keys {
                #expect(try a.value(forKey: key) == model[key], "a: \(key) at the end")
                #expect(try b.value(forKey: key) == model[key], "b: \(key) at the end")
                #expect((try a.disk.record(forKey: key)?.lockCount ?? 0) == (locks[key] ?? 0), "a: \(key)'s locks")
            }
        }
    }
}
