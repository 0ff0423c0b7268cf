#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A record read from its file.
package struct RecordContents: Sendable {
    /// The validated header.
    package var header: RecordHeader
    /// The key stored in the record, when it stores one.
    package var storedKey: String?
    /// The payload, when it was asked for.
    package var payload: Data?
    /// The file's length in bytes.
    package var fileSize: Int
}

/// The outcome of reading a record file.
package enum RecordReadResult: Sendable {
    /// No file by that name.
    case missing
    /// The file failed validation.
    case corrupt(CorruptionReason)
    /// The record.
    case record(RecordContents)
}

/// Reads and writes record files through ``FileIO``: the only code that knows how a record is
/// laid out in a file (see `docs/FORMAT.md`).
package struct RecordFile: Sendable {
    package let io: FileIO

    package init(io: FileIO) { self.io = io }

    /// The stored key: `expected` itself when the bytes spell it (no new string), `nil` when they
    /// spell another key, and a decoded string when nothing was expected.
    static func storedKey(_ bytes: some Collection<UInt8>, expected: String?) -> String? {
        guard let expected else { return String(decoding: bytes, as: UTF8.self) }
        return bytes.elementsEqual(expected.utf8) ? expected : nil
    }

    /// Files up to this length are read with one `pread`, header and payload together.
    static let singleReadLimit = 64 * 1024

    /// Reads a record file.
    /// - Parameters:
    ///   - path: The file.
    ///   - readPayload: Whether to read the payload too, or only the header and stored key.
    ///   - verifyPayload: Whether to check the payload against its CRC-32 (when it has one).
    ///   - expectedKey: The key the caller looks for: a stored key that differs makes the record
    ///     `.corrupt(.badStoredKey)`, and one that matches is returned as this very string.
    ///   - expectedFileSize: The file's length as the caller last saw it (the index's, from when
    ///     the cache wrote or read it). A file that still has that length is read with one `pread`
    ///     and no `fstat`; otherwise the read starts over from the file's real length.
    /// - Returns: The record, `.missing`, or `.corrupt` with the reason. Allocates no more than
    ///   the file's real length (plus one byte), whatever its header claims.
    /// - Throws: ``Errno`` for failures other than a missing or malformed file.
    package func read(
        _ path: String, readPayload: Bool = true, verifyPayload: Bool = true, expectedKey: String? = nil,
        expectedFileSize: Int? = nil
    ) throws(Errno) -> RecordReadResult {
        let fd: Int32
        do {
            // O_NONBLOCK: a FIFO planted where a record should be must not hang the open.
            fd = try io.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch {
            switch error.rawValue {
            case ENOENT, ENOTDIR: return .missing
            case ELOOP: return .corrupt(.notARegularFile)
            default: throw error
            }
        }
        defer { io.close(fd) }

        // The index's length, when it knows one: read one byte more than it; exactly that many
        // bytes back means the file still has that length, and the fstat is saved. The length is
        // one the cache itself wrote or read, so the allocation is justified even unchecked.
        var known: (memory: UnsafeMutableRawPointer, size: Int)?
        if readPayload, let hint = expectedFileSize, hint >= RecordHeader.size,
           let memory = malloc(hint + 1) {
            let got = try? io.pread(fd, into: UnsafeMutableRawBufferPointer(start: memory, count: hint + 1), at: 0)
            if got == hint { known = (memory, hint) } else { free(memory) }
        }

        let fileSize: Int
        let wanted: Int
        let memory: UnsafeMutableRawPointer
        if let known {
            (memory, fileSize, wanted) = (known.memory, known.size, known.size)
        } else {
            let info = try io.fstat(fd)
            guard (info.st_mode & S_IFMT) == S_IFREG else { return .corrupt(.notARegularFile) }
            fileSize = Int(info.st_size)
            guard fileSize >= RecordHeader.size else { return .corrupt(.truncated) }

            // Records up to 64 KiB come in one read; larger ones have their header read and
            // checked against the file's length first, so that a garbage file costs no large
            // allocation.
            wanted = readPayload ? fileSize : min(fileSize, RecordHeader.size + 4096)
            if wanted > Self.singleReadLimit {
                var head = [UInt8](repeating: 0, count: RecordHeader.size)
                let got = try head.withUnsafeMutableBytes { b in
                    Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) }
                }.get()
                guard got == head.count else { return .corrupt(.truncated) }
                do { try RecordHeader.decode(head).validate(fileSize: UInt64(fileSize)) } catch { return .corrupt(error) }
            }
            // A valid header may still describe a file larger than memory (a sparse one): fail
            // the read with ENOMEM rather than trap in the allocator.
            guard let allocated = malloc(wanted) else { throw Errno(ENOMEM) }
            memory = allocated
            let n: Int
            do {
                n = try io.pread(fd, into: UnsafeMutableRawBufferPointer(start: memory, count: wanted), at: 0)
            } catch {
                free(memory)
                throw error
            }
            guard n == wanted else {
                free(memory)
                return .corrupt(.truncated)
            }
        }
        let buffer = UnsafeMutableRawBufferPointer(start: memory, count: wanted)
        var handedOff = false
        defer { if !handedOff { free(memory) } }

        let header: RecordHeader
        do {
            header = try RecordHeader.decode(UnsafeRawBufferPointer(buffer))
            try header.validate(fileSize: UInt64(fileSize))
        } catch {
            return .corrupt(error)
        }
        var storedKey: String?
        if header.flags.contains(.storedKey) {
            let keyEnd = header.payloadOffset
            if keyEnd > wanted {
                // A key longer than the first read: fetch it alone.
                var keyBytes = [UInt8](repeating: 0, count: header.storedKeyLength)
                let got = try keyBytes.withUnsafeMutableBytes { b in
                    Result { () throws(Errno) in try io.pread(fd, into: b, at: RecordHeader.size) }
                }.get()
                guard got == keyBytes.count else { return .corrupt(.truncated) }
                guard (try? keyBytes.withUnsafeBytes { try header.validateStoredKey($0) }) != nil else {
                    return .corrupt(.badStoredKey)
                }
                guard let key = Self.storedKey(keyBytes, expected: expectedKey) else { return .corrupt(.badStoredKey) }
                storedKey = key
            } else {
                let keyBytes = UnsafeRawBufferPointer(rebasing: buffer[RecordHeader.size ..< keyEnd])
                do { try header.validateStoredKey(keyBytes) } catch { return .corrupt(error) }
                guard let key = Self.storedKey(keyBytes, expected: expectedKey) else { return .corrupt(.badStoredKey) }
                storedKey = key
            }
        }
        guard readPayload else {
            return .record(RecordContents(header: header, storedKey: storedKey, payload: nil, fileSize: fileSize))
        }
        let payloadBuffer = UnsafeRawBufferPointer(rebasing: buffer[header.payloadOffset ..< fileSize])
        if verifyPayload {
            do { try header.validatePayload(payloadBuffer) } catch { return .corrupt(error) }
        }
        // Hand the buffer to Data without copying the payload.
        handedOff = true
        let base = buffer.baseAddress!
        let payload = payloadBuffer.count == 0
            ? Data()
            : Data(
                bytesNoCopy: base + header.payloadOffset, count: payloadBuffer.count,
                deallocator: .custom { _, _ in free(base) })
        if payloadBuffer.count == 0 { free(memory) }
        return .record(RecordContents(header: header, storedKey: storedKey, payload: payload, fileSize: fileSize))
    }

    /// Writes a record to `temporaryPath`, then renames it to `path`, creating `path`'s folder
    /// when it is missing. Either the old file or the new one is at `path` at every moment.
    /// With `sync`, the file is synced before the rename; the folder is not (the caller syncs it
    /// with ``syncFolder(_:)`` once it has recorded that the new file is in place, since a failure
    /// then no longer means the old record is there).
    /// - Returns: The new file's length.
    package func write(
        header: RecordHeader, keyBytes: [UInt8], payload: Data, temporaryPath: String, path: String,
        folder: String, sync: Bool
    ) throws(Errno) -> Int {
        let fd: Int32
        do {
            fd = try io.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        } catch where error.rawValue == ENOENT {
            // The temporary folder is gone (the cache's folder was deleted and made again while
            // the cache ran): make it again, but not the root, which someone chose to remove.
            if let slash = temporaryPath.lastIndex(of: "/") { try io.mkdir(String(temporaryPath[..<slash])) }
            fd = try io.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        }
        var fileSize = 0
        do {
            fileSize = header.payloadOffset + payload.count
            let prefixSize = header.payloadOffset
            // Small records go out in one write; large payloads are written from their own storage.
            let single = payload.count <= 64 * 1024
            let buffer = UnsafeMutableRawBufferPointer.allocate(
                byteCount: single ? fileSize : prefixSize, alignment: 16)
            defer { buffer.deallocate() }
            header.encode(into: buffer)
            if !keyBytes.isEmpty {
                keyBytes.withUnsafeBytes { buffer.baseAddress!.advanced(by: RecordHeader.size).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            if single {
                if !payload.isEmpty {
                    payload.withUnsafeBytes { buffer.baseAddress!.advanced(by: prefixSize).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                }
                try io.write(fd, UnsafeRawBufferPointer(buffer))
            } else {
                try io.write(fd, UnsafeRawBufferPointer(buffer))
                try payload.withUnsafeBytes { b in Result { () throws(Errno) in try io.write(fd, b) } }.get()
            }
            if sync { try io.fsync(fd) }
        } catch {
            io.close(fd)
            _ = try? io.unlink(temporaryPath)
            throw error
        }
        io.close(fd)
        do {
            do {
                try io.rename(temporaryPath, path)
            } catch where error.rawValue == ENOENT && folder != "" {
                try io.mkdir(folder)
                try io.rename(temporaryPath, path)
            }
        } catch {
            _ = try? io.unlink(temporaryPath)
            throw error
        }
        return fileSize
    }

    /// Overwrites a record's header in place (64 bytes at offset 0), leaving key and payload alone.
    /// - Returns: `false` when the file no longer exists.
    package func rewriteHeader(_ header: RecordHeader, at path: String, sync: Bool) throws(Errno) -> Bool {
        let fd: Int32
        do {
            fd = try io.open(path, O_WRONLY | O_NOFOLLOW)
        } catch where error.rawValue == ENOENT {
            return false
        }
        defer { io.close(fd) }
        try header.encoded().withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: 0) } }.get()
        if sync { try io.fsync(fd) }
        return true
    }

    /// `fsync` on a folder, so that a rename in it survives power loss.
    package func syncFolder(_ folder: String) throws(Errno) {
        let fd = try io.open(folder, O_RDONLY | O_DIRECTORY)
        defer { io.close(fd) }
        try io.fsync(fd)
    }
}
