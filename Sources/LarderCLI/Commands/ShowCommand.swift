import Foundation
import Larder

/// `larder show KEY`: every header field, decoded.
enum ShowCommand: Subcommand {
    static let spec = CommandSpec(
        name: "show", summary: "Print every header field of one record, decoded.",
        positionalUsage: "KEY", minimumPositionals: 1, maximumPositionals: 1,
        options: CacheContext.options,
        discussion: "KEY may also be a record's file name (as 'larder ls' shows for records whose key is not stored).")

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let key = arguments.positionals[0]
        let context = try CacheContext(arguments, io: io, mustExist: true)
        guard let entry = try CacheInspector(context).entry(forKey: key, readPayload: true) else {
            throw CommandFailure(.failure, "no record for key '\(key)' in '\(context.layout.root)'")
        }
        io.out(describe(entry, context: context))
        return entry.status == .corrupt ? .failure : .success
    }

    static func describe(_ entry: RecordEntry, context: CacheContext) -> TerminalText {
        let now = context.now
        var fields = FieldList()
        fields.add("key", entry.key ?? "(not stored)")
        fields.add("file", shown: entry.shownPath)
        fields.add("path", entry.path)
        fields.add("file size", "\(entry.fileSize) bytes (\(HumanFormat.size(entry.fileSize)))")
        fields.add("status", LsCommand.statusText(entry))
        guard let header = entry.header else {
            return fields.render() + "\nThe header failed validation; its first bytes:\n" + hexDump(path: entry.path, files: context.files)
        }
        func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16).leftPadded(to: 8) }
        fields.add("magic", "0x46545053 (SPTF)")
        fields.add("headerSize", "\(RecordHeader.size)")
        fields.add("refCount", "\(header.refCount)" + (header.refCount > 0 ? " (locked)" : " (unlocked)"))
        fields.add("reserved1", hex(header.reserved1) + (header.payloadChecksum != nil ? " (payload CRC-32)" : ""))
        fields.add(
            "ttl",
            header.ttl == 0
                ? "0 (default expiration: \(HumanFormat.duration(context.defaultExpiration)), from the last update)"
                : "\(header.ttl) (\(HumanFormat.duration(Double(header.ttl))))")
        fields.add(
            "updateTimeSec",
            "\(header.updateTimeSec) (\(HumanFormat.date(Double(header.updateTimeSec))), \(HumanFormat.relative(Double(header.updateTimeSec), now: now)))"
        )
        fields.add("payloadSizeBytes", "\(header.payloadSizeBytes) (\(HumanFormat.size(Int(header.payloadSizeBytes))))")
        if let ms = header.lastAccessMilliseconds {
            let time = Double(ms) / 1000
            fields.add("reserved2", "\(ms) (last access: \(HumanFormat.date(time)), \(HumanFormat.relative(time, now: now)))")
        } else {
            fields.add("reserved2", "\(header.reserved2)")
        }
        fields.add("reserved3", "\(header.reserved3)" + (header.flags.contains(.storedKey) ? " (stored key length)" : ""))
        fields.add("reserved4", hex(header.reserved4) + (header.flags.contains(.storedKey) ? " (stored key CRC-32)" : ""))
        fields.add("flags", hex(header.flags.rawValue) + " (\(flagNames(header.flags)))")
        fields.add("crc", "valid (CRC-32 of bytes 0..<60)")
        if let expiration = entry.expirationTime {
            let verb = expiration < now ? "expired" : "expires"
            fields.add(verb, "\(HumanFormat.date(expiration)) (\(HumanFormat.relative(expiration, now: now)))")
        } else {
            fields.add("expires", "never while locked")
        }
        if let payload = entry.payload {
            fields.add("payload", PayloadKind.describe(payload))
        }
        return fields.render()
    }

    static func flagNames(_ flags: RecordFlags) -> String {
        var names: [String] = []
        if flags.contains(.streamIncomplete) { names.append("streamIncomplete") }
        if flags.contains(.payloadChecksum) { names.append("payloadChecksum") }
        if flags.contains(.accessTime) { names.append("accessTime") }
        if flags.contains(.storedKey) { names.append("storedKey") }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }

    /// A hex dump of a file's first 64 bytes, read beneath the cache's root (never through a
    /// link, never from a FIFO).
    static func hexDump(path: String, files: FileIO) -> TerminalText {
        guard let (fd, _) = try? files.openForReading(path) else { return "  (unreadable: not a regular file)\n" }
        defer { files.close(fd) }
        var bytes = [UInt8](repeating: 0, count: RecordHeader.size)
        let n =
            (try? bytes.withUnsafeMutableBytes { b in
                Result { () throws(Errno) in try files.pread(fd, into: b, at: 0) }
            }.get()) ?? 0
        bytes.removeSubrange(n...)
        var text = ""
        for row in stride(from: 0, to: bytes.count, by: 16) {
            let slice = bytes[row ..< min(row + 16, bytes.count)]
            text += "  " + String(row, radix: 16).leftPadded(to: 4) + "  "
            text += slice.map { String($0, radix: 16).leftPadded(to: 2) }.joined(separator: " ") + "\n"
        }
        return TerminalText(verbatim: text)  // hex digits, spaces and newlines
    }
}

/// `larder cat KEY`: the payload alone.
enum CatCommand: Subcommand {
    static let spec = CommandSpec(
        name: "cat", summary: "Write one record's payload, without its header, to standard output.",
        positionalUsage: "KEY", minimumPositionals: 1, maximumPositionals: 1,
        options: CacheContext.options + [
            .flag("force", "Write the payload even when it is not plain text and standard output is a terminal.")
        ],
        discussion: """
            The output is the payload itself, byte for byte, unescaped: pipe it or redirect it
            ('larder cat KEY > file', 'larder cat KEY | less'). When standard output is a terminal
            and the payload is not plain UTF-8 text (binary, or text with escape sequences or other
            control characters, which a terminal would act on), nothing is written and the exit
            code is 2, unless --force is given. Expired records are written too, with a note on
            standard error. Corrupt records are not (exit 1), nor are records whose flags this
            version does not read (exit 1).
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let key = arguments.positionals[0]
        let context = try CacheContext(arguments, io: io, mustExist: true)
        guard let entry = try CacheInspector(context).entry(forKey: key, readPayload: true) else {
            throw CommandFailure(.failure, "no record for key '\(key)' in '\(context.layout.root)'")
        }
        if let corruption = entry.corruption {
            throw CommandFailure(.failure, "the record for '\(key)' is corrupt (\(corruption)); 'larder verify --repair' removes it")
        }
        if entry.status == .unsupported {
            throw CommandFailure(
                .failure, "the record for '\(key)' sets flags this version does not read (a newer Larder wrote it); it is left as it is")
        }
        let payload = entry.payload ?? Data()
        // A payload from a crafted cache could set the clipboard or rewrite the screen; people who
        // pipe or redirect get the bytes, people who look at a terminal get a refusal.
        if io.isStdoutTerminal, !arguments.flag("force"), !TerminalText.isPlainText(payload) {
            let kind = PayloadKind.of(payload)
            let what = kind == .text || kind == .json ? "text with control characters or escape sequences" : "binary (\(kind))"
            throw .usage("not writing the payload of '\(key)' to a terminal: it is \(what); redirect or pipe it, or pass --force")
        }
        if entry.status == .expired { io.err("larder cat: note: the record for '\(key)' has expired\n") }
        io.writeOut(payload)
        return .success
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
