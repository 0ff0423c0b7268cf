import Foundation

extension BenchmarksPage {
    /// Writes the page and its charts under `root` (the repository's root): `BENCHMARKS.md` and
    /// ``chartFolder``, whose SVG files the page no longer shows are removed.
    /// - Returns: The paths written, relative to `root`.
    @discardableResult
    public func write(to root: URL) throws -> [String] {
        let files = files()
        let charts = root.appendingPathComponent(Self.chartFolder, isDirectory: true)
        try FileManager.default.createDirectory(at: charts, withIntermediateDirectories: true)
        let kept = Set(files.map { URL(fileURLWithPath: $0.path).lastPathComponent })
        for name in try FileManager.default.contentsOfDirectory(atPath: charts.path) where name.hasSuffix(".svg") && !kept.contains(name) {
            try FileManager.default.removeItem(at: charts.appendingPathComponent(name))
        }
        for file in files {
            try Data(file.contents.utf8).write(to: root.appendingPathComponent(file.path), options: .atomic)
        }
        return files.map(\.path)
    }
}
