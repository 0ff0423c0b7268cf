/// What `DiskCache.importCacheHandlerFolder(at:)` did with each file of a CacheHandler folder:
/// which it imported and which it skipped, with the reason.
///
/// ```swift
/// let report = try cache.importCacheHandlerFolder(at: caches.appending(path: "URLCache"))
/// print("imported \(report.imported.count), skipped \(report.skipped.count)")
/// for file in report.skipped { print(file) }   // "<name>: <reason>"
/// ```
public struct CacheHandlerImportReport: Sendable, Hashable {
    /// Why a file of the folder was not imported.
    public enum SkipReason: Sendable, Hashable, CustomStringConvertible {
        /// Its 6 days had passed before the import: CacheHandler would no longer serve it. The
        /// time it expired, in seconds since the Unix epoch.
        case expired(at: Double)
        /// The cache already holds a live record under this name (the same key); it is kept.
        case alreadyPresent
        /// Its name is not 64 lowercase hex digits, so it is not the SHA-256 of a key and no key
        /// could find it.
        case notAHashedName
        /// A folder: CacheHandler's folder holds files only.
        case folder
        /// A symbolic link, which is never followed out of the folder.
        case symbolicLink
        /// A FIFO, a socket or a device, which is never opened for reading.
        case notARegularFile
        /// The file, or its response, is larger than the cache's
        /// ``DiskCacheOptions/maximumRecordSize`` allows (or the file is sparse); nothing is
        /// allocated for it. The size in bytes.
        case tooLarge(bytes: Int)
        /// It could not be opened or read; the `errno`.
        case unreadable(errno: Int32)
        /// Not JSON (or not UTF-8).
        case notJSON
        /// JSON, but not an object with a `"response"` member.
        case noResponse

        /// A short phrase, as in `expired at 1700000000` or `not JSON`.
        public var description: String {
            switch self {
            case .expired(let time): "expired at \(Int64(time.rounded(.down))) (6 days after its modification time)"
            case .alreadyPresent: "already in the cache"
            case .notAHashedName: "its name is not a SHA-256 (64 lowercase hex digits)"
            case .folder: "a folder"
            case .symbolicLink: "a symbolic link (not followed)"
            case .notARegularFile: "not a regular file (a FIFO, a socket or a device)"
            case .tooLarge(let bytes): "too large (\(bytes) bytes)"
            case .unreadable(let errno): "cannot be read (errno \(errno))"
            case .notJSON: "not JSON"
            case .noResponse: "JSON without a \"response\" member"
            }
        }
    }

    /// A file that was not imported.
    public struct SkippedFile: Sendable, Hashable, CustomStringConvertible {
        /// The file's name in the folder.
        public var name: String
        /// Why it was skipped.
        public var reason: SkipReason

        /// Describes a skipped file.
        /// - Parameters:
        ///   - name: The file's name in the folder.
        ///   - reason: Why it was skipped.
        public init(name: String, reason: SkipReason) {
            self.name = name
            self.reason = reason
        }

        /// The name and the reason, as in `<name>: not JSON`.
        public var description: String { "\(name): \(reason)" }
    }

    /// The names of the files imported (each the SHA-256 of its key, and the record's file name),
    /// oldest modification time first, the order they were imported in.
    public var imported: [String] = []
    /// The files not imported, with the reason: first those the folder's listing rules out (by
    /// name), then those met while importing (in import order). Hidden files and folders (names
    /// starting with `.`) are neither imported nor listed.
    public var skipped: [SkippedFile] = []

    /// An empty report.
    public init() {}
}
