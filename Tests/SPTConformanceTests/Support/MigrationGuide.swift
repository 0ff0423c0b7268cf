import Foundation

/// The migration guide, `Sources/Larder/Larder.docc/MigratingFromSPTPersistentCache.md`, read
/// from the checkout, so that the tests can hold it to what they found.
enum MigrationGuide {
    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Larder/Larder.docc/MigratingFromSPTPersistentCache.md")

    /// The guide's text.
    static var text: String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }

    /// The guide's table rows (lines starting with `|`).
    static var rows: [String] { text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("|") } }

    /// Whether a table row names SPT's `spt` (in code font) in its first cell and Larder's
    /// `larder` (in code font) after it.
    static func maps(_ spt: String, to larder: String) -> Bool {
        rows.contains { row in
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard cells.count > 2 else { return false }
            return cells[1].contains("`\(spt)`") && cells[2...].joined(separator: "|").contains(larder)
        }
    }
}
