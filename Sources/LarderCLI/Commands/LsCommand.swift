import Foundation
import Larder

/// `larder ls`: one row per record.
enum LsCommand: Subcommand {
    static let spec = CommandSpec(
        name: "ls", summary: "List every record: key, size, locks, ttl, times, status.",
        options: CacheContext.options + [
            .flag("json", "Print a JSON array of objects instead of a table."),
            .value(
                "sort", "key|size|age|access",
                "Order rows by key (default), size (largest first), age (oldest update first) or access (least recent first)."),
        ],
        discussion: """
            Works on Larder and SPTPersistentCache directories, and on directories another process
            is writing (it takes no lock and changes nothing). Headers and stored keys are checked;
            payload checksums are checked by 'larder verify'. Status is ok, expired or corrupt for a
            record, and foreign for a file that is not one (no record magic, not a regular file, or
            not where the layout puts a record; a folder's name ends in /): listed after the
            records, counted apart, never removed by a cache ('larder verify --repair
            --remove-foreign' removes them). A folder that is not a cache at all is refused.
            A file name that is not UTF-8 is never a record's: it is listed as foreign, each byte
            that is not UTF-8 written as \\xHH.
            JSON fields: key (null when not stored), file, fileBytes (the file's path in hex when
            it is not UTF-8, and then file has \\xHH escapes; else null), size (file bytes),
            payloadSize, lockCount, ttl, updateTime, lastAccessTime, expirationTime (Unix seconds;
            null while locked), status, corruption.
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let sort = arguments.value("sort") ?? "key"
        guard ["key", "size", "age", "access"].contains(sort) else {
            throw .usage("'--sort' must be key, size, age or access, not '\(sort)'")
        }
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let inventory = try CacheInspector(context).inventory(readPayload: false)
        let entries = sorted(inventory.records, by: sort)
        let foreign = inventory.foreign
        if arguments.flag("json") {
            io.out(json: .array((entries + foreign).map { json($0, context: context) }))
        } else {
            io.out(table(entries + foreign, context: context).render(colour: useColour(io)))
            let counts = Dictionary(grouping: entries, by: \.status).mapValues(\.count)
            let total = entries.reduce(0) { $0 + $1.fileSize }
            io.out(
                "\(entries.count) record\(entries.count == 1 ? "" : "s"), \(HumanFormat.size(total)) (\(counts[.ok] ?? 0) ok, \(counts[.expired] ?? 0) expired, \(counts[.corrupt] ?? 0) corrupt)\n"
            )
            if !foreign.isEmpty { io.out(foreignSummary(foreign) + "\n") }
        }
        return .success
    }

    static func useColour(_ io: CommandIO) -> Bool {
        io.isStdoutTerminal && io.environment["NO_COLOR"] == nil && io.environment["TERM"] != "dumb"
    }

    static func sorted(_ entries: [RecordEntry], by order: String) -> [RecordEntry] {
        switch order {
        case "size": entries.sorted { ($0.fileSize, $1.displayKey) > ($1.fileSize, $0.displayKey) }
        case "age": entries.sorted { ($0.updateTime ?? .infinity, $0.displayKey) < ($1.updateTime ?? .infinity, $1.displayKey) }
        case "access": entries.sorted { ($0.lastAccessTime ?? .infinity, $0.displayKey) < ($1.lastAccessTime ?? .infinity, $1.displayKey) }
        default: entries.sorted { $0.displayKey < $1.displayKey }
        }
    }

    /// `2 foreign files (12 B): not records; a cache leaves them, 'larder verify --repair --remove-foreign' removes them`.
    static func foreignSummary(_ foreign: [RecordEntry]) -> TerminalText {
        let size = foreign.reduce(0) { $0 + $1.fileSize }
        return
            "\(foreign.count) foreign file\(foreign.count == 1 ? "" : "s") (\(HumanFormat.size(size))): not records; a cache leaves them, 'larder verify --repair --remove-foreign' removes them"
    }

    static func statusText(_ entry: RecordEntry) -> String {
        entry.corruption.map { "corrupt (\($0))" } ?? entry.status.rawValue
    }

    static func table(_ entries: [RecordEntry], context: CacheContext) -> TextTable {
        var table = TextTable([
            .init(title: "KEY"), .init(title: "SIZE", alignment: .right), .init(title: "LOCKS", alignment: .right),
            .init(title: "TTL"), .init(title: "UPDATED"), .init(title: "LAST ACCESS"), .init(title: "EXPIRES"),
            .init(title: "STATUS"),
        ])
        let now = context.now
        for entry in entries {
            let expires: String
            if entry.header == nil {
                expires = "-"
            } else if let time = entry.expirationTime {
                expires = HumanFormat.relative(time, now: now)
            } else {
                expires = "never (locked)"
            }
            let cells = [
                HumanFormat.size(entry.fileSize),
                entry.lockCount.map(String.init) ?? "-",
                entry.ttl.map(HumanFormat.ttl) ?? "-",
                entry.updateTime.map { HumanFormat.relative($0, now: now) } ?? "-",
                entry.lastAccessTime.map { HumanFormat.relative($0, now: now) } ?? "-",
                expires,
                statusText(entry),
            ]
            // A foreign entry is shown by its path, from its exact bytes (each one that is not
            // UTF-8 as \xHH), so two names that differ only there show apart.
            let first: TerminalText = entry.status == .foreign ? entry.shownPath : "\(entry.displayKey)"
            table.append(
                shown: [first] + cells.map { "\($0)" }, colour: entry.status == .ok ? nil : entry.status == .expired ? "33" : "31")
        }
        return table
    }

    static func json(_ entry: RecordEntry, context: CacheContext) -> JSONValue {
        .object([
            ("key", .text(entry.key)),
            ("file", .string(entry.jsonPath)),
            ("fileBytes", .text(entry.undecodablePathHex)),
            ("size", .int(entry.fileSize)),
            ("payloadSize", .int(entry.corruption == nil ? entry.payloadSize : nil)),
            ("lockCount", .int(entry.lockCount)),
            ("ttl", .int(entry.ttl)),
            ("updateTime", .double(entry.updateTime)),
            ("lastAccessTime", .double(entry.lastAccessTime)),
            ("expirationTime", .double(entry.expirationTime)),
            ("status", .string(entry.status.rawValue)),
            ("corruption", .text(entry.corruption?.rawValue)),
        ])
    }
}
