import Foundation
import Larder

/// The straightforward Foundation cache (CacheHandler's way): the file is named by the key's
/// SHA-256 in one folder, written with `Data.write(to:options: .atomic)`; a load asks
/// `FileManager.attributesOfItem` for the modification date to check expiry, then reads the
/// file with `Data(contentsOf:)`.
final class FoundationNaiveStore: BenchStore {
    private let folder: URL
    private let maximumAge: TimeInterval = 30 * 24 * 60 * 60

    init(directory: String) throws {
        folder = URL(fileURLWithPath: directory, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    private func url(for key: String) -> URL {
        folder.appendingPathComponent(SHA256Hash.hex(of: key), isDirectory: false)
    }

    func store(_ data: Data, forKey key: String) throws {
        try data.write(to: url(for: key), options: .atomic)
    }

    func load(forKey key: String) throws -> Data? {
        let url = url(for: key)
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
            let modified = attributes[.modificationDate] as? Date
        else { return nil }
        guard Date().timeIntervalSince(modified) < maximumAge else { return nil }
        return try Data(contentsOf: url)
    }

    func close() {}
}
