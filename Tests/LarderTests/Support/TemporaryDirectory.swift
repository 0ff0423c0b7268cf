import Foundation
@testable import Larder

/// A fresh directory under the system's temporary folder, removed by `remove()` (call it in `defer`).
struct TemporaryDirectory {
    let url: URL
    var path: String { url.path }

    init(_ label: String = "larder") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() {
        // Restore write permission first, in case a test made the folder read-only.
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        try? FileManager.default.removeItem(at: url)
    }

    /// A subfolder URL (not created).
    func appending(_ component: String) -> URL { url.appendingPathComponent(component, isDirectory: true) }
}

/// The shared fixtures (`../shared/fixtures` beside the checkout, or `$LARDER_FIXTURES`).
enum Fixtures {
    static var root: URL {
        if let override = ProcessInfo.processInfo.environment["LARDER_FIXTURES"] {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        // The nearest `shared/fixtures` above this file: beside the checkout in CI, and beside
        // the main checkout for work trees kept elsewhere.
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            let candidate = folder.appendingPathComponent("shared/fixtures", isDirectory: true)
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            folder.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: "/work/shared/fixtures", isDirectory: true)
    }

    /// The SPT cache fixture's manifest.
    struct Manifest: Decodable {
        struct Record: Decodable {
            var key: String
            var file: String
            var refCount: Int
            var ttl: Int
            var updateTime: Int
            var payloadSize: Int
            var payloadSha256: String
            var corruption: String?
            var readable: Bool
        }
        var now: Double
        var defaultExpiration: Double
        var records: [Record]
    }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: root.appendingPathComponent("spt-cache.manifest.json")))
    }

    /// Copies the read-only SPT cache fixture into `directory` (which must not exist yet) and
    /// makes the copy writable.
    static func copySPTCache(to directory: URL) throws {
        try FileManager.default.copyItem(at: root.appendingPathComponent("spt-cache"), to: directory)
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        while let item = enumerator?.nextObject() as? String {
            let path = directory.appendingPathComponent(item).path
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            try FileManager.default.setAttributes([.posixPermissions: isDirectory.boolValue ? 0o755 : 0o644], ofItemAtPath: path)
        }
    }
}
