import Foundation
import Testing

/// The tiers reach the C library only through `Sources/Larder/Support` (`FileIO`, `FileInfo`,
/// `SystemCalls`, ...): the one place where system calls are wrapped, retried and faked in tests.
@Suite struct SystemSeamTests {
    /// The folders whose files must not import the C library themselves.
    static let tiers = ["Disk", "Memory", "Hybrid", "Remote"]

    @Test func tiersImportNoCLibrary() throws {
        let sources = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/Larder")
        var scanned = 0
        var offenders: [String] = []
        for tier in Self.tiers {
            let folder = sources.appendingPathComponent(tier)
            let enumerator = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            for case let file as URL in enumerator where file.pathExtension == "swift" {
                scanned += 1
                let text = try String(contentsOf: file, encoding: .utf8)
                // `import Glibc`, `internal import Darwin`, `@preconcurrency import Musl`,
                // `import struct Glibc.stat`, ...
                let cImport = /^\s*(@\w+\s+)*(\w+\s+)?import\s+(\w+\s+)?(Glibc|Musl|Darwin|ucrt|WinSDK)\b/
                for line in text.split(separator: "\n") where line.contains(cImport) {
                    offenders.append("\(tier)/\(file.lastPathComponent): \(line)")
                }
            }
        }
        // The scan found the tiers' files (a moved tree would otherwise pass with nothing read).
        #expect(scanned > 50)
        #expect(offenders == [], "C library imported outside Support: \(offenders)")
    }
}
