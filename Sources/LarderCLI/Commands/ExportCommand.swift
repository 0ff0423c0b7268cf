import Foundation
import Larder

/// `larder export OUTDIR`: every readable payload, header removed.
enum ExportCommand: Subcommand {
    static let spec = CommandSpec(
        name: "export", summary: "Write every readable payload, without its header, into a folder.",
        positionalUsage: "OUTDIR", minimumPositionals: 1, maximumPositionals: 1,
        options: CacheContext.options,
        discussion: """
            Each payload goes to OUTDIR/NAME, where NAME is the record's key with every byte of its
            UTF-8 outside [A-Za-z0-9._-], and a leading '.', written as %XX (uppercase hex); so
            'https://a.example/x.png' becomes 'https%3A%2F%2Fa.example%2Fx.png', and decoding
            the %XX escapes gives the key back. The empty key is written as '%'. Records whose key
            is not stored are named by their file name. Expired records are exported (their
            payloads are intact); corrupt ones are skipped and listed, and the exit code is then 1.
            Two records never share a name: when a second one would (a key equal to the file name of
            a record whose key is not stored), it is skipped and listed.
            OUTDIR is created when missing; existing files with the same names are replaced. Files
            and created folders keep the cache's privacy (0600 and 0700 for a private cache).
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let output = URL(fileURLWithPath: arguments.positionals[0], isDirectory: true)
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let inspector = CacheInspector(context)
        let writer = PrivateOutput(root: context.files.root?.info)
        do {
            try writer.makeFolder(output)
        } catch {
            throw CommandFailure(.cacheError, "cannot create '\(output.path)': \(error.localizedDescription)")
        }
        let names = try inspector.recordNames()
        var progress = ProgressBar(io: io, label: "export", total: names.count)
        var exported = 0
        var bytes = 0
        var skipped: [String] = []
        var written: [String: String] = [:]
        // The empty key's file name under SHA-256 (its record stores no key bytes to read back).
        let emptyKeyName: String? = if case .sha256? = context.keyEncoding { SHA256Hash.hex(of: "") } else { nil }
        for (i, name) in names.enumerated() {
            defer { progress.update(i + 1, of: names.count) }
            // A file that is not a record is no payload of the cache's.
            guard let entry = inspector.entry(named: name, readPayload: true), entry.status != .foreign else { continue }
            guard entry.status != .unsupported else {
                skipped.append("\(entry.displayKey): unsupported (its header sets flags this version does not read)")
                continue
            }
            guard entry.corruption == nil, let payload = entry.payload else {
                skipped.append("\(entry.displayKey): corrupt (\(entry.corruption?.rawValue ?? "unreadable"))")
                continue
            }
            let key = entry.key ?? (entry.file == emptyKeyName ? "" : entry.file)
            let fileName = ExportName.encode(key)
            guard fileName.utf8.count <= 255 else {
                skipped.append("\(entry.displayKey): the encoded name is longer than 255 bytes")
                continue
            }
            if let first = written[fileName] {
                skipped.append("\(entry.displayKey): its export name '\(fileName)' is taken by the payload of '\(first)'")
                continue
            }
            do {
                try writer.write(payload, to: output.appendingPathComponent(fileName).path)
            } catch {
                progress.finish()
                throw error
            }
            written[fileName] = entry.displayKey
            exported += 1
            bytes += payload.count
        }
        progress.finish()
        io.out("exported \(exported) payload\(exported == 1 ? "" : "s") (\(HumanFormat.size(bytes))) to \(output.path)\n")
        for line in skipped { io.out("skipped \(line)\n") }
        return skipped.isEmpty ? .success : .failure
    }
}
