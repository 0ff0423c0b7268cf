import Foundation
import Larder
import Testing

@testable import LarderRedis

/// Reading `CLUSTER SLOTS` and redirections, and the cluster store's settings, without a server.
@Suite struct ClusterTopologyTests {
    func node(_ host: String, _ port: Int64) -> RedisReply { .array([.string(Data(host.utf8)), .integer(port), .string(Data("id".utf8))]) }

    @Test func slotRangesMapToTheirMasters() throws {
        let reply = RedisReply.array([
            .array([.integer(0), .integer(5460), node("10.0.0.1", 7000), node("10.0.0.4", 7003)]),
            .array([.integer(5461), .integer(10922), node("", 7001)]),
            .array([.integer(10923), .integer(16383), node("10.0.0.3", 7002)]),
        ])
        let topology = try ClusterTopology(slotsReply: reply, askedHost: "10.0.0.9")
        #expect(topology.masters == ["10.0.0.1:7000", "10.0.0.9:7001", "10.0.0.3:7002"])
        #expect(topology.master(ofSlot: 0) == "10.0.0.1:7000")
        #expect(topology.master(ofSlot: 5460) == "10.0.0.1:7000")
        #expect(topology.master(ofSlot: 5461) == "10.0.0.9:7001")
        #expect(topology.master(ofSlot: 16383) == "10.0.0.3:7002")
    }

    @Test func aGapLeavesSlotsWithoutAMaster() throws {
        let reply = RedisReply.array([.array([.integer(0), .integer(99), node("h", 1)])])
        let topology = try ClusterTopology(slotsReply: reply, askedHost: "x")
        #expect(topology.master(ofSlot: 99) == "h:1")
        #expect(topology.master(ofSlot: 100) == nil)
    }

    @Test(arguments: [
        RedisReply.array([]), .status("OK"),
        .array([.array([.integer(0), .integer(16384), .array([.string(Data("h".utf8)), .integer(1)])])]),
        .array([.array([.integer(5), .integer(4), .array([.string(Data("h".utf8)), .integer(1)])])]),
        .array([.array([.integer(0), .integer(1), .array([.string(Data("h".utf8)), .integer(0)])])]),
        .array([.array([.integer(0), .integer(1)])]),
    ])
    func malformedMapsAreRemoteFailures(_ reply: RedisReply) {
        #expect(throws: CacheError.self) { try ClusterTopology(slotsReply: reply, askedHost: "h") }
    }

    @Test func redirectionsAreRead() {
        #expect(ClusterRedirection("MOVED 3999 127.0.0.1:6381", askedHost: "x") == .moved(slot: 3999, address: "127.0.0.1:6381"))
        #expect(ClusterRedirection("ASK 3999 10.0.0.2:7000", askedHost: "x") == .ask(slot: 3999, address: "10.0.0.2:7000"))
        #expect(ClusterRedirection("MOVED 1 :7001", askedHost: "10.0.0.9") == .moved(slot: 1, address: "10.0.0.9:7001"))
        #expect(ClusterRedirection("ERR unknown command", askedHost: "x") == nil)
        #expect(ClusterRedirection("MOVED 16384 h:1", askedHost: "x") == nil)
        #expect(ClusterRedirection("MOVED 1 h", askedHost: "x") == nil)
        #expect(ClusterRedirection("CROSSSLOT Keys in request don't hash to the same slot", askedHost: "x") == nil)
    }

    @Test(arguments: [
        ([String](), "at least one seed"), (["127.0.0.1"], "host:port"), (["127.0.0.1:0"], "from 1 to 65535"), ([":7000"], "host is empty"),
    ])
    func badSeedsAreRefused(_ seeds: [String], _ says: String) {
        #expect {
            try RedisClusterStore(seeds: seeds)
        } throws: { error in
            let error = error as? CacheError
            return error?.code == .invalidOptions && error?.message.contains(says) == true
        }
    }

    @Test func aPoolBelowOneIsRefused() {
        #expect(throws: CacheError.self) { try RedisClusterStore(seeds: ["h:1"], poolSize: 0) }
        #expect((try? RedisClusterStore(seeds: ["h:1", "10.0.0.2:7000"]))?.seeds == ["h:1", "10.0.0.2:7000"])
    }
}
