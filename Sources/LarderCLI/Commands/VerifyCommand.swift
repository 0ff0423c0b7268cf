import Foundation
import Larder

/// `larder verify`: checks every header and payload checksum.
enum VerifyCommand: Subcommand {
    static let spec = CommandSpec(
        name: "verify", summary: "Check every record's header and payload checksums; list the corrupt ones.",
        options: CacheContext.changingOptions + [
            .flag("json", "Print the result as a JSON object."),
            .flag(
                "repair",
                "Remove the corrupt records. Takes the directory alone: waits (--wait) for the other writers to close it, and keeps them out until done."
            ),
            .flag("remove-foreign", "With --repair, also remove the foreign files (folders stay); nothing else removes them."),
        ],
        discussion: """
            Checks magic, header size, header CRC, flags, file length, stored key, and payload CRC
            (for records that carry one; SPT records do not). Files that are not records (no
            record magic, not a regular file, or not where the layout puts a record) are listed
            as foreign, apart from the records, and left alone unless --remove-foreign is given.
            Exits 1 when any record is corrupt, also after --repair removed them, and 0 when all
            are sound (foreign files do not change it).
            JSON fields: directory, checked, corruptCount, corrupt (key, file, size, reason,
            removed), foreignCount, foreign (file, fileBytes, size, folder, removed), removedCount.
            A file name that is not UTF-8 is never a record's: it is foreign, shown with each byte
            that is not UTF-8 written as \\xHH, and --remove-foreign removes exactly that file
            (JSON's fileBytes gives its path in hex; null for a UTF-8 path).
            """)

    /// Removes a foreign file by its exact name: a misplaced one with one `unlinkat` in the
    /// folder that holds it (its name may not be UTF-8), one at a record's place by its path.
    private static func removeForeign(_ entry: RecordEntry, files: FileIO, layout: DiskLayout) throws(Errno) {
        guard let misplaced = entry.misplaced else {
            try files.unlink(entry.path)
            return
        }
        let folder = try files.openDirectory(layout.folder(of: misplaced))
        defer { files.close(folder) }
        try files.unlink(misplaced.name, inFolder: folder)
    }

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let repair = arguments.flag("repair")
        let removesForeign = arguments.flag("remove-foreign")
        if removesForeign, !repair { throw .usage("'--remove-foreign' works with '--repair' only") }
        let context = try CacheContext(arguments, io: io, mustExist: true)
        // The folder alone, taken before reading: no other writer changes a file between its
        // check and its removal (a record stored again meanwhile would go with the corrupt one).
        let cache = repair ? try context.openWritable(alone: true) : nil
        defer { cache?.close() }
        let inspector = CacheInspector(context)
        let names = try inspector.recordNames()
        var progress = ProgressBar(io: io, label: "verify", total: names.count)
        var corrupt: [RecordEntry] = []
        var checked = 0
        var foreign: [RecordEntry] = []
        for (i, name) in names.enumerated() {
            // Streamed: a record is checked in chunks, never read into memory whole.
            if let entry = inspector.verifiedEntry(named: name) {
                if entry.status == .foreign {
                    foreign.append(entry)
                } else {
                    checked += 1
                    if entry.corruption != nil { corrupt.append(entry) }
                }
            }
            progress.update(i + 1, of: names.count)
        }
        progress.finish()
        foreign += try inspector.foreignEntries()
        foreign.sort { $0.relativePath < $1.relativePath }

        var removed: [FileName] = []
        var failures: [TerminalText] = []
        var kept: [RecordEntry] = []
        if let cache {
            for entry in corrupt {
                // The tool checks sizes against the library's default maximum (1 GiB); an app
                // may allow more, so a record above it (or sparse) is reported, never removed.
                if entry.corruption == .tooLarge {
                    kept.append(entry)
                    continue
                }
                do {
                    // Through the cache when the key maps to this file, so its index stays right;
                    // otherwise (the key is unknown) the file alone, under the cache's lock.
                    if let key = entry.key, let encoding = context.keyEncoding, (try? encoding.fileName(for: key)) == entry.file {
                        try cache.remove(forKeys: [key])
                    } else {
                        // One unlink beneath the root: a file or a link goes, never a link's
                        // target, and a folder named like a record stays (EISDIR), whatever it holds.
                        do throws(Errno) { try context.files.unlink(entry.path) } catch {
                            throw CacheError(
                                .ioFailure,
                                error == .isADirectory || error == .notPermitted
                                    ? "a folder, not a record file; remove it yourself if it is not yours" : "cannot remove it",
                                path: entry.path, errno: error.rawValue)
                        }
                    }
                    removed.append(entry.relativePath)
                } catch {
                    failures.append("\(entry.shownPath): \(error)")
                }
            }
        }

        var removedForeign: [FileName] = []
        if cache != nil, removesForeign {
            for entry in foreign {
                // One unlink beneath the root: a file or a link goes, never a link's target; a
                // folder stays (the tool never removes a folder it did not make, whatever it holds).
                guard !entry.isDirectory else {
                    failures.append("\(entry.shownPath): a folder; remove it yourself if it is not wanted")
                    continue
                }
                do throws(Errno) {
                    try removeForeign(entry, files: context.files, layout: context.layout)
                    removedForeign.append(entry.relativePath)
                } catch  where error == .isADirectory || error == .notPermitted {
                    failures.append("\(entry.shownPath): a folder; remove it yourself if it is not wanted")
                } catch {
                    failures.append("\(entry.shownPath): \(String(cString: strerror(error.rawValue)))")
                }
            }
        }

        if arguments.flag("json") {
            let value = JSONValue.object([
                ("directory", .string(context.layout.root)),
                ("checked", .int(checked)),
                ("corruptCount", .int(corrupt.count)),
                (
                    "corrupt",
                    .array(
                        corrupt.map { entry in
                            .object([
                                ("key", .text(entry.key)), ("file", .string(entry.jsonPath)),
                                ("size", .int(entry.fileSize)), ("reason", .text(entry.corruption?.rawValue)),
                                ("removed", .bool(removed.contains(entry.relativePath))),
                            ])
                        })
                ),
                ("foreignCount", .int(foreign.count)),
                (
                    "foreign",
                    .array(
                        foreign.map { entry in
                            .object([
                                ("file", .string(entry.jsonPath)), ("fileBytes", .text(entry.undecodablePathHex)),
                                ("size", .int(entry.fileSize)),
                                ("folder", .bool(entry.isDirectory)), ("removed", .bool(removedForeign.contains(entry.relativePath))),
                            ])
                        })
                ),
                ("removedCount", .int(removed.count + removedForeign.count)),
            ])
            io.out(json: value)
        } else {
            io.out(
                "checked \(checked) record\(checked == 1 ? "" : "s") in \(context.layout.root): \(checked - corrupt.count) sound, \(corrupt.count) corrupt\n"
            )
            if !corrupt.isEmpty {
                var table = TextTable([
                    .init(title: "KEY"), .init(title: "FILE"), .init(title: "SIZE", alignment: .right), .init(title: "REASON"),
                ])
                for entry in corrupt {
                    table.append(
                        shown: [
                            "\(entry.key ?? "-")", entry.shownPath, "\(HumanFormat.size(entry.fileSize))",
                            "\(entry.corruption?.rawValue ?? "?")",
                        ],
                        colour: "31")
                }
                io.out(table.render(colour: LsCommand.useColour(io)))
            }
            if !foreign.isEmpty {
                io.out(LsCommand.foreignSummary(foreign) + "\n")
                var table = TextTable([.init(title: "FILE"), .init(title: "SIZE", alignment: .right)])
                for entry in foreign {
                    table.append(shown: [entry.shownPath, "\(entry.isDirectory ? "-" : HumanFormat.size(entry.fileSize))"])
                }
                io.out(table.render(colour: LsCommand.useColour(io)))
            }
            if repair {
                io.out(
                    "removed \(removed.count) corrupt record\(removed.count == 1 ? "" : "s")"
                        + (removesForeign ? " and \(removedForeign.count) foreign file\(removedForeign.count == 1 ? "" : "s")" : "") + "\n")
            }
            for entry in kept {
                io.err(
                    "larder verify: left \(entry.shownPath): larger than 1 GiB or sparse, which an application may allow; 'larder rm' removes it\n"
                )
            }
            for failure in failures { io.err("larder verify: cannot remove \(failure)\n") }
        }
        if !failures.isEmpty { return .cacheError }
        return corrupt.isEmpty ? .success : .failure
    }
}
