#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error thrown by a Larder cache: what went wrong, and to which key or path.
///
/// Compare ``code`` to tell errors apart:
/// ```swift
/// do { try cache.store(data, forKey: "../x") }
/// catch let error as CacheError where error.code == .invalidKey { ... }
/// ```
public struct CacheError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. New codes may be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: Hashable, Sendable {
            case invalidKey, invalidOptions, invalidArgument, directoryInUse, ioFailure, diskFull, notFound
            case keyEncodingMismatch, readOnly, encodingFailed, decodingFailed
            case cancelled, unsupportedFormat, closed, unsafeDirectory, loadFailed, remoteFailure, notACache
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The key cannot be stored under the cache's key encoding (for example, it is not a safe file name).
        public static let invalidKey = Code(.invalidKey)
        /// An option is out of range (a negative limit, a zero interval, ...).
        public static let invalidOptions = Code(.invalidOptions)
        /// A call's argument is out of range: an ``Expiry/seconds(_:)`` that is zero, negative or
        /// not finite, a negative cost.
        public static let invalidArgument = Code(.invalidArgument)
        /// Another cache instance, in this process or another, holds the directory for writing.
        public static let directoryInUse = Code(.directoryInUse)
        /// A file-system call failed; ``CacheError/errno`` says why.
        public static let ioFailure = Code(.ioFailure)
        /// The volume is full, even after the cache freed what it could.
        public static let diskFull = Code(.diskFull)
        /// The key or path does not exist.
        public static let notFound = Code(.notFound)
        /// The directory was created with a different key encoding than the one requested.
        public static let keyEncodingMismatch = Code(.keyEncodingMismatch)
        /// The cache was opened read-only and the call would change it.
        public static let readOnly = Code(.readOnly)
        /// A value could not be encoded.
        public static let encodingFailed = Code(.encodingFailed)
        /// Stored bytes could not be decoded into the requested type.
        public static let decodingFailed = Code(.decodingFailed)
        /// The task was cancelled before the work started.
        public static let cancelled = Code(.cancelled)
        /// The directory's metadata names a format this version cannot read.
        public static let unsupportedFormat = Code(.unsupportedFormat)
        /// The cache was closed.
        public static let closed = Code(.closed)
        /// The cache folder, or one of Larder's own files in it, is not safe to use: the folder
        /// belongs to another user or is writable by group or others (unless
        /// ``DiskCacheOptions/sharing`` allows it), or the lock file or metadata is a link, a FIFO,
        /// a folder, has other links, or belongs to another user.
        public static let unsafeDirectory = Code(.unsafeDirectory)
        /// The loader of a load-through read (`HybridCache.value(forKey:expiry:staleWindows:orLoad:)`)
        /// threw; ``CacheError/underlying`` holds what it threw.
        public static let loadFailed = Code(.loadFailed)
        /// A remote store (``RemoteStore``) failed: it could not be reached, timed out, or
        /// answered with an error. A ``HybridCache`` never throws it: it serves from its local
        /// tiers instead (fail open) and counts the failure.
        public static let remoteFailure = Code(.remoteFailure)
        /// The folder holds files but is not a cache: it has no Larder metadata (`.larder`) and no
        /// file that is a valid SPTPersistentCache record where a record goes. A writer refuses it
        /// (unless ``DiskCacheOptions/adoptsForeignFolder`` is set), so that pointing a cache at the
        /// wrong folder (a home folder, a folder of documents) changes nothing in it.
        public static let notACache = Code(.notACache)

        /// The code's name, as in `invalidKey`.
        public var description: String { "\(wrapped)" }
    }

    /// The kind of failure.
    public var code: Code
    /// A sentence that names what was wrong.
    public var message: String
    /// The key concerned, when there is one.
    public var key: String?
    /// The file or directory concerned, when there is one.
    public var path: String?
    /// The underlying `errno`, for file-system failures.
    public var errno: Int32?
    /// The process that holds the directory, for ``Code/directoryInUse``.
    public var holderPID: Int32?
    /// The error that caused this one, for encoding and decoding failures and for
    /// ``Code/loadFailed`` (what the loader threw).
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: A sentence naming what was wrong.
    ///   - key: The key concerned, if any.
    ///   - path: The path concerned, if any.
    ///   - errno: The underlying `errno`, if any.
    ///   - holderPID: The process holding the directory, for ``Code/directoryInUse``.
    ///   - underlying: The error that caused this one, if any.
    public init(
        _ code: Code, _ message: String, key: String? = nil, path: String? = nil,
        errno: Int32? = nil, holderPID: Int32? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.key = key
        self.path = path
        self.errno = errno
        self.holderPID = holderPID
        self.underlying = underlying
    }

    /// The code, the message, then what it concerns: the key (quoted and escaped, as in a Swift
    /// string literal), the path, and the errno's number and text, where there are some.
    ///
    /// For example `ioFailure: cannot open the lock file (path /var/cache/app/.lock, errno 13:
    /// Permission denied)` or `loadFailed: the loader failed: timedOut (key "avatar:42")`.
    public var description: String {
        var concerns: [String] = []
        if let key { concerns.append("key \(key.debugDescription)") }
        if let path { concerns.append("path \(path)") }
        if let errno { concerns.append("errno \(errno): \(String(cString: strerror(errno)))") }
        return concerns.isEmpty ? "\(code): \(message)" : "\(code): \(message) (\(concerns.joined(separator: ", ")))"
    }
}
