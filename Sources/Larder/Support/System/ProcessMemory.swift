import Foundation

/// How much memory this process may use: the machine's, or less where a control group says so.
///
/// In a container, `ProcessInfo.physicalMemory` reports the host's memory, while the kernel ends
/// the process at its control group's limit. Defaults sized from the machine's memory use
/// ``budget`` instead, so that a cache in a 512 MiB container does not plan on a host's 64 GiB.
enum ProcessMemory {
    /// The memory this process may use, in bytes: the machine's memory, or the tightest memory
    /// limit of this process's control group and its ancestors where that is lower. Computed once.
    static let budget: UInt64 = budget(
        physicalMemory: ProcessInfo.processInfo.physicalMemory,
        controlGroupLimit: currentControlGroupLimit())

    /// The lower of the machine's memory and a control group's limit.
    /// - Parameters:
    ///   - physicalMemory: The machine's memory, in bytes (0 when unknown).
    ///   - controlGroupLimit: The control group's limit, in bytes, or `nil` when there is none.
    /// - Returns: The budget, in bytes (0 when neither is known).
    static func budget(physicalMemory: UInt64, controlGroupLimit: UInt64?) -> UInt64 {
        guard let limit = controlGroupLimit else { return physicalMemory }
        return physicalMemory == 0 ? limit : min(physicalMemory, limit)
    }

    /// This process's control-group memory limit, read from `/proc/self/cgroup` and the
    /// `/sys/fs/cgroup` files it names; `nil` when there is none or on systems without them.
    static func currentControlGroupLimit() -> UInt64? {
        #if os(Linux)
        guard let membership = readSmallFile("/proc/self/cgroup") else { return nil }
        return controlGroupLimit(membership: membership, read: readSmallFile)
        #else
        return nil
        #endif
    }

    /// The tightest memory limit among the control groups that `membership` (the text of
    /// `/proc/self/cgroup`) names, and their ancestors.
    ///
    /// Version 2 (the line `0::/path`) reads `memory.max` ("max" is no limit) under
    /// `/sys/fs/cgroup`; version 1 (the line whose controllers include `memory`) reads
    /// `memory.limit_in_bytes` under `/sys/fs/cgroup/memory`, where a value of 2^62 or more is no
    /// limit. Each folder from the group's own up to the mount's root is read, and the lowest
    /// limit wins: a parent's limit binds its children, and inside a container whose group folder
    /// is not visible, the mount's root holds the container's limit.
    /// - Parameters:
    ///   - membership: The text of `/proc/self/cgroup`.
    ///   - read: Reads a small file's text; `nil` when it is absent or unreadable.
    /// - Returns: The limit, in bytes, or `nil` when no group sets one.
    static func controlGroupLimit(membership: String, read: (String) -> String?) -> UInt64? {
        var lowest: UInt64?
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let controllers = fields[1].split(separator: ",")
            let root: String
            let file: String
            if fields[0] == "0" && controllers.isEmpty {
                (root, file) = ("/sys/fs/cgroup", "memory.max")
            } else if controllers.contains("memory") {
                (root, file) = ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
            } else {
                continue
            }
            for folder in selfAndAncestors(of: String(fields[2])) {
                let text = read(root + folder + (folder.hasSuffix("/") ? "" : "/") + file)
                guard let text, let limit = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                    limit < 1 << 62
                else { continue }
                lowest = min(lowest ?? limit, limit)
            }
        }
        return lowest
    }

    /// `"/a/b"` gives `["/a/b", "/a", "/"]`; anything that is not an absolute path gives `["/"]`.
    private static func selfAndAncestors(of path: String) -> [String] {
        guard path.hasPrefix("/") else { return ["/"] }
        var parts = path.split(separator: "/").map(String.init)
        guard !parts.contains(".."), !parts.contains(".") else { return ["/"] }
        var folders: [String] = []
        while !parts.isEmpty {
            folders.append("/" + parts.joined(separator: "/"))
            parts.removeLast()
        }
        folders.append("/")
        return folders
    }

    /// The text of a small kernel file (under `/proc` or `/sys`), or `nil`.
    private static func readSmallFile(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }
}
