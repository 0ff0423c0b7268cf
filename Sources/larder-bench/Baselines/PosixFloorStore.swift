#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// The least work that keeps one file per entry: the key is the file name, inside one of 256
/// shard folders (picked by an FNV-1a hash of the key, made on first use as Larder does); a
/// store writes a temporary file and renames it; a load is open, fstat, one read, close. No
/// header, no checksum, no index, no key hashing: the floor for Larder's storage design.
final class PosixFloorStore: BenchStore, Sendable {
    private let root: String
    private let temporaryFolder: String
    private let counter = Atomic<UInt64>(0)

    init(directory: String) throws {
        root = directory
        temporaryFolder = directory + "/.tmp"
        for folder in [root, temporaryFolder] {
            guard mkdir(folder, 0o755) == 0 || errno == EEXIST else { throw BenchError("mkdir \(folder): errno \(errno)") }
        }
    }

    private static func hex(_ byte: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[byte >> 4], digits[byte & 15]])
    }

    private func folder(for key: String) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in key.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return root + "/" + Self.hex(Int(hash & 0xFF))
    }

    private func path(for key: String) -> String {
        folder(for: key) + "/" + key
    }

    func store(_ data: Data, forKey key: String) throws {
        let temporary = temporaryFolder + "/\(counter.wrappingAdd(1, ordering: .relaxed).oldValue)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BenchError("open \(temporary): errno \(errno)") }
        let ok = data.withUnsafeBytes { buffer -> Bool in
            var done = 0
            while done < buffer.count {
                let n = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 { if errno == EINTR { continue } else { return false } }
                done += n
            }
            return true
        }
        closeDescriptor(fd)
        guard ok else { throw BenchError("write \(key): errno \(errno)") }
        let folder = folder(for: key)
        var renamed = rename(temporary, folder + "/" + key) == 0
        if !renamed, errno == ENOENT, mkdir(folder, 0o755) == 0 || errno == EEXIST {
            renamed = rename(temporary, folder + "/" + key) == 0
        }
        guard renamed else { throw BenchError("rename \(key): errno \(errno)") }
    }

    func load(forKey key: String) throws -> Data? {
        let fd = open(path(for: key), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw BenchError("open \(key): errno \(errno)")
        }
        defer { closeDescriptor(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw BenchError("fstat \(key): errno \(errno)") }
        let size = Int(info.st_size)
        guard size > 0 else { return Data() }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        var done = 0
        while done < size {
            let n = read(fd, buffer + done, size - done)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                buffer.deallocate()
                throw BenchError("read \(key): errno \(errno)")
            }
            done += n
        }
        return Data(bytesNoCopy: buffer, count: size, deallocator: .custom { pointer, _ in pointer.deallocate() })
    }

    func close() {}
}

/// `close(2)`, named apart from the store's own `close()`.
private func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}
