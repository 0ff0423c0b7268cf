import Foundation

/// A folder of record files or plain files that is not a cache (a bundle's preloaded entries),
/// opened for reading.
///
/// The folder is untrusted input, as a ``CacheHandlerFolder`` is: every path is resolved beneath
/// a descriptor of the folder by a rooted ``FileIO``, so no symbolic link (a file or a folder)
/// leads out of it and no FIFO blocks a read, and every read takes a size bound.
struct EntryFolder: Sendable {
    /// One record read from the folder: its key (the stored key, or else the file's name), payload
    /// (empty when not read), lifetime in seconds (0 for the cache's default) and whether it is locked.
    struct Record: Sendable {
        var key: String
        var payload: Data
        var ttl: UInt64
        var isLocked: Bool
    }

    /// The folder's path, without a trailing slash.
    let root: String
    private let io: FileIO

    /// Opens the folder (links in `path` itself are followed: the caller chose it).
    /// - Throws: ``Errno``: ``Errno/noSuchFileOrDirectory``, ``Errno/notADirectory``, ...
    init(path: String) throws(Errno) {
        root = DiskLayout(root: path).root
        io = try FileIO().rooted(at: root)
    }

    /// The paths of the non-hidden files in `folder` (the root when `nil`; and, when `recursive`,
    /// in its non-hidden subfolders), sorted so that imports happen in a stable order.
    func files(under folder: String? = nil, recursive: Bool) -> [String] {
        let folder = folder ?? root
        guard let listing = try? io.listDirectory(folder) else { return [] }
        var result: [String] = []
        for entry in listing.sorted(by: { $0.fileName < $1.fileName }) {
            // A name that is not UTF-8 is no record's (no key could name it): never opened.
            guard let name = entry.name, !name.hasPrefix(".") else { continue }
            let path = folder + "/" + name
            var isDirectory = entry.isDirectory
            if isDirectory == nil, let info = try? io.info(atPath: path) { isDirectory = info.kind == .directory }
            if isDirectory == true {
                if recursive { result += files(under: path, recursive: true) }
            } else {
                result.append(path)
            }
        }
        return result
    }

    /// The bytes of the plain file at `path`, at most `limit` of them.
    /// - Throws: ``Errno``, ``Errno/fileTooLarge`` beyond `limit`.
    func readFile(_ path: String, limit: Int) throws(Errno) -> [UInt8] {
        try io.readFile(path, limit: limit)
    }

    /// The record file at `path`, its payload checked against its checksum when read.
    /// - Returns: The record, or why the file is not one (a sentence for a report).
    func readRecord(_ path: String, readPayload: Bool) -> Result<Record, ReadFailure> {
        let result: RecordReadResult
        do {
            result = try RecordFile(io: io).read(path, readPayload: readPayload, verifyPayload: true)
        } catch {
            return .failure(ReadFailure("cannot read it: \(error)"))
        }
        switch result {
        case .missing:
            return .failure(ReadFailure("it is missing"))
        case .corrupt(let reason):
            return .failure(ReadFailure("not a valid record (\(reason))"))
        case .foreign:
            return .failure(ReadFailure("not a record (no record magic, or not a regular file)"))
        case .record(let contents):
            let name = String(path.split(separator: "/").last ?? "")
            return .success(
                Record(
                    key: contents.storedKey ?? name, payload: contents.payload ?? Data(), ttl: contents.header.ttl,
                    isLocked: contents.header.refCount > 0))
        }
    }

    /// Why a file is not a record, in words for a report.
    struct ReadFailure: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
