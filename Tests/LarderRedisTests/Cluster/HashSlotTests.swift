import Testing

@testable import LarderRedis

/// Redis Cluster's key-to-slot mapping, against values Redis itself gives (`CLUSTER KEYSLOT`).
@Suite struct HashSlotTests {
    @Test func crc16IsTheXMODEMVariant() {
        #expect(HashSlot.crc16(Array("123456789".utf8)) == 0x31C3)
        #expect(HashSlot.crc16([UInt8]()) == 0)
    }

    /// Slots that `redis-cli CLUSTER KEYSLOT` reports for these keys (Redis 7.0).
    @Test(arguments: [
        ("foo", 12182), ("bar", 5061), ("123456789", 0x31C3 % 16384), ("", 0), ("somekey", 11058),
        ("{user1000}.following", 3443), ("{user1000}.followers", 3443), ("user1000", 3443),
        ("foo{}{bar}", 8363), ("foo{{bar}}zap", 4015), ("foo{bar}{zap}", 5061), ("{}", 15257),
    ])
    func slotsMatchRedis(_ key: String, _ slot: Int) {
        #expect(HashSlot.slot(of: key) == slot)
    }

    @Test func keysSharingATagShareASlot() {
        let slots = Set(["{feed:42}a", "x{feed:42}", "{feed:42}", "feed:42", "z{feed:42}{other}"].map(HashSlot.slot(of:)))
        #expect(slots.count == 1)
        #expect(HashSlot.slot(of: "a") != HashSlot.slot(of: "b"))
    }
}
