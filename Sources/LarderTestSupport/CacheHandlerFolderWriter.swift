import Foundation

/// Writes a folder the way CacheHandler writes its disk cache (`saveResponseToDisk`): each entry
/// is `JSONSerialization.data(withJSONObject: ["response": response])` written atomically to a
/// file named by its key's SHA-256, whose modification date is then set (as
/// `copyPreloadedCacheIfNeeded` does with `setAttributes`).
public struct CacheHandlerFolderWriter: Sendable {
    /// The folder.
    public let folder: URL

    /// Creates the folder (and its parents) when missing.
    public init(folder: URL) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// The path of a file in the folder.
    public func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    /// Writes one entry as CacheHandler does and dates it.
    /// - Parameters:
    ///   - response: A `JSONSerialization` value: a string, a number, an array, a dictionary, `NSNull`.
    ///   - name: The file's name: the lowercase hex SHA-256 of the key, for a real entry.
    ///   - modified: The modification date to give it.
    /// - Returns: The response's JSON exactly as the file holds it (between `{"response":` and `}`),
    ///   and the modification time the file system kept, in seconds since the epoch.
    @discardableResult
    public func write(_ response: Any, named name: String, modified: Date) throws -> (json: Data, modificationTime: Double) {
        let data = try JSONSerialization.data(withJSONObject: ["response": response], options: [])
        let prefix = Data(#"{"response":"#.utf8)
        precondition(data.starts(with: prefix) && data.last == UInt8(ascii: "}"), "JSONSerialization wrote \(data)")
        try data.write(to: folder.appendingPathComponent(name), options: .atomic)
        return (Data(data.dropFirst(prefix.count).dropLast()), try setModified(name, modified))
    }

    /// Writes raw bytes to a file in the folder and dates it.
    /// - Returns: The modification time the file system kept.
    @discardableResult
    public func writeRaw(_ bytes: Data, named name: String, modified: Date) throws -> Double {
        try bytes.write(to: folder.appendingPathComponent(name), options: .atomic)
        return try setModified(name, modified)
    }

    /// Sets a file's modification date; returns the time the file system kept.
    public func setModified(_ name: String, _ date: Date) throws -> Double {
        try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: path(name))
        let kept = try FileManager.default.attributesOfItem(atPath: path(name))[.modificationDate] as? Date
        return kept?.timeIntervalSince1970 ?? .nan
    }
}
