import Foundation
import Larder

/// What the disk and concurrency suites need from a store: put bytes under a key, get them back.
///
/// Each implementation is opened on its own empty folder; `close()` flushes whatever it keeps
/// in memory, so that the folder can be reopened or removed.
protocol BenchStore: AnyObject {
    /// Stores `data` under `key`, replacing anything there.
    func store(_ data: Data, forKey key: String) throws
    /// The bytes stored under `key`, or `nil`.
    func load(forKey key: String) throws -> Data?
    /// Releases the store.
    func close()
}

/// `DiskCache` behind the ``BenchStore`` protocol.
final class LarderStore: BenchStore, Sendable {
    let cache: DiskCache

    /// Opens a `DiskCache` on `directory`, with a size limit, eviction policy and sharing of the
    /// folder with other writers when given (otherwise from the environment, see below).
    init(
        directory: String, verifiesPayloadChecksum: Bool = true, sizeLimit: Int? = nil, policy: DiskEvictionPolicy? = nil,
        sharesFolder: Bool? = nil
    ) throws {
        var options = DiskCacheOptions(directory: URL(fileURLWithPath: directory, isDirectory: true))
        options.verifiesPayloadChecksum = verifiesPayloadChecksum
        // For experiments with the bound of kept descriptors (default: the cache's own).
        if let value = ProcessInfo.processInfo.environment["LARDER_BENCH_OPEN_FILES"], let limit = Int(value) {
            options.maximumOpenFiles = limit
        }
        // And with a size limit (the bytes, none by default), under which the disk tier's
        // eviction policy (`DiskCacheOptions.policy`, `LARDER_BENCH_DISK_POLICY=lru` or `adaptive`)
        // keeps its order on every hit.
        if let value = ProcessInfo.processInfo.environment["LARDER_BENCH_SIZE_LIMIT"], let bytes = Int(value) {
            options.sizeLimit = bytes
        }
        if ProcessInfo.processInfo.environment["LARDER_BENCH_DISK_POLICY"] == "lru" { options.policy = .lru }
        // And with the bytes of records kept in memory beside them.
        if let value = ProcessInfo.processInfo.environment["LARDER_BENCH_PAYLOAD_MEMORY"], let bytes = Int(value) {
            options.maximumPayloadMemory = bytes
        }
        if let sizeLimit { options.sizeLimit = sizeLimit }
        if let policy { options.policy = policy }
        // And as one of several writers sharing the folder, or as one holding it alone, whatever
        // the default (the change log's cost to a writer alone: `LARDER_BENCH_SHARED_FOLDER=1`
        // against `=0`, same binary).
        switch ProcessInfo.processInfo.environment["LARDER_BENCH_SHARED_FOLDER"] {
        case "1": options.sharesFolderWithWriters = true
        case "0": options.sharesFolderWithWriters = false
        default: break
        }
        if let sharesFolder { options.sharesFolderWithWriters = sharesFolder }
        cache = try DiskCache(options: options)
    }

    func store(_ data: Data, forKey key: String) throws {
        try cache.store(data, forKey: key)
    }

    func load(forKey key: String) throws -> Data? {
        try cache.value(forKey: key)
    }

    func close() {
        cache.close()
    }
}

/// One implementation as the suites see it: a name and a way to open it on a folder.
struct BenchStoreKind: Sendable {
    var name: String
    var open: @Sendable (_ directory: String) throws -> any BenchStore

    static let larder = BenchStoreKind(name: "larder") { try LarderStore(directory: $0) }
    static let larderNoVerify = BenchStoreKind(name: "larder-noverify") {
        try LarderStore(directory: $0, verifiesPayloadChecksum: false)
    }
    static let posixFloor = BenchStoreKind(name: "posix-floor") { try PosixFloorStore(directory: $0) }
    static let sqlite = BenchStoreKind(name: "sqlite") { try SQLiteStore(directory: $0) }
    static let foundationNaive = BenchStoreKind(name: "foundation-naive") { try FoundationNaiveStore(directory: $0) }
}

/// A failure in a baseline, with what it was doing.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
