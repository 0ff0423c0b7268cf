import Foundation

/// A directory of entries shipped with the app (CacheHandler's `PreloadedCache`), and how a
/// ``HybridCache`` uses it.
///
/// ```swift
/// var options = HybridCacheOptions(directory: cachesURL)
/// options.preloaded = PreloadedEntries(directory: bundleURL.appending(path: "PreloadedCache"), format: .cacheHandler)
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
        /// CacheHandler's `PreloadedCache`: one file per entry at the top of the directory, named
        /// by the lowercase hex SHA-256 of its key's UTF-8 and holding the JSON
        /// `{"response": <value>}`; the payload is the exact JSON text of the value. An entry is
        /// found by its key through the hash, so ``Mode/copyIfMissing`` needs a disk tier with
        /// ``KeyEncoding/sha256`` keys (the default) and stores each entry under its file's name,
        /// without its key (see `DiskCache.importCacheHandlerFolder(at:)`). Files that are
        /// not entries (another name, not JSON, no `"response"`, links, FIFOs) are listed in
        /// ``PreloadReport/failures``; hidden files and folders are ignored.
        case cacheHandler
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
    /// The expiry given to entries from plain files and CacheHandler files, counted from when
    /// they reach the cache (an import, or a read through): ``Expiry/default`` (the disk's
    /// default expiration) for ``Format/files``; for ``Format/cacheHandler``,
    /// ``init(directory:format:mode:)`` sets `.seconds(518_400)`, CacheHandler's 6 days from the
    /// copy (it gives each copied file a fresh modification time). Records keep their own.
    public var expiry: Expiry

    /// Describes a directory of preloaded entries.
    /// - Parameters:
    ///   - directory: The directory.
    ///   - format: How its files hold entries (``Format/files``).
    ///   - mode: When they reach the cache (``Mode/copyIfMissing``).
    public init(directory: URL, format: Format = .files, mode: Mode = .copyIfMissing) {
        self.directory = directory
        self.format = format
        self.mode = mode
        self.expiry = format == .cacheHandler ? .seconds(TimeInterval(CacheHandlerFormat.expiration)) : .default
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
    /// For ``PreloadedEntries/Format/cacheHandler``, whose files do not hold their keys, the file
    /// names (each the SHA-256 of its key), oldest modification time first.
    public var imported: [String] = []
    /// Keys left alone because the cache already held them (``PreloadedEntries/Mode/copyIfMissing``);
    /// file names for ``PreloadedEntries/Format/cacheHandler``.
    public var alreadyPresent: [String] = []
    /// Keys available for reading through (``PreloadedEntries/Mode/readThrough`` with ``PreloadedEntries/Format/records``;
    /// plain files and CacheHandler files are looked up by key on demand and not listed).
    public var available: [String] = []
    /// Files skipped, with the reason. Never fatal.
    public var failures: [Failure] = []
}
