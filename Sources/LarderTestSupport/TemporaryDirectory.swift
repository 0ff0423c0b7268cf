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

    /// Removes the directory and everything in it, with its folders made writable first (a test
    /// may have made some read-only). A cache a test let go of has closed by then: a cache closes
    /// when its owner's last reference goes, whatever its own background work is doing.
    public func remove() {
        makeFoldersWritable()
        try? FileManager.default.removeItem(at: url)
    }

    /// Gives the owner full access to the directory and to every folder beneath it, so that
    /// their entries can be removed.
    private func makeFoldersWritable() {
        let files = FileManager.default
        _ = try? files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        guard let entries = files.enumerator(atPath: path) else { return }
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
