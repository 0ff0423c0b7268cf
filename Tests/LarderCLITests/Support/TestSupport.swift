import Foundation
import Larder
@testable import LarderCLI

/// A fresh directory under the system's temporary folder, removed by `remove()` (call it in `defer`).
struct TemporaryDirectory {
    let url: URL
    var path: String { url.path }

    init(_ label: String = "larder-cli") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() {
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        try? FileManager.default.removeItem(at: url)
    }

    /// A path inside (not created).
    func appending(_ component: String) -> String { url.appendingPathComponent(component).path }
}

/// The shared fixtures: `$LARDER_FIXTURES`, else the first `shared/fixtures` folder above the
/// checkout (`<checkout>/../shared/fixtures`, or one level further up for worktrees).
enum Fixtures {
    static var root: URL {
        if let override = ProcessInfo.processInfo.environment["LARDER_FIXTURES"] {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        var directory = checkout
        for _ in 0 ..< 3 {
            directory = directory.deletingLastPathComponent()
            let candidate = directory.appendingPathComponent("shared/fixtures", isDirectory: true)
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("spt-cache.manifest.json").path) {
                return candidate
            }
        }
        return checkout.deletingLastPathComponent().appendingPathComponent("shared/fixtures", isDirectory: true)
    }

    /// The package checkout (Tests/LarderCLITests/Support/<this file> → up four).
    static var checkout: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

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

    /// Copies the read-only SPT cache fixture to `directory` (which must not exist) and makes it writable.
    static func copySPTCache(to directory: String) throws {
        try FileManager.default.copyItem(at: root.appendingPathComponent("spt-cache"), to: URL(fileURLWithPath: directory))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let item = enumerator?.nextObject() as? String {
            let path = directory + "/" + item
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            try FileManager.default.setAttributes([.posixPermissions: isDirectory.boolValue ? 0o755 : 0o644], ofItemAtPath: path)
        }
    }

    /// The arguments that make the tool read the SPT fixture as its manifest describes.
    static func clockArguments(_ manifest: Manifest) -> [String] {
        ["--now", String(Int(manifest.now)), "--default-expiration", String(Int(manifest.defaultExpiration))]
    }
}

/// The outcome of one run of the tool.
struct RunResult {
    var code: Int32
    var stdout: String
    var stdoutData: Data
    var stderr: String
}

/// Runs `larder ARGS...` through the library, capturing its output.
func larder(_ arguments: [String], input: Data = Data(), environment: [String: String] = [:], terminal: Bool = false) -> RunResult {
    let capture = OutputCapture()
    let code = LarderCommand.run(arguments: ["larder"] + arguments, io: capture.io(input: input, environment: environment, terminal: terminal))
    return RunResult(code: code, stdout: capture.stdout, stdoutData: capture.stdoutData, stderr: capture.stderr)
}

/// Parses JSON text into Foundation objects.
func parseJSON(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8))
}

/// The lowercase hex SHA-256 of `data`.
func sha256(_ data: Data) -> String {
    data.withUnsafeBytes { SHA256Hash.hex($0) }
}
