import Foundation

/// A fresh directory under the system's temporary folder, removed by `remove()` (call it in `defer`).
public struct TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL
    /// The directory's path.
    public var path: String { url.path }

    /// Creates the directory, named after `label` and a UUID.
    public init(_ label: String = "larder") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Removes the directory and everything in it.
    ///
    /// A cache a test let go of without `close()` closes when its last reference goes, and work
    /// of its own (the index build at open) can hold one a moment longer; its close writes the
    /// index, which may land in a folder being removed. So the removal is tried again, with the
    /// folders made writable (a test may have made some read-only), until the directory is gone
    /// or a second has passed.
    public func remove() {
        let files = FileManager.default
        for attempt in 0 ..< 100 {
            if attempt > 0 { usleep(10_000) }
            makeFoldersWritable(descending: attempt > 0)
            try? files.removeItem(at: url)
            if !files.fileExists(atPath: path) { return }
        }
    }

    /// Gives the owner full access to the directory, and with `descending` to every folder
    /// beneath it, so that their entries can be removed.
    private func makeFoldersWritable(descending: Bool) {
        let files = FileManager.default
        _ = try? files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        guard descending, let entries = files.enumerator(atPath: path) else { return }
        for case let entry as String in entries {
            let inner = url.appendingPathComponent(entry).path
            guard (try? files.attributesOfItem(atPath: inner)[.type] as? FileAttributeType) == .typeDirectory else { continue }
            _ = try? files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: inner)
        }
    }

    /// A URL inside the directory (not created).
    public func appending(_ component: String) -> URL { url.appendingPathComponent(component, isDirectory: true) }

    /// A path inside the directory (not created).
    public func path(_ component: String) -> String { appending(component).path }
}
