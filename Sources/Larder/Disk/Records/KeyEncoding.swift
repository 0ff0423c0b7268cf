/// How a ``DiskCache`` turns keys into file names.
public enum KeyEncoding: Sendable, CustomStringConvertible {
    /// The file name is the lowercase hex SHA-256 of the key's UTF-8 bytes; any key of up to
    /// 8 KiB (8,192 bytes) of UTF-8 is accepted, and each record also stores its original key.
    /// The default.
    case sha256
    /// SPTPersistentCache's way: the key is the file name. Keys that are not safe file names
    /// (empty, over 255 bytes, containing `/` or NUL, `.` or `..`, or starting with `.`) are
    /// rejected with ``CacheError/Code/invalidKey``.
    case verbatim
    /// A function of your own. `name` is recorded in the directory's metadata so that a directory
    /// is never opened with another encoding; the function must be deterministic and return a
    /// safe file name (the rules of ``verbatim``), or throw. Records store their original key.
    case custom(name: String, encode: @Sendable (String) throws -> String)

    /// The name recorded in a directory's metadata: `sha256`, `verbatim` or `custom:NAME`.
    public var description: String {
        switch self {
        case .sha256: "sha256"
        case .verbatim: "verbatim"
        case .custom(let name, _): "custom:\(name)"
        }
    }

    /// Whether records written under this encoding carry their original key.
    package var storesKey: Bool {
        if case .verbatim = self { return false }
        return true
    }

    /// The file name for `key`.
    /// - Throws: ``CacheError/Code/invalidKey`` when the key (or, for custom encodings, the name
    ///   it produces) is not a safe file name.
    package func fileName(for key: String) throws(CacheError) -> String {
        switch self {
        case .sha256:
            return SHA256Hash.hex(of: key)
        case .verbatim:
            try Self.validateFileName(key, key: key)
            return key
        case .custom(let name, let encode):
            let fileName: String
            do {
                fileName = try encode(key)
            } catch {
                throw CacheError(.invalidKey, "custom key encoding '\(name)' rejected the key", key: key)
            }
            try Self.validateFileName(fileName, key: key)
            return fileName
        }
    }

    /// Rejects names that could escape the directory, clobber Larder's own files, or not fit a file system.
    static func validateFileName(_ name: String, key: String) throws(CacheError) {
        let bytes = name.utf8
        let problem: String? =
            if bytes.isEmpty { "is empty" } else if bytes.count > 255 {
                "is longer than 255 bytes (\(bytes.count))"
            } else if bytes.contains(UInt8(ascii: "/")) { "contains '/'" } else if bytes.contains(0) {
                "contains a NUL byte"
            } else if name == "." || name == ".." { "is '.' or '..'" } else if bytes.first == UInt8(ascii: ".") {
                "starts with '.' (reserved for Larder's own files)"
            } else { nil }
        if let problem {
            throw CacheError(.invalidKey, "key is not a safe file name: it \(problem)", key: key)
        }
    }
}
