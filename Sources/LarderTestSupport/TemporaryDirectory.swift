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
    public func remove() {
        // Restore write permission first, in case a test made the folder read-only.
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        try? FileManager.default.removeItem(at: url)
    }

    /// A URL inside the directory (not created).
    public func appending(_ component: String) -> URL { url.appendingPathComponent(component, isDirectory: true) }

    /// A path inside the directory (not created).
    public func path(_ component: String) -> String { appending(component).path }
}
