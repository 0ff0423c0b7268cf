import Testing
@testable import Larder

@Suite("A process's memory budget follows its control group")
struct ProcessMemoryTests {
    /// Reads from a made-up `/sys/fs/cgroup`.
    private func reader(_ files: [String: String]) -> (String) -> String? {
        { files[$0] }
    }

    @Test("Version 2: the tightest memory.max from the group up to the root; \"max\" is no limit")
    func versionTwo() {
        let files = [
            "/sys/fs/cgroup/app/web/memory.max": "max\n",
            "/sys/fs/cgroup/app/memory.max": "536870912\n",
            "/sys/fs/cgroup/memory.max": "1073741824\n",
        ]
        #expect(ProcessMemory.controlGroupLimit(membership: "0::/app/web\n", read: reader(files)) == 536_870_912)
        #expect(ProcessMemory.controlGroupLimit(membership: "0::/\n", read: reader(files)) == 1_073_741_824)
        let unlimited = ["/sys/fs/cgroup/memory.max": "max\n"]
        #expect(ProcessMemory.controlGroupLimit(membership: "0::/\n", read: reader(unlimited)) == nil)
    }

    @Test("Version 1: memory.limit_in_bytes of the memory controller's line; 2^62 or more is no limit")
    func versionOne() {
        let membership = "5:devices:/\n4:cpu,memory:/docker/abc\n0::/\n"
        let limited = ["/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"]
        #expect(ProcessMemory.controlGroupLimit(membership: membership, read: reader(limited)) == 268_435_456)
        let unlimited = [
            "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
        ]
        #expect(ProcessMemory.controlGroupLimit(membership: membership, read: reader(unlimited)) == nil)
    }

    @Test("Unreadable, garbled or escaping lines set no limit")
    func garbled() {
        let files = ["/sys/fs/cgroup/memory.max": "lots\n", "/sys/fs/memory.max": "1"]
        #expect(ProcessMemory.controlGroupLimit(membership: "0::/\n", read: reader(files)) == nil)
        #expect(ProcessMemory.controlGroupLimit(membership: "0::/../..\nnonsense\n", read: reader(files)) == nil)
        #expect(ProcessMemory.controlGroupLimit(membership: "", read: reader(files)) == nil)
    }

    @Test("The budget is the lower of the machine's memory and the group's limit")
    func budget() {
        #expect(ProcessMemory.budget(physicalMemory: 64 << 30, controlGroupLimit: 512 << 20) == 512 << 20)
        #expect(ProcessMemory.budget(physicalMemory: 1 << 30, controlGroupLimit: 4 << 30) == 1 << 30)
        #expect(ProcessMemory.budget(physicalMemory: 1 << 30, controlGroupLimit: nil) == 1 << 30)
        #expect(ProcessMemory.budget(physicalMemory: 0, controlGroupLimit: 2 << 30) == 2 << 30)
        #expect(
            HybridCacheOptions.defaultMemoryCostLimit(
                physicalMemory: ProcessMemory.budget(physicalMemory: 64 << 30, controlGroupLimit: 512 << 20)) == 53_687_091)
    }
}
