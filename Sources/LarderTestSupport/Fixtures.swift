import Foundation

/// The shared fixtures: `$LARDER_FIXTURES`, else the nearest `shared/fixtures` folder above this
/// file (beside the checkout in CI, beside the main checkout for work trees kept elsewhere).
public enum Fixtures {
    /// The fixtures folder.
    public static var root: URL {
        if let override = ProcessInfo.processInfo.environment["LARDER_FIXTURES"] {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            let candidate = folder.appendingPathComponent("shared/fixtures", isDirectory: true)
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("spt-cache.manifest.json").path) {
                return candidate
            }
            folder.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: "/work/shared/fixtures", isDirectory: true)
    }

    /// The SPT cache fixture's manifest.
    public struct Manifest: Decodable, Sendable {
        /// One record of the fixture.
        public struct Record: Decodable, Sendable {
            /// The key it was stored under.
            public var key: String
            /// Its file name.
            public var file: String
            /// Its lock count.
            public var refCount: Int
            /// Its header's ttl, in seconds (0 for the default).
            public var ttl: Int
            /// Its header's update time, seconds since the epoch.
            public var updateTime: Int
            /// Its payload's length in bytes.
            public var payloadSize: Int
            /// The SHA-256 of its payload, in hex.
            public var payloadSha256: String
            /// The corruption planted in it, if any.
            public var corruption: String?
            /// Whether it must be readable at `now` with `defaultExpiration`.
            public var readable: Bool
        }
        /// The time at which `readable` holds.
        public var now: Double
        /// The default expiration at which `readable` holds.
        public var defaultExpiration: Double
        /// Every record.
        public var records: [Record]
    }

    /// Reads `spt-cache.manifest.json`.
    public static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: root.appendingPathComponent("spt-cache.manifest.json")))
    }

    /// Copies the read-only SPT cache fixture into `directory` (which must not exist yet) and
    /// makes the copy writable.
    public static func copySPTCache(to directory: URL) throws {
        try FileManager.default.copyItem(at: root.appendingPathComponent("spt-cache"), to: directory)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let item = enumerator?.nextObject() as? String {
            let path = directory.appendingPathComponent(item).path
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            try FileManager.default.setAttributes([.posixPermissions: isDirectory.boolValue ? 0o755 : 0o644], ofItemAtPath: path)
        }
    }

    /// Copies the SPT cache fixture to the path `directory`.
    public static func copySPTCache(to directory: String) throws {
        try copySPTCache(to: URL(fileURLWithPath: directory, isDirectory: true))
    }
}

extension Fixtures.Manifest.Record {
    /// Whether the fixture planted it without the record magic: then it is no record at all but
    /// a foreign file, which a cache lists apart and never removes.
    public var isForeign: Bool { corruption == "magic" }

    /// What `larder ls` says of it at the manifest's time: `foreign`, `corrupt`, `ok` or `expired`.
    public var expectedStatus: String {
        isForeign ? "foreign" : corruption != nil ? "corrupt" : readable ? "ok" : "expired"
    }
}
