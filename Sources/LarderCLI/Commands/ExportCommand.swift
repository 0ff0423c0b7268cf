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
            OUTDIR is created when missing; existing files with the same names are replaced.
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let output = URL(fileURLWithPath: arguments.positionals[0], isDirectory: true)
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let inspector = CacheInspector(context)
        do {
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        } catch {
            throw CommandFailure(.cacheError, "cannot create '\(output.path)': \(error.localizedDescription)")
        }
        let names = try inspector.recordNames()
        var progress = ProgressBar(io: io, label: "export", total: names.count)
        var exported = 0
        var bytes = 0
        var skipped: [String] = []
        for (i, name) in names.enumerated() {
            defer { progress.update(i + 1, of: names.count) }
            // A file that is not a record is no payload of the cache's.
            guard let entry = inspector.entry(named: name, readPayload: true), entry.status != .foreign else { continue }
            guard entry.corruption == nil, let payload = entry.payload else {
                skipped.append("\(entry.displayKey): corrupt (\(entry.corruption?.rawValue ?? "unreadable"))")
                continue
            }
            let fileName = ExportName.encode(entry.displayKey)
            guard fileName.utf8.count <= 255 else {
                skipped.append("\(entry.displayKey): the encoded name is longer than 255 bytes")
                continue
            }
            do {
                try payload.write(to: output.appendingPathComponent(fileName), options: .atomic)
            } catch {
                progress.finish()
                throw CommandFailure(
                    .cacheError, "cannot write '\(output.appendingPathComponent(fileName).path)': \(error.localizedDescription)")
            }
            exported += 1
            bytes += payload.count
        }
        progress.finish()
        io.out("exported \(exported) payload\(exported == 1 ? "" : "s") (\(HumanFormat.size(bytes))) to \(output.path)\n")
        for line in skipped { io.out("skipped \(line)\n") }
        return skipped.isEmpty ? .success : .failure
    }
}
