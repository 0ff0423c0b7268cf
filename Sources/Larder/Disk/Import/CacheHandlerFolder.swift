import Foundation

/// A CacheHandler folder (`Caches/URLCache/`, or a bundle's `PreloadedCache/`) opened for
/// reading (see ``CacheHandlerFormat``).
///
/// The folder is untrusted input. Every path is resolved beneath a descriptor of the folder by a
/// rooted ``FileIO``, so no symbolic link (a file or a folder) leads out of it and no FIFO blocks
/// a read; each file is read with one bounded `pread` of the length `fstat` gave after the open,
/// so nothing is allocated beyond what the file holds, and nothing for a file above the limit.
package struct CacheHandlerFolder: Sendable {
    /// One entry read from the folder.
    package struct Entry: Sendable {
        /// The file's name: the SHA-256 of the key, in lowercase hex.
        package var name: String
        /// The exact bytes of the `response` value, as CacheHandler's `JSONSerialization` wrote them.
        package var payload: Data
        /// The file's modification time, in seconds since the Unix epoch.
        package var modificationTime: Double
    }

    /// What reading one file gave.
    package enum ReadResult: Sendable {
        /// The entry.
        case entry(Entry)
        /// Why the file is not an entry.
        case skipped(CacheHandlerImportReport.SkipReason)
    }

    /// The folder's path, without a trailing slash.
    package let root: String
    private let io: FileIO

    /// Opens the folder (links in `path` itself are followed: the caller chose it).
    /// - Throws: ``Errno``: ``Errno/noSuchFileOrDirectory``, ``Errno/notADirectory``, ...
    package init(path: String, calls: SystemCalls = .live) throws(Errno) {
        root = DiskLayout(root: path).root
        io = try FileIO(calls: calls).rooted(at: root)
    }

    /// The folder's path for a file name in it.
    package func path(of name: String) -> String { root + "/" + name }

    /// Lists the folder: the names of the files that may be entries, oldest modification time
    /// first (then by name), and the others, with the reason. Hidden names are left out of both.
    /// - Throws: ``Errno`` when the folder cannot be listed.
    /// - Complexity: One listing and one `lstat` per name; no file is opened.
    package func survey() throws(Errno) -> (candidates: [String], skipped: [CacheHandlerImportReport.SkippedFile]) {
        var candidates: [(name: String, modificationTime: Double)] = []
        var skipped: [CacheHandlerImportReport.SkippedFile] = []
        for entry in try io.listDirectory(root).sorted(by: { $0.fileName < $1.fileName }) {
            // A name that is not UTF-8 is no hashed name; it is reported (shown with U+FFFD for
            // the bytes that are not UTF-8) and never opened.
            guard let name = entry.name else {
                skipped.append(.init(name: String(decoding: entry.fileName.bytes, as: UTF8.self), reason: .notAHashedName))
                continue
            }
            if name.hasPrefix(".") { continue }
            let entry = (name: name, isDirectory: entry.isDirectory)
            let info: FileInfo
            do throws(Errno) {
                // Gone since the listing: nothing to import or report.
                guard let found = try io.info(atPath: path(of: entry.name)) else { continue }
                info = found
            } catch {
                skipped.append(.init(name: entry.name, reason: .unreadable(errno: error.rawValue)))
                continue
            }
            switch info.kind {
            case .directory: skipped.append(.init(name: entry.name, reason: .folder))
            case .symbolicLink: skipped.append(.init(name: entry.name, reason: .symbolicLink))
            case .fifo, .other: skipped.append(.init(name: entry.name, reason: .notARegularFile))
            case .regular:
                if CacheHandlerFormat.isEntryName(entry.name) {
                    candidates.append((entry.name, info.modificationTime))
                } else {
                    skipped.append(.init(name: entry.name, reason: .notAHashedName))
                }
            }
        }
        candidates.sort { ($0.modificationTime, $0.name) < ($1.modificationTime, $1.name) }
        return (candidates.map(\.name), skipped)
    }

    /// Reads the entry in the file `name`.
    /// - Parameters:
    ///   - name: The file's name in the folder.
    ///   - maximumPayloadSize: The largest response accepted, in bytes; the file may be
    ///     ``CacheHandlerFormat/wrapperAllowance`` bytes longer.
    ///   - vetting: Called with the open file's `fstat` before a byte is read; a reason it returns
    ///     skips the file unread (an expired entry).
    /// - Returns: The entry, or why it cannot be one.
    package func read(
        _ name: String, maximumPayloadSize: Int, vetting: (FileInfo) -> CacheHandlerImportReport.SkipReason? = { _ in nil }
    ) -> ReadResult {
        let fd: Int32
        let info: FileInfo
        do {
            (fd, info) = try io.openForReading(path(of: name))
        } catch {
            switch error {
            case .tooManySymbolicLinks: return .skipped(.symbolicLink)
            case .isADirectory: return .skipped(.folder)
            case .notARegularFile, .noSuchDeviceOrAddress: return .skipped(.notARegularFile)
            default: return .skipped(.unreadable(errno: error.rawValue))
            }
        }
        defer { io.close(fd) }
        if let reason = vetting(info) { return .skipped(reason) }
        guard info.size <= maximumPayloadSize + CacheHandlerFormat.wrapperAllowance, !info.looksSparse else {
            return .skipped(.tooLarge(bytes: info.size))
        }
        guard let memory = RawMemory.allocate(info.size) else { return .skipped(.unreadable(errno: Errno.noMemory.rawValue)) }
        var handedOff = false
        defer { if !handedOff { RawMemory.free(memory) } }
        let count: Int
        do {
            count = try io.pread(fd, into: UnsafeMutableRawBufferPointer(start: memory, count: info.size), at: 0)
        } catch {
            return .skipped(.unreadable(errno: error.rawValue))
        }
        let bytes = UnsafeRawBufferPointer(start: memory, count: count)
        switch CacheHandlerFormat.contents(of: bytes) {
        case .notJSON: return .skipped(.notJSON)
        case .noResponse: return .skipped(.noResponse)
        case .response(let range):
            guard range.count <= maximumPayloadSize else { return .skipped(.tooLarge(bytes: range.count)) }
            // The payload keeps the file's buffer, freed with it: no copy of the response.
            handedOff = true
            let payload = Data(
                bytesNoCopy: memory + range.lowerBound, count: range.count, deallocator: .custom { _, _ in RawMemory.free(memory) })
            return .entry(Entry(name: name, payload: payload, modificationTime: info.modificationTime))
        }
    }
}
