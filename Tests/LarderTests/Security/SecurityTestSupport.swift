#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import Larder

/// A temporary folder holding a cache root (`cache`, not created) and a sentinel tree beside it
/// (`sentinel`) that links planted in the root point into.
struct HostileFixture {
    let dir: TemporaryDirectory
    let root: String
    let sentinel: SentinelTree

    init(_ label: String) {
        dir = TemporaryDirectory(label)
        root = dir.path("cache")
        sentinel = SentinelTree(at: dir.path("sentinel"))
    }

    var url: URL { URL(fileURLWithPath: root, isDirectory: true) }

    func options(_ encoding: KeyEncoding = .verbatim, readOnly: Bool = false) -> DiskCacheOptions {
        var options = DiskCacheOptions(directory: url)
        options.keyEncoding = encoding
        options.isReadOnly = readOnly
        return options
    }

    /// The path of `key`'s record under `encoding`.
    func recordPath(_ key: String, _ encoding: KeyEncoding = .verbatim) -> String {
        DiskLayout(root: root).path(for: try! encoding.fileName(for: key))
    }

    func remove() { dir.remove() }
}

/// System calls that count the bytes `pread` and `read` return, to prove what was not read.
final class ReadCounter: Sendable {
    private let total = LarderMutex(0)
    var bytes: Int { total.withLock { $0 } }

    var calls: SystemCalls {
        var calls = SystemCalls.live
        calls.pread = { [self] fd, buffer, count, offset in
            let n = SystemCalls.live.pread(fd, buffer, count, offset)
            if n > 0 { total.withLock { $0 += n } }
            return n
        }
        return calls
    }
}

/// Whether `body` threw a ``CacheError`` with `code`.
func expectCacheError(
    _ code: CacheError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws(CacheError) -> Void
) {
    do {
        try body()
        Issue.record("no error; expected \(code). \(comment?.rawValue ?? "")", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == code, "\(error) \(comment?.rawValue ?? "")", sourceLocation: sourceLocation)
    }
}

/// A record file's bytes: header (and stored key when `key` is given), then `payload`.
func recordBytes(_ payload: [UInt8], key: String? = nil, ttl: UInt64 = 0, updateTime: UInt64 = 1_700_000_000) -> [UInt8] {
    let keyBytes = key.map { Array($0.utf8) } ?? []
    let header = RecordHeader(
        ttl: ttl, updateTimeSec: updateTime, payloadSizeBytes: UInt64(payload.count),
        payloadChecksum: CRC32.checksum(of: payload), storedKey: keyBytes)
    return header.encoded() + keyBytes + payload
}
