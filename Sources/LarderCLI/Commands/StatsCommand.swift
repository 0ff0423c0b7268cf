#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

/// Totals over a directory's records, shared by `stats`, `gc` and `report`.
///
/// A size is the sum of the files' lengths; its "on disk" twin rounds each file up to whole
/// blocks of the folder's block size, as the cache does when it counts against its size limit.
struct CacheSummary {
    var entries: [RecordEntry]
    /// The folder's block size (at least 512, as the cache takes it).
    var blockSize: Int = 4096
    var count: Int { entries.count }
    var totalSize: Int { entries.reduce(0) { $0 + $1.fileSize } }
    var totalSizeOnDisk: Int { onDisk(entries) }
    func count(_ status: RecordEntry.Status) -> Int { entries.count { $0.status == status } }
    var locked: [RecordEntry] { entries.filter { ($0.lockCount ?? 0) > 0 && $0.corruption == nil } }
    var lockedSize: Int { locked.reduce(0) { $0 + $1.fileSize } }
    var lockedSizeOnDisk: Int { onDisk(locked) }
    /// What `entries` occupy on disk: each file's length rounded up to whole blocks.
    func onDisk(_ entries: [RecordEntry]) -> Int {
        let block = max(512, blockSize)
        return entries.reduce(0) { $0 + ($1.fileSize + block - 1) / block * block }
    }

    init(entries: [RecordEntry], blockSize: Int = 4096) {
        self.entries = entries
        self.blockSize = blockSize
    }

    /// The summary of the records in `context`'s folder, with the folder's block size.
    init(_ context: CacheContext) throws(CommandFailure) {
        self.init(entries: try CacheInspector(context).entries(readPayload: false), blockSize: context.files.root?.info.blockSize ?? 4096)
    }
    var oldestUpdate: Double? { entries.compactMap(\.updateTime).min() }
    var newestUpdate: Double? { entries.compactMap(\.updateTime).max() }
}

/// `larder stats`: totals for a directory.
enum StatsCommand: Subcommand {
    static let spec = CommandSpec(
        name: "stats", summary: "Print totals: records, sizes, locked, expired, corrupt, and foreign files.",
        options: CacheContext.options + [.flag("json", "Print the totals as a JSON object.")],
        discussion:
            "Reads without taking the directory's lock; checks headers, not payload checksums (see 'larder verify'). A size is the"
            + " files' bytes, then what they occupy on disk in whole blocks (what the size limit counts). Foreign files (not"
            + " records; see 'larder ls --help') are counted apart from the records.")

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let inventory = try CacheInspector(context).inventory(readPayload: false)
        let summary = CacheSummary(entries: inventory.records, blockSize: context.files.root?.info.blockSize ?? 4096)
        let foreignSize = inventory.foreign.reduce(0) { $0 + $1.fileSize }
        let holder = lockHolder(context)
        let sharers = sharingWriters(context)
        if arguments.flag("json") {
            io.out(
                json: .object([
                    ("directory", .string(context.layout.root)),
                    ("name", context.cacheName.map(JSONValue.string) ?? .null),
                    ("layout", .string(context.layout.folderLayout.description)),
                    ("keyEncoding", .string(context.encodingName)),
                    ("hasMetadata", .bool(context.metadata != nil)),
                    ("records", .int(summary.count)),
                    ("totalSize", .int(summary.totalSize)),
                    ("totalSizeOnDisk", .int(summary.totalSizeOnDisk)),
                    ("ok", .int(summary.count(.ok))),
                    ("expired", .int(summary.count(.expired))),
                    ("corrupt", .int(summary.count(.corrupt))),
                    ("foreign", .int(inventory.foreign.count)),
                    ("foreignSize", .int(foreignSize)),
                    ("locked", .int(summary.locked.count)),
                    ("lockedSize", .int(summary.lockedSize)),
                    ("lockedSizeOnDisk", .int(summary.lockedSizeOnDisk)),
                    ("oldestUpdate", .double(summary.oldestUpdate)),
                    ("newestUpdate", .double(summary.newestUpdate)),
                    ("defaultExpiration", .double(context.defaultExpiration)),
                    ("defaultExpirationSource", .string(context.defaultExpirationSource)),
                    ("writerPID", .int(holder.map(Int.init))),
                    ("sharingWriterPIDs", .array(sharers.map { .int(Int($0)) })),
                ]))
            return .success
        }
        var fields = FieldList()
        fields.add("directory", context.layout.root)
        if let name = context.cacheName { fields.add("name", name) }
        fields.add("format", context.formatDescription)
        fields.add(
            "records", "\(summary.count) (\(summary.count(.ok)) ok, \(summary.count(.expired)) expired, \(summary.count(.corrupt)) corrupt)"
        )
        fields.add(
            "foreign",
            "\(inventory.foreign.count) file\(inventory.foreign.count == 1 ? "" : "s"), \(HumanFormat.size(foreignSize))"
                + (inventory.foreign.isEmpty ? "" : " (not records; a cache leaves them)"))
        fields.add(
            "total size",
            HumanFormat.size(summary.totalSize) + " (\(summary.totalSize) bytes; \(HumanFormat.size(summary.totalSizeOnDisk)) on disk)")
        fields.add("locked", "\(summary.locked.count) records, \(HumanFormat.size(summary.lockedSize, onDisk: summary.lockedSizeOnDisk))")
        fields.add(
            "unlocked",
            "\(summary.count - summary.locked.count) records, "
                + HumanFormat.size(summary.totalSize - summary.lockedSize, onDisk: summary.totalSizeOnDisk - summary.lockedSizeOnDisk))
        if let oldest = summary.oldestUpdate, let newest = summary.newestUpdate {
            fields.add("oldest update", "\(HumanFormat.date(oldest)) (\(HumanFormat.relative(oldest, now: context.now)))")
            fields.add("newest update", "\(HumanFormat.date(newest)) (\(HumanFormat.relative(newest, now: context.now)))")
        }
        fields.add("default expiration", HumanFormat.duration(context.defaultExpiration) + " (\(context.defaultExpirationSource))")
        let writer =
            if let holder {
                "process \(holder) holds the directory"
            } else if !sharers.isEmpty {
                "shared by \(sharers.count) writer\(sharers.count == 1 ? "" : "s") (process\(sharers.count == 1 ? "" : "es") "
                    + sharers.map(String.init).joined(separator: ", ") + ")"
            } else {
                "none"
            }
        fields.add("writer", writer)
        io.out(fields.render())
        return .success
    }

    /// The running writers that share the folder, from the table in `.larder-sharing`
    /// (this process left out, as in ``lockHolder(_:)``).
    static func sharingWriters(_ context: CacheContext) -> [Int32] {
        let limit = SharedWriterTable.offset + SharedWriterTable.slotCount * 4
        guard let bytes = try? context.files.readFile(context.layout.root + "/" + SharedWriterTable.fileName, limit: limit) else {
            return []
        }
        return SharedWriterTable.runningWriters(inFile: bytes).filter { $0 != getpid() }
    }

    /// The pid in `.larder.lock`, when that process is alive. (A hint: it does not test the lock,
    /// because taking it, even briefly, could make a starting writer fail.)
    static func lockHolder(_ context: CacheContext) -> Int32? {
        guard let bytes = try? context.files.readFile(context.layout.lockPath, limit: 64),
            let pid = Int32(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
            pid > 0, pid != getpid()
        else { return nil }
        return kill(pid, 0) == 0 || errno == EPERM ? pid : nil
    }
}
