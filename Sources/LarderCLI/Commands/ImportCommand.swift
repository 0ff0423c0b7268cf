#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

/// `larder import --from cachehandler DIR`: imports another cache's folder.
enum ImportCommand: Subcommand {
    static let spec = CommandSpec(
        name: "import", summary: "Import a CacheHandler folder (its Caches/URLCache or a PreloadedCache) into the cache.",
        positionalUsage: "--from cachehandler SOURCE", minimumPositionals: 1, maximumPositionals: 1,
        options: CacheContext.changingOptions + [
            .value("from", "cachehandler", "The source's format; CacheHandler's (required)."),
            .flag("json", "Print the result as a JSON object."),
            CacheContext.adoptOption,
        ],
        discussion: """
            Each file of SOURCE named by the SHA-256 of its key and holding {"response": ...} is stored
            under that name, so its original key finds it: the payload is the exact JSON of "response",
            the update time the file's modification time, the ttl CacheHandler's 6 days. The cache must
            use sha256 keys (created with them when missing). Expired files and keys the cache already
            holds are skipped; so are files that are not entries (other names, not JSON, no "response",
            too large, unreadable, folders, links, FIFOs), each listed with its reason. SOURCE is only
            read. Exits 1 when a file was skipped for any reason but expiry or presence, 3 when SOURCE
            cannot be read or the cache cannot be written. A cache folder that holds files but is not
            a cache is refused unless --adopt is given (see 'larder put --help').
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        guard let format = arguments.value("from") else {
            throw .usage("'larder import' needs '--from cachehandler' (the only format it reads)")
        }
        guard format.lowercased() == "cachehandler" else {
            throw .usage("'--from' must be 'cachehandler', not '\(format)'")
        }
        let source = URL(fileURLWithPath: arguments.positionals[0], isDirectory: true)
        // Before the cache is opened (and created): a mistyped SOURCE leaves no empty cache behind.
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure(
                .cacheError, "'\(source.standardizedFileURL.path)' is not a folder (give CacheHandler's URLCache or PreloadedCache folder)")
        }
        let context = try CacheContext(arguments, io: io, mustExist: false)
        let cache = try context.openWritable()
        defer { cache.close() }
        let report: CacheHandlerImportReport
        do { report = try cache.importCacheHandlerFolder(at: source) } catch {
            throw CacheContext.failure(for: error, root: context.layout.root)
        }
        let problems = report.skipped.filter { isProblem($0.reason) }
        if arguments.flag("json") {
            io.out(
                json: .object([
                    ("source", .string(source.standardizedFileURL.path)),
                    ("directory", .string(context.layout.root)),
                    ("importedCount", .int(report.imported.count)),
                    ("skippedCount", .int(report.skipped.count)),
                    ("imported", .array(report.imported.map { .string($0) })),
                    (
                        "skipped",
                        .array(
                            report.skipped.map { file in
                                var members: [(String, JSONValue)] = [
                                    ("file", .string(file.name)), ("reason", .string(code(file.reason))),
                                    ("message", .string(file.reason.description)),
                                ]
                                if case .expired(let time) = file.reason { members.append(("expiredAt", .double(time))) }
                                return .object(members)
                            })
                    ),
                ]))
        } else {
            io.out(
                "imported \(report.imported.count) entr\(report.imported.count == 1 ? "y" : "ies") from \(source.standardizedFileURL.path) into \(context.layout.root); skipped \(report.skipped.count) file\(report.skipped.count == 1 ? "" : "s")\n"
            )
            for file in report.skipped {
                io.out("  \(file.name)  \(code(file.reason))  \(message(file.reason))\n")
            }
        }
        return problems.isEmpty ? .success : .failure
    }

    /// Whether a skipped file is a problem with the source (exit 1), not the normal course of a
    /// migration (an expired entry, or one the cache already holds).
    static func isProblem(_ reason: CacheHandlerImportReport.SkipReason) -> Bool {
        switch reason {
        case .expired, .alreadyPresent: false
        default: true
        }
    }

    /// A reason's stable short name, for the table and `--json`.
    static func code(_ reason: CacheHandlerImportReport.SkipReason) -> String {
        switch reason {
        case .expired: "expired"
        case .alreadyPresent: "present"
        case .notAHashedName: "not-a-hash"
        case .folder: "folder"
        case .symbolicLink: "link"
        case .notARegularFile: "not-a-file"
        case .tooLarge: "too-large"
        case .unreadable: "unreadable"
        case .notJSON: "not-json"
        case .noResponse: "no-response"
        }
    }

    /// A reason in words, with dates and errno text people read.
    static func message(_ reason: CacheHandlerImportReport.SkipReason) -> String {
        switch reason {
        case .expired(let time): "expired \(HumanFormat.date(time)), 6 days after its modification time"
        case .tooLarge(let bytes): "\(HumanFormat.size(bytes)), more than the cache's maximum record size"
        case .unreadable(let errno): "cannot be read: \(String(cString: strerror(errno)))"
        default: reason.description
        }
    }
}
