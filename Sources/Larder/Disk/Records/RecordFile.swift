import Foundation

/// A record's file name and its ``NameHash``, hashed once per read for every use of the name.
struct KeptName {
    var name: RecordName
    var hash: UInt64
}

/// Reads and writes record files through ``FileIO``: the only code that knows how a record is
/// laid out in a file (see `docs/FORMAT.md`).
///
/// A class, though it holds nothing mutable: a read's closures capture it, and copying a
/// reference costs one retain where copying its fields costs one for each reference they hold.
package final class RecordFile: Sendable {
    package let io: FileIO
    /// The largest payload read, in bytes (``DiskCacheOptions/maximumRecordSize``): a record
    /// claiming more is `.corrupt(.tooLarge)` and nothing is allocated for it.
    package let maximumPayloadSize: Int

    /// Descriptors kept open between reads of hot records (`nil`: every read opens its file).
    package let descriptors: DescriptorCache?

    package init(io: FileIO, maximumPayloadSize: Int = 1 << 30, descriptors: DescriptorCache? = nil) {
        self.io = io
        self.maximumPayloadSize = maximumPayloadSize
        self.descriptors = descriptors
    }

    /// The stored key: `expected` itself when the bytes spell it (no new string), `nil` when they
    /// spell another key, and a decoded string when nothing was expected.
    static func storedKey(_ bytes: UnsafeRawBufferPointer, expected: String?) -> String? {
        guard let expected else { return String(decoding: bytes, as: UTF8.self) }
        return ExactName.spells(bytes, expected) ? expected : nil
    }

    /// Files up to this length are read with one `pread`, header and payload together.
    static let singleReadLimit = 64 * 1024

    /// What a failed open of a record file means: no record, a corrupt one, or a real failure.
    private static func failedOpen(_ error: Errno) throws(Errno) -> RecordReadResult {
        switch error {
        // A record in a folder the cache does not trust (``FolderTrust``) is not read: a miss.
        case .noSuchFileOrDirectory, .notADirectory, .untrusted: return .missing
        case .tooManySymbolicLinks, .notARegularFile, .noSuchDeviceOrAddress, .isADirectory:
            return .foreign
        default: throw error
        }
    }

    /// What a header that fails validation makes of its file: no record at all without the
    /// magic; a record this version does not read when it sets flags it does not know (a newer
    /// Larder's, whose payload may not be what the bytes say) or SPT's stream-incomplete flag,
    /// which is left as a file without the magic is; else a corrupt record.
    static func refused(_ error: CorruptionReason) -> RecordReadResult {
        error == .badMagic || error == .unsupportedFlags ? .foreign : .corrupt(error)
    }

    /// Whether the file at `path` starts with a sound header whose flags this version does not
    /// read (``CorruptionReason/unsupportedFlags``): what `larder ls` and `verify` list as
    /// unsupported rather than foreign.
    package func hasUnsupportedFlags(_ path: String) -> Bool {
        guard let (fd, _) = try? io.openForReading(path) else { return false }
        defer { io.close(fd) }
        var head = [UInt8](repeating: 0, count: RecordHeader.size)
        let got = head.withUnsafeMutableBytes { b in (try? io.pread(fd, into: b, at: 0)) ?? 0 }
        guard got == head.count else { return false }
        do {
            _ = try RecordHeader.decode(head)
            return false
        } catch {
            return error == .unsupportedFlags
        }
    }

    /// Opens a record file for reading and runs `body` on it; a missing file is `.missing`, and
    /// anything but a regular file (a link, a FIFO, a socket, a folder) is `.foreign`.
    /// The open never follows a link and never blocks.
    private func withRecordFile(_ path: String, _ body: (Int32, FileInfo) throws(Errno) -> RecordReadResult) throws(Errno)
        -> RecordReadResult
    {
        let fd: Int32
        let info: FileInfo
        do {
            (fd, info) = try io.openForReading(path)
        } catch {
            return try Self.failedOpen(error)
        }
        defer { io.close(fd) }
        return try body(fd, info)
    }

    /// Reads a record file.
    /// - Parameters:
    ///   - path: The file.
    ///   - readPayload: Whether to read the payload too, or only the header and stored key.
    ///   - verifyPayload: Whether to check the payload against its CRC-32 (when it has one).
    ///   - expectedKey: The key the caller looks for: a stored key that differs makes the record
    ///     `.corrupt(.badStoredKey)`, and one that matches is returned as this very string.
    ///   - expectedFileSize: The file's length as the caller last saw it (the index's, from when
    ///     the cache wrote or read it). A file that still has that length is one the cache wrote
    ///     or has read, and is read without the sparse-file check.
    ///   - layout: The cache's folder layout, by which a read of a known length opens the file
    ///     `name` straight beneath the root's descriptor (``FolderLayout/withRelativePath(for:_:)``);
    ///     `nil`: it opens `path`.
    ///   - name: The record's file name, under which a read of a known length (`expectedFileSize`)
    ///     reuses or keeps its descriptor in ``descriptors``; the caller holds the name's key lock
    ///     (see ``DescriptorCache``). `nil`: the file is opened and closed.
    ///   - nameHash: `name`'s ``NameHash``, when the caller has it already (its key lock's stripe).
    /// - Returns: The record, `.missing`, `.foreign`, or `.corrupt` with the reason. Allocates no more than
    ///   the file's real length, whatever its header claims, and nothing for a payload above
    ///   ``maximumPayloadSize`` or a file that claims far more bytes than its blocks hold
    ///   (``FileInfo/looksSparse``): both are `.corrupt(.tooLarge)`.
    /// - Throws: ``Errno`` for failures other than a missing or malformed file.
    ///   The path is only computed when the file is opened: a read through a kept descriptor
    ///   needs none.
    package func read(
        _ path: @autoclosure () -> String, readPayload: Bool = true, verifyPayload: Bool = true, expectedKey: String? = nil,
        expectedFileSize: Int? = nil, beneath layout: FolderLayout? = nil, keptAs name: RecordName? = nil, nameHash: UInt64? = nil
    ) throws(Errno) -> RecordReadResult {
        if readPayload, let hint = expectedFileSize, hint >= RecordHeader.size,
            hint - RecordHeader.size - RecordHeader.maximumKeyLength <= maximumPayloadSize
        {
            let kept = name.map { KeptName(name: $0, hash: nameHash ?? $0.hash) }
            let wanted = KeptRecord.Read(fileSize: hint, verifyPayload: verifyPayload, expectedKey: expectedKey)
            if let kept, let descriptors, let found = descriptors.borrow(kept.name, hash: kept.hash, serving: wanted) {
                switch found {
                case .record(let contents):
                    return .record(contents)
                case .descriptor(let loan):
                    defer { descriptors.giveBack(loan.fd) }
                    if let result = try readKept(loan, hint, as: kept, verifyPayload: verifyPayload, expectedKey: expectedKey) {
                        return result
                    }
                    // Removed, replaced or resized behind the cache's back: open whatever is there now.
                    descriptors.retire(kept.name.string)
                }
            }
            return try readKnownLength(
                path, layout, hint, verifyPayload: verifyPayload, expectedKey: expectedKey, keptAs: kept)
        }
        return try withRecordFile(path()) { (fd, info) throws(Errno) in
            try read(
                fd: fd, info: info, readPayload: readPayload, verifyPayload: verifyPayload, expectedKey: expectedKey,
                expectedFileSize: expectedFileSize)
        }
    }

    /// The hot path of a hit the index knows: open, then read one byte more than the length the
    /// cache wrote or read, in one `pread`. Exactly that many bytes back proves the file still has that length,
    /// and that it is a regular file (a positioned read of a FIFO fails with `ESPIPE`, of a
    /// folder with `EISDIR`), so no `fstat` is needed. Anything else starts over with one.
    /// A valid record read is offered to ``descriptors`` under `name`, which may keep its descriptor.
    private func readKnownLength(
        _ path: () -> String, _ layout: FolderLayout?, _ length: Int, verifyPayload: Bool, expectedKey: String?,
        keptAs kept: KeptName?
    ) throws(Errno) -> RecordReadResult {
        let fd: Int32
        do {
            if let layout, let kept {
                fd = try layout.withRelativePath(for: kept.name) { (relative, isNested) throws(Errno) in
                    try io.open(beneathRoot: relative, isNested: isNested, orPath: path, O_RDONLY)
                }
            } else {
                fd = try io.open(path(), O_RDONLY)
            }
        } catch {
            return try Self.failedOpen(error)
        }
        var isKept = false
        defer { if !isKept { io.close(fd) } }
        guard let memory = RawMemory.allocate(length + 1) else { throw .noMemory }
        let got: Int
        do {
            // One call: the loop of `pread(_:into:at:)` would make a second to see the end of file.
            got = try io.preadOnce(fd, into: UnsafeMutableRawBufferPointer(start: memory, count: length + 1), at: 0)
        } catch {
            RawMemory.free(memory)
            if error == .illegalSeek || error == .isADirectory { return .foreign }
            throw error
        }
        if got == length {
            let result = try parse(
                memory, count: length, of: fd, fileSize: length, readPayload: true, verifyPayload: verifyPayload, expectedKey: expectedKey)
            if case .record = result, let kept, let descriptors { isKept = descriptors.keep(fd, as: kept.name, hash: kept.hash) }
            return result
        }
        RawMemory.free(memory)
        let info = try io.info(fd)
        guard info.kind == .regular else { return .foreign }
        return try read(
            fd: fd, info: info, readPayload: true, verifyPayload: verifyPayload, expectedKey: expectedKey, expectedFileSize: nil)
    }

    /// A read of a known length through a kept descriptor whose kept record, if any, did not
    /// answer it (``read(_:readPayload:verifyPayload:expectedKey:expectedFileSize:beneath:keptAs:nameHash:)``
    /// serves one that does with no system call: the cache owns its folder, so its own stores,
    /// removals and collections retire the descriptor and its record before they return, and the
    /// directory lock makes this instance the folder's only writer; a file changed behind its
    /// back breaks that contract, see ``DiskCacheOptions/maximumPayloadMemory``). One `pread` of
    /// one byte more than `length`, whose getting exactly `length` bytes proves the file still
    /// has that length, and whose record is offered to be kept; when the loan says a check is due
    /// (``DescriptorCache/recheckInterval``), an `fstat` first, which proves the file still has
    /// a name (a link count above 0: not removed or renamed over since it was kept; it also lets
    /// a purged file's descriptor go).
    /// - Returns: The record, or `.corrupt`; `nil` when the file is not the one kept any more.
    private func readKept(
        _ loan: DescriptorCache.Loan, _ length: Int, as name: KeptName, verifyPayload: Bool, expectedKey: String?
    ) throws(Errno) -> RecordReadResult? {
        let fd = loan.fd
        if loan.needsCheck {
            let info = try io.info(fd)
            guard info.linkCount > 0, info.size == length else { return nil }
        }
        guard let memory = try readFromStart(fd, length, provingLength: true) else { return nil }
        let result = try parse(
            memory, count: length, of: fd, fileSize: length, readPayload: true, verifyPayload: verifyPayload, expectedKey: expectedKey)
        if case .record(let contents) = result, let descriptors, descriptors.payloadCapacity > 0 {
            descriptors.keepRecord(
                KeptRecord(contents: contents, isVerified: verifyPayload), readThrough: fd, as: name.name, hash: name.hash)
        }
        return result
    }

    /// Checks a record file the way ``read(_:readPayload:verifyPayload:expectedKey:expectedFileSize:beneath:keptAs:nameHash:)``
    /// does with the payload verified, but streams the payload through CRC-32 in chunks of
    /// `chunkSize` bytes instead of reading it into memory (`larder verify`).
    /// - Returns: The record without its payload, `.missing`, or `.corrupt` with the reason.
    /// - Complexity: O(*n*) in the payload's length; memory O(`chunkSize`).
    package func verify(_ path: String, expectedKey: String? = nil, chunkSize: Int = 1 << 20) throws(Errno) -> RecordReadResult {
        try withRecordFile(path) { (fd, info) throws(Errno) in
            let result = try read(
                fd: fd, info: info, readPayload: false, verifyPayload: false, expectedKey: expectedKey, expectedFileSize: nil)
            guard case .record(let contents) = result, let expected = contents.header.payloadChecksum else { return result }
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, chunkSize), alignment: 16)
            defer { chunk.deallocate() }
            var offset = contents.header.payloadOffset
            var crc: UInt32 = 0
            while offset < contents.fileSize {
                let wanted = min(chunk.count, contents.fileSize - offset)
                let got = try io.pread(fd, into: UnsafeMutableRawBufferPointer(rebasing: chunk[0 ..< wanted]), at: offset)
                guard got == wanted else { return .corrupt(.truncated) }
                crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: chunk[0 ..< got]), seed: crc)
                offset += got
            }
            return crc == expected ? result : .corrupt(.badPayloadChecksum)
        }
    }

    /// Reads the record open at `fd`, whose `fstat` is `info` (a regular file).
    private func read(
        fd: Int32, info: FileInfo, readPayload: Bool, verifyPayload: Bool, expectedKey: String?, expectedFileSize: Int?
    ) throws(Errno) -> RecordReadResult {
        // A file someone the cache does not trust owns, or may write, can change under it at any
        // time: a miss, and left where it is (a store renames a new file over it). Files the
        // cache writes, and files it has read this way, are its user's and no one else can
        // write them, so a read of a length it knows (`readKnownLength`) needs no `fstat`.
        guard io.isTrusted(info) else { return .missing }
        let fileSize = info.size
        guard fileSize >= RecordHeader.size else {
            // Shorter than a header: a torn record if it starts with the magic, else not a record.
            var magic: UInt32 = 0
            let got = try withUnsafeMutableBytes(of: &magic) { b in Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) } }.get()
            return got == 4 && UInt32(littleEndian: magic) == RecordHeader.magic ? .corrupt(.truncated) : .foreign
        }
        // Longer than any header, key and allowed payload together: nothing more to read.
        guard fileSize - RecordHeader.size - RecordHeader.maximumKeyLength <= maximumPayloadSize else { return .corrupt(.tooLarge) }
        // A length the cache did not write itself, and far above what the file's blocks hold: a
        // sparse file, whose holes would cost memory for bytes that are not on disk.
        if readPayload, fileSize != expectedFileSize, info.looksSparse { return .corrupt(.tooLarge) }

        // Records up to 64 KiB come in one read; larger ones have their header read and checked
        // against the file's length first, so that a garbage file costs no large allocation.
        let wanted = readPayload ? fileSize : min(fileSize, RecordHeader.size + 4096)
        if wanted > Self.singleReadLimit {
            var head = [UInt8](repeating: 0, count: RecordHeader.size)
            let got = try head.withUnsafeMutableBytes { b in
                Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) }
            }.get()
            guard got == head.count else { return .corrupt(.truncated) }
            do {
                let header = try RecordHeader.decode(head)
                try header.validate(fileSize: UInt64(fileSize))
                guard header.payloadSizeBytes <= UInt64(maximumPayloadSize) else { return .corrupt(.tooLarge) }
            } catch {
                return Self.refused(error)
            }
        }
        // A valid header may still describe a file larger than memory: fail the read with
        // ENOMEM rather than trap in the allocator.
        guard let memory = try readFromStart(fd, wanted) else { return .corrupt(.truncated) }
        return try parse(
            memory, count: wanted, of: fd, fileSize: fileSize, readPayload: readPayload, verifyPayload: verifyPayload,
            expectedKey: expectedKey, checksHoles: fileSize != expectedFileSize)
    }

    /// The first `count` bytes of `fd`, in memory from `RawMemory.allocate(_:)` that the caller
    /// then owns; `nil` (nothing to free) when fewer bytes arrived. With `provingLength`, one
    /// `pread` of one byte more, and `nil` too when the file is longer than `count`: exactly
    /// `count` bytes back proves its length without an `fstat`.
    /// - Throws: `Errno.noMemory` when the memory cannot be had, or the read's error.
    private func readFromStart(_ fd: Int32, _ count: Int, provingLength: Bool = false) throws(Errno) -> UnsafeMutableRawPointer? {
        let asked = provingLength ? count + 1 : count
        guard let memory = RawMemory.allocate(asked) else { throw .noMemory }
        let got: Int
        do {
            let buffer = UnsafeMutableRawBufferPointer(start: memory, count: asked)
            got = try provingLength ? io.preadOnce(fd, into: buffer, at: 0) : io.pread(fd, into: buffer, at: 0)
        } catch {
            RawMemory.free(memory)
            throw error
        }
        guard got == count else {
            RawMemory.free(memory)
            return nil
        }
        return memory
    }

    /// Validates and decodes the first `count` bytes of a record file of `fileSize` bytes, read
    /// from `fd` into `memory` (from `RawMemory.allocate(_:)`), which it takes over: freed, or
    /// handed to the payload's `Data`.
    private func parse(
        _ memory: UnsafeMutableRawPointer, count wanted: Int, of fd: Int32, fileSize: Int, readPayload: Bool, verifyPayload: Bool,
        expectedKey: String?, checksHoles: Bool = false
    ) throws(Errno) -> RecordReadResult {
        let buffer = UnsafeMutableRawBufferPointer(start: memory, count: wanted)
        var handedOff = false
        defer { if !handedOff { RawMemory.free(memory) } }

        let header: RecordHeader
        do {
            header = try RecordHeader.decode(UnsafeRawBufferPointer(buffer))
            try header.validate(fileSize: UInt64(fileSize))
        } catch {
            // No magic: not a damaged record but a file that never was one.
            return Self.refused(error)
        }
        guard header.payloadSizeBytes <= UInt64(maximumPayloadSize) else { return .corrupt(.tooLarge) }
        // A key region with a hole in it (in a file of a length the cache did not write or read
        // itself) is refused as a sparse payload is: its bytes are not on disk. One `lseek`, for
        // keys that reach past the first block (`RecordHeader.sparseKeyAllowance`) only.
        if checksHoles, header.payloadOffset > RecordHeader.sparseKeyAllowance, let hole = io.firstHole(fd),
            hole < header.payloadOffset
        {
            return .corrupt(.tooLarge)
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
                guard let key = keyBytes.withUnsafeBytes({ Self.storedKey($0, expected: expectedKey) }) else {
                    return .corrupt(.badStoredKey)
                }
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
        guard payloadBuffer.count > 0 else {
            return .record(RecordContents(header: header, storedKey: storedKey, payload: Data(), fileSize: fileSize))
        }
        // Hand the buffer to Data without copying the payload. The buffer's start goes in the
        // bytes just before the payload (the header's or key's, decoded by now), where the
        // deallocator finds it: it captures nothing, so Data allocates no context for it.
        handedOff = true
        let base = buffer.baseAddress!
        let payloadStart = base + header.payloadOffset
        payloadStart.storeBytes(of: base, toByteOffset: -MemoryLayout<UnsafeMutableRawPointer>.size, as: UnsafeMutableRawPointer.self)
        let payload = Data(bytesNoCopy: payloadStart, count: payloadBuffer.count, deallocator: .custom(Self.freePayloadBuffer))
        return .record(RecordContents(header: header, storedKey: storedKey, payload: payload, fileSize: fileSize))
    }

    /// Frees the buffer that a payload `Data` made by `parse` lies in, whose start `parse` stored
    /// in the 8 bytes before the payload.
    private static func freePayloadBuffer(_ payload: UnsafeMutableRawPointer, _: Int) {
        RawMemory.free(payload.loadUnaligned(fromByteOffset: -MemoryLayout<UnsafeMutableRawPointer>.size, as: UnsafeMutableRawPointer.self))
    }
}
