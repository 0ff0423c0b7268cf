import Foundation

/// A directory of entries shipped with the app (CacheHandler's `PreloadedCache`), and how a
/// ``HybridCache`` uses it.
///
/// ```swift
/// var options = HybridCacheOptions(directory: cachesURL)
/// options.preloaded = PreloadedEntries(directory: bundleURL.appending(path: "PreloadedCache"))
/// let cache = try HybridCache(options: options)
/// print(cache.preloadReport?.failures ?? [])
/// ```
public struct PreloadedEntries: Sendable, Hashable {
    /// How the directory's files hold entries.
    public enum Format: Sendable, Hashable {
        /// One plain file per entry at the top of the directory: the file name is the key, the
        /// content the payload. Hidden files and folders are ignored.
        case files
        /// Record files (SPTPersistentCache's format, as a ``DiskCache`` writes them), anywhere in
        /// the directory's tree: the key is the record's stored key, or else its file name. The
        /// record's expiry and lock carry over. Hidden files and folders are ignored.
        case records
    }

    /// When the entries reach the cache.
    public enum Mode: Sendable, Hashable {
        /// At open, each entry missing from the cache (absent or expired) is stored with a fresh
        /// update time; entries already there are left alone; a file that cannot be read is
        /// listed in ``PreloadReport/failures`` and skipped (CacheHandler's behaviour). The default.
        case copyIfMissing
        /// Nothing is copied: on a miss in memory and on disk, the directory is consulted as a
        /// read-only last tier, and a hit there is stored in the cache (SDWebImage's additional
        /// cache path). Removing a key from the cache does not hide its preloaded entry.
        case readThrough
    }

    /// The directory.
    public var directory: URL
    /// How its files hold entries (``Format/files``).
    public var format: Format
    /// When they reach the cache (``Mode/copyIfMissing``).
    public var mode: Mode
    /// The expiry given to entries from plain files (``Expiry/default``: the disk's default
    /// expiration). Records keep their own.
    public var expiry: Expiry = .default

    /// Describes a directory of preloaded entries.
    /// - Parameters:
    ///   - directory: The directory.
    ///   - format: How its files hold entries (``Format/files``).
    ///   - mode: When they reach the cache (``Mode/copyIfMissing``).
    public init(directory: URL, format: Format = .files, mode: Mode = .copyIfMissing) {
        self.directory = directory
        self.format = format
        self.mode = mode
    }
}

/// What a ``HybridCache`` did with its ``PreloadedEntries`` at open.
public struct PreloadReport: Sendable, Hashable {
    /// A preloaded file that was skipped because it could not be used.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The file's path.
        public var path: String
        /// Why it was skipped.
        public var reason: String
        /// The path and the reason.
        public var description: String { "\(path): \(reason)" }
    }

    /// Keys imported into the cache (``PreloadedEntries/Mode/copyIfMissing``), in directory order.
    public var imported: [String] = []
    /// Keys left alone because the cache already held them (``PreloadedEntries/Mode/copyIfMissing``).
    public var alreadyPresent: [String] = []
    /// Keys available for reading through (``PreloadedEntries/Mode/readThrough`` with ``PreloadedEntries/Format/records``;
    /// plain files are looked up by name on demand and not listed).
    public var available: [String] = []
    /// Files skipped, with the reason. Never fatal.
    public var failures: [Failure] = []
}
