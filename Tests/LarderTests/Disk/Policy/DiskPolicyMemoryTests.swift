import Testing
@testable import Larder

/// What the adaptive policy keeps per record: sizes in 32 bits with the rare larger one kept
/// exactly beside them, and per-id arrays reserved once for the index's slots.
@Suite struct DiskPolicyMemoryTests {
    /// A size that does not fit in 32 bits is kept exactly, through moves and unlinks, and a
    /// small size linked later under the same id replaces it.
    @Test func aSizeBeyondThirtyTwoBitsIsKeptExactly() {
        var queues = RecordQueues(queues: 2)
        let large = 5 << 30 + 3
        queues.append(0, size: large, to: 1)
        queues.append(1, size: 100, to: 1)
        #expect(queues.size(of: 0) == large)
        #expect(queues.bytes[1] == large + 100)
        queues.move(0, to: 2)
        #expect(queues.bytes[1] == 100 && queues.bytes[2] == large)
        #expect(queues.size(of: 0) == large)
        queues.unlink(0)
        #expect(queues.bytes[2] == 0 && queues.counts[2] == 0)
        queues.append(0, size: 7, to: 2)
        #expect(queues.size(of: 0) == 7 && queues.bytes[2] == 7)
        #expect(queues.largeSizes.isEmpty)
        // Exactly 2^32 - 1 bytes is the marker's value: kept beside too.
        queues.append(2, size: Int(UInt32.max), to: 1)
        #expect(queues.size(of: 2) == Int(UInt32.max))
        #expect(queues.bytes[1] == 100 + Int(UInt32.max))
    }

    /// A policy over records bigger than 4 GiB counts their bytes exactly and evicts to its
    /// capacity.
    @Test func recordsBeyondThirtyTwoBitsStayWithinTheCapacity() {
        var policy = DiskAdaptivePolicy(capacity: 20 << 30)
        for id in 0 ..< Int32(6) {
            policy.insert(id, size: 6 << 30, hash: UInt32(id), hashOf: { UInt32($0) }, evicting: { _ in })
            #expect(policy.byteCount <= policy.capacity)
            #expect(policy.byteCount == policy.count * (6 << 30))
        }
        #expect(policy.count == 3)
    }

    /// The policy an index starts holds its per-id arrays in the storage reserved for the index's
    /// slots, filled only as far as the ids reach: not grown by doubling, which would leave the
    /// storage they outgrew resident.
    @Test func aStartedPolicyFillsTheStorageReservedForTheSlots() throws {
        var index = DiskIndex()
        let n = 1_000
        for i in 0 ..< n {
            index.upsert(
                IndexEntry(name: "record-\(i)", key: nil, diskSize: 4_096, updateTime: 1, lastAccessMs: UInt64(i), ttl: 0, lockCount: 0))
        }
        index.startPolicy(capacity: 1 << 30)
        let policy = try #require(index.policy)
        #expect(policy.count == n)
        // Grown by doubling, an array would reach the next power of two.
        #expect(policy.queues.links.count == n && policy.queues.links.capacity < 1_024)
        #expect(policy.queues.queueOf.capacity < 1_024)
    }
}
