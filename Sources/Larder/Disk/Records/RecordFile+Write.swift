import Foundation

extension RecordFile {
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
        let fileSize = try writeTemporary(header: header, keyBytes: keyBytes, payload: payload, temporaryPath: temporaryPath, sync: sync)
        do {
            try moveIntoPlace(temporaryPath, path: path, folder: folder, sync: sync)
        } catch {
            _ = try? io.unlink(temporaryPath)
            throw error
        }
        return fileSize
    }

    /// The first half of ``write(header:keyBytes:payload:temporaryPath:path:folder:sync:)``:
    /// writes the record to `temporaryPath`, a name no other write uses, and with `sync` syncs
    /// it. Needs no lock of the record: nothing reads or replaces a temporary file. On failure
    /// the file is gone.
    /// - Returns: The file's length.
    package func writeTemporary(
        header: RecordHeader, keyBytes: [UInt8], payload: Data, temporaryPath: String, sync: Bool
    ) throws(Errno) -> Int {
        let fd: Int32
        do {
            fd = try io.createExclusively(temporaryPath)
        } catch let error where error == .noSuchFileOrDirectory {
            // The temporary folder is gone: make it again. When the whole root is gone, this
            // fails too, and the cache makes its folder again (`DiskCache+Recovery.swift`).
            if let slash = temporaryPath.lastIndex(of: "/") { try io.mkdir(String(temporaryPath[..<slash])) }
            fd = try io.createExclusively(temporaryPath)
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
                keyBytes.withUnsafeBytes {
                    buffer.baseAddress!.advanced(by: RecordHeader.size).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                }
            }
            if single {
                if !payload.isEmpty {
                    payload.withUnsafeBytes {
                        buffer.baseAddress!.advanced(by: prefixSize).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
                    }
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
        return fileSize
    }

    /// The second half of ``write(header:keyBytes:payload:temporaryPath:path:folder:sync:)``:
    /// renames the file written by ``writeTemporary(header:keyBytes:payload:temporaryPath:sync:)``
    /// to `path`, making `folder` when it is missing. The caller holds the record's lock. On
    /// failure the temporary file is left for the caller, which may retry or remove it.
    package func moveIntoPlace(_ temporaryPath: String, path: String, folder: String, sync: Bool) throws(Errno) {
        // A shard folder made for this record: with `sync`, its parent is synced before the
        // rename, since syncing the shard folder afterwards keeps its entries but not the
        // folder's own entry in the root (the power-loss tests check it).
        func makeFolder() throws(Errno) {
            if try io.mkdir(folder), sync { try io.syncFolder(FileIO.parentFolder(of: folder)) }
        }
        do {
            try io.rename(temporaryPath, path)
        } catch let error where error == .noSuchFileOrDirectory && folder != "" {
            try makeFolder()
            try io.rename(temporaryPath, path)
        } catch let error
            where (error == .tooManySymbolicLinks || error == .notADirectory) && folder != ""
            && (try? io.info(atPath: folder))?.kind == .symbolicLink
        {
            // A link where the record's shard folder should be: the cache owns its folder,
            // so the link goes (never its target) and a real folder takes its place.
            try io.unlink(folder)
            try makeFolder()
            try io.rename(temporaryPath, path)
        }
    }

    /// Overwrites a record's header in place (64 bytes at offset 0), leaving key and payload alone.
    ///
    /// Only a file with one link, that the cache trusts (``FolderTrust``), is written: a hard link
    /// would carry the write to a file elsewhere (one outside the root, say), as the lock file's
    /// check guards against.
    /// - Returns: `false` when the file no longer exists, or was not written (a hard link, not a
    ///   regular file, not the cache's).
    package func rewriteHeader(_ header: RecordHeader, at path: String, sync: Bool) throws(Errno) -> Bool {
        let fd: Int32
        do {
            fd = try io.openForWriting(path)
        } catch let error where error == .noSuchFileOrDirectory || error == .notADirectory || error == .untrusted {
            return false
        } catch let error where error == .tooManySymbolicLinks || error == .notARegularFile || error == .noSuchDeviceOrAddress {
            // Replaced by something that is not a record since it was read: not written through.
            return false
        }
        defer { io.close(fd) }
        let info = try io.info(fd)
        guard info.linkCount == 1, io.isTrusted(info) else { return false }
        try header.encoded().withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: 0) } }.get()
        if sync { try io.fsync(fd) }
        return true
    }

    /// `fsync` on a folder, so that a rename in it survives power loss.
    package func syncFolder(_ folder: String) throws(Errno) {
        try io.syncFolder(folder)
    }
}
