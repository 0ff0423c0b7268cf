import Foundation

/// The table of open writers that share a folder, in the sharing file (`.larder-sharing`):
/// one slot of 4 bytes (a process id, little-endian; 0 for a free slot) for each, from byte 8.
///
/// A writer sharing the folder holds no lock between its calls, so that a process suspended
/// between two operations holds none (iOS terminates a suspended process that holds a file lock
/// in a shared container). The table is what tells a writer that would hold the folder alone
/// that writers sharing it are open:
/// - a sharing writer registers while it holds `.larder.lock` shared (at open, and when the
///   folder is made again), under the change lock, and frees its slot when it closes;
/// - a writer that would hold the folder alone takes `.larder.lock` exclusively, then reads the
///   table: a slot whose process runs means a sharing writer is open, and it lets go and waits.
///
/// Either the sharing writer registered before the other took the lock, and the other finds it,
/// or it finds the lock taken and is refused. A writer killed leaves its slot: a process that no
/// longer runs counts for no one, and the next writer to register frees the slot. A process id
/// reused by an unrelated process keeps a writer that would hold the folder alone waiting until
/// that process ends; one in another process-id namespace (another container) is not seen.
package enum SharedWriterTable {
    /// The sharing file's name, beside `.larder.lock`.
    package static let fileName = SharedFolder.sharingFileName
    /// Where the table begins in the sharing file (byte 0 is the change mark).
    package static let offset = 8
    /// Slots in the table: more writers than this open at once are refused.
    package static let slotCount = 1024

    /// The process ids in the table's slots (0 for a free one); fewer slots than ``slotCount``
    /// when the file is shorter.
    static func read(fd: Int32, io: FileIO) -> [Int32] {
        var bytes = [UInt8](repeating: 0, count: slotCount * 4)
        let n =
            (try? bytes.withUnsafeMutableBytes { b in
                Result { () throws(Errno) in try io.pread(fd, into: b, at: offset) }
            }.get()) ?? 0
        return slots(in: bytes[..<n])
    }

    /// The process ids in the table's slots held by `bytes`, the table's part of the file.
    private static func slots(in bytes: ArraySlice<UInt8>) -> [Int32] {
        stride(from: bytes.startIndex, to: bytes.endIndex - bytes.count % 4, by: 4).map { i in
            Int32(bitPattern: UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
        }
    }

    /// The running processes registered in a sharing file whose first bytes are `contents`
    /// (what `larder stats` reports as the writers that share the folder).
    package static func runningWriters(inFile contents: [UInt8]) -> [Int32] {
        guard contents.count > offset else { return [] }
        return slots(in: contents[offset ..< min(contents.count, offset + slotCount * 4)]).filter { ProcessIdentity.isRunning($0) }
    }

    /// Writes `pid` into `slot`.
    private static func write(_ pid: Int32, slot: Int, fd: Int32, io: FileIO) throws(Errno) {
        let value = UInt32(bitPattern: pid)
        let bytes: [UInt8] = [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
        try bytes.withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: offset + slot * 4) } }.get()
    }

    /// Registers this process in a free slot (one of a process that no longer runs, or past the
    /// end), and returns it. Called holding the change lock and `.larder.lock` shared.
    /// - Throws: ``CacheError/Code/directoryInUse`` when every slot is taken by a running
    ///   process; ``CacheError/Code/ioFailure`` when the table cannot be written.
    static func register(fd: Int32, io: FileIO, path: String) throws(CacheError) -> Int {
        let slots = read(fd: fd, io: io)
        let free = slots.firstIndex { !ProcessIdentity.isRunning($0) } ?? (slots.count < slotCount ? slots.count : nil)
        guard let free else {
            throw CacheError(.directoryInUse, "\(slotCount) writers share the cache directory already", path: path)
        }
        do throws(Errno) {
            try write(ProcessIdentity.processID, slot: free, fd: fd, io: io)
        } catch {
            throw CacheError(.ioFailure, "cannot register in the sharing file", path: path, errno: error.rawValue)
        }
        return free
    }

    /// Frees `slot`, this writer's, as it closes.
    static func withdraw(slot: Int, fd: Int32, io: FileIO) {
        try? write(0, slot: slot, fd: fd, io: io)
    }

    /// A running process registered in the sharing file beside the lock file, or `nil`: none,
    /// no sharing file, or one that is not a regular file (which no sharing writer opens).
    static func runningWriter(root: String, io: FileIO) -> Int32? {
        guard let (fd, _) = try? io.openForReading(root + "/" + SharedFolder.sharingFileName) else { return nil }
        defer { io.close(fd) }
        return read(fd: fd, io: io).first { ProcessIdentity.isRunning($0) }
    }
}
