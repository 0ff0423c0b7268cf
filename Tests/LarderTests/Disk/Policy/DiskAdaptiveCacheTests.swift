import Foundation
import LarderTestSupport
import Testing
@testable import Larder

/// A ``DiskAdaptivePolicy`` driven as the disk index drives it, by key: what the disk tier under
/// ``DiskEvictionPolicy/adaptive`` must evict, step by step.
struct AdaptivePolicyMirror {
    var policy: DiskAdaptivePolicy
    var ids: [String: Int32] = [:]
    var keys: [Int32: String] = [:]
    var nextID: Int32 = 0

    init(capacity: Int) {
        policy = DiskAdaptivePolicy(capacity: capacity)
    }

    /// The index's hash of a verbatim name (FNV-1a over its bytes).
    static func hash(_ name: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return hash
    }

    /// A store of a key it does not hold: the keys evicted, the key itself last when refused.
    mutating func insert(_ key: String, size: Int) -> [String] {
        let id = nextID
        nextID += 1
        ids[key] = id
        keys[id] = key
        var victims: [String] = []
        let keys = keys
        let kept = policy.insert(
            id, size: size, hash: Self.hash(key), hashOf: { Self.hash(keys[$0]!) }, evicting: { victims.append(keys[$0]!) })
        if !kept { victims.append(key) }
        for victim in victims { ids[victim] = nil }
        return victims
    }

    /// The policy's state, each record named by its id.
    func storedPolicy() -> StoredPolicy {
        policy.stored(position: { UInt32($0) }, hash: { Self.hash(keys[$0]!) })
    }

    mutating func access(_ key: String) {
        if let id = ids[key] { policy.access(id, hash: Self.hash(key)) }
    }
}

/// The disk tier under ``DiskEvictionPolicy/adaptive``: the policy object's decisions, the
/// disk tier's rules around them (limits, locks, expiry), and a reopen.
@Suite struct DiskAdaptiveCacheTests {
    static func options(_ directory: URL, clock: ManualClock, sizeLimit: Int) -> DiskCacheOptions {
        var options = testOptions(directory, clock: clock, encoding: .verbatim)
        options.policy = .adaptive
        options.sizeLimit = sizeLimit
        options.defaultExpiration = 1_000_000
        return options
    }

    /// A record's bytes on disk: the header and the payload, in whole blocks. Under the verbatim
    /// encoding these tests use, the key is the file's name and the record does not carry it.
    static func diskSize(payload: Int, block: Int) -> Int {
        let fileSize = 64 + payload
        return (fileSize + block - 1) / block * block
    }

    static func evictedKeys(_ events: [CacheEvent]) -> [String] {
        events.compactMap { event in
            if case .recordEvicted(let key, _, _) = event { return key } else { return nil }
        }
    }

    /// Drives `cache` and `mirror` with the same seeded stores of new keys and loads of held
    /// ones, checking after each step that the cache evicted exactly the keys the policy object
    /// did and holds exactly what it holds.
    static func replay(
        _ cache: DiskCache, _ mirror: inout AdaptivePolicyMirror, events: EventLog, seed: UInt64, steps: Int, keyOffset: Int
    ) throws {
        var random = SplitMix64(seed: seed)
        let block = cache.blockSize
        var nextKey = keyOffset
        for step in 0 ..< steps {
            let held = mirror.ids.keys.sorted()
            if random.below(2) == 0, !held.isEmpty {
                // Skewed towards the first keys, so that frequencies differ.
                let key = held[min(random.below(held.count), random.below(held.count))]
                #expect(try cache.value(forKey: key) != nil, "step \(step): \(key) should be held")
                mirror.access(key)
                #expect(evictedKeys(events.drain()).isEmpty)
            } else {
                let key = "k\(nextKey)"
                nextKey += 1
                let payload = random.below(8) == 0 ? 3 * block + random.below(4 * block) : random.below(block)
                try cache.store(Data(repeating: 7, count: payload), forKey: key)
                let expected = mirror.insert(key, size: diskSize(payload: payload, block: block))
                #expect(Set(evictedKeys(events.drain())) == Set(expected), "step \(step)")
            }
        }
        #expect(Set(try cache.keys(withPrefix: "")) == Set(mirror.ids.keys))
        cache.state.withLock { $0.index._checkInvariants() }
    }

    @Test(arguments: [1 as UInt64, 2, 3])
    func evictsWhatThePolicyObjectEvicts(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let events = EventLog()
        var options = Self.options(dir.url, clock: ManualClock(now: 1_700_000_000), sizeLimit: 60 * 4096)
        options.eventHandler = events.handler
        let cache = try DiskCache(options: options)
        // The policy starts once the index is ready; stores before then reach it in recency order.
        cache.waitForIndex()
        var mirror = AdaptivePolicyMirror(capacity: options.sizeLimit)
        try Self.replay(cache, &mirror, events: events, seed: seed, steps: 1_500, keyOffset: 0)
        // The run evicted, and refused some newcomers (the policy's admission), not only LRU's victims.
        #expect(cache.statistics.evictions[.sizeLimit, default: 0] > 100)
    }

    @Test func theDefaultIsAdaptiveAndTheSPTPresetKeepsLRU() {
        let folder = URL(fileURLWithPath: "/tmp/unused", isDirectory: true)
        #expect(DiskEvictionPolicy.recommended == .adaptive)
        #expect(DiskCacheOptions(directory: folder).policy == .adaptive)
        #expect(HybridCacheOptions(directory: folder).disk.policy == .adaptive)
        #expect(DiskCacheOptions.spt(directory: folder).policy == .lru)
        #expect("\(DiskEvictionPolicy.lru) \(DiskEvictionPolicy.adaptive)" == "lru adaptive")
    }

    /// A store the policy does not admit succeeds, and its record is evicted before the store
    /// returns, counted and reported as any size-limit eviction; under LRU the same store evicts
    /// the least recently used record instead.
    @Test(arguments: [DiskEvictionPolicy.adaptive, .lru])
    func aRefusedStoreSucceedsAndIsEvictedAtOnce(policy: DiskEvictionPolicy) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let events = EventLog()
        let clock = ManualClock(now: 1_700_000_000)
        var options = Self.options(dir.url, clock: clock, sizeLimit: 0)
        options.policy = policy
        options.eventHandler = events.handler
        let probeDir = TemporaryDirectory()
        defer { probeDir.remove() }
        let probe = try DiskCache(options: testOptions(probeDir.url))  // for the block size
        let block = probe.blockSize
        probe.close()
        options.sizeLimit = 3 * block
        let cache = try DiskCache(options: options)
        cache.waitForIndex()
        for key in ["k0", "k1", "k2"] {
            try cache.store(Data(repeating: 1, count: 100), forKey: key)
            clock.advance(by: 1)
        }
        // Each held record is used three times more; the newcomer is not.
        for _ in 0 ..< 3 {
            for key in ["k0", "k1", "k2"] { #expect(try cache.value(forKey: key) != nil) }
        }
        _ = events.drain()
        try cache.store(Data(repeating: 2, count: 100), forKey: "k3")
        let evicted = Self.evictedKeys(events.drain())
        #expect(cache.statistics.insertions == 4)
        #expect(cache.statistics.evictions == [.sizeLimit: 1])
        if policy == .adaptive {
            #expect(evicted == ["k3"])
            #expect(try cache.value(forKey: "k3") == nil)
            #expect(try cache.keys(withPrefix: "") == ["k0", "k1", "k2"])
        } else {
            #expect(evicted == ["k0"])
            #expect(try cache.keys(withPrefix: "") == ["k1", "k2", "k3"])
        }
        cache.state.withLock { $0.index._checkInvariants() }
    }
}
