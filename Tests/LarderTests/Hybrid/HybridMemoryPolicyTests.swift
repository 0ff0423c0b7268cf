import Foundation
@testable import Larder
import Testing

@Suite("HybridCache's memory eviction policy")
struct HybridMemoryPolicyTests {
    @Test("The memory tier uses the recommended policy unless the options say otherwise")
    func defaultPolicy() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        #expect(hybridOptions(dir.url).memory.policy == .recommended)
        let recommended = try HybridCache(options: hybridOptions(dir.url))
        #expect(recommended.memory.policy == .recommended)
        #expect(recommended.memory.policy == .tinyLFU)
        recommended.close()

        var options = hybridOptions(dir.url)
        options.memory.policy = .lru
        let lru = try HybridCache(options: options)
        defer { lru.close() }
        #expect(lru.memory.policy == .lru)
    }
}
