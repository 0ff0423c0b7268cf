#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder

/// The cache directory a command works on, and how to read it: its key encoding, the time, and
/// the default expiration. Built from the options every cache command shares.
struct CacheContext {
    /// The options shared by every command that opens a cache.
    static let options: [OptionSpec] = [
        .value("dir", "DIR", "The cache directory (default: $XDG_CACHE_HOME/larder/demo, else ~/.cache/larder/demo)."),
        .value(
            "keys", "verbatim|sha256", "How keys map to file names, for directories without Larder metadata (SPT directories are verbatim)."
        ),
        .value(
            "default-expiration", "SECONDS",
            "Expiry of ttl-0 records (default: what the directory's metadata records; 600, SPT's default, for an SPT directory without metadata; else 2592000, Larder's 30 days)."
        ),
        .value("now", "SECONDS", "Pretend the time is this Unix time (testing aid; also $LARDER_NOW).", hidden: true),
    ]

    /// The seconds a changing command waits, unless `--wait` says otherwise, for a process that
    /// holds the folder alone to let go of it.
    static let defaultWriterWait: Double = 30

    /// The options of the commands that change a cache: the shared ones and `--wait`.
    static let changingOptions: [OptionSpec] =
        options + [
            .value(
                "wait", "SECONDS",
                "How long to wait for a process that holds the directory alone (an application that opened it without sharing it with other writers, or 'verify --repair') to let go of it (default 30; 0: fail at once with exit 3). Changing commands share the directory with every other writer that shares it, and never wait for one another."
            )
        ]

    /// `--adopt`, for the commands that can make a cache (`put`, `import`).
    static let adoptOption = OptionSpec.flag(
        "adopt",
        "Make a cache in a folder that holds other files (refused without it): its files stay, listed as foreign, and no command removes them but 'verify --repair --remove-foreign'."
    )

    let directory: URL
    let layout: DiskLayout
    /// The directory's Larder metadata; `nil` for SPT directories and new ones.
    let metadata: DirectoryMetadata?
    /// The key encoding's name: `sha256`, `verbatim` or `custom:NAME`.
    let encodingName: String
    /// The encoding, when this tool can compute it (not for custom encodings).
    let keyEncoding: KeyEncoding?
    let clock: any CacheClock
    let defaultExpiration: Double
    /// Where ``defaultExpiration`` comes from, for `larder stats`.
    let defaultExpirationSource: String
    /// Whether expiry is judged with the current time rounded to the nearest second, as
    /// SPTPersistentCache rounds it: for a folder without Larder metadata, taken for SPT's.
    let roundsTimeToNearestSecond: Bool
    let io: CommandIO
    /// Whether `--adopt` was given: a folder of other files is opened as a new cache
    /// (`DiskCacheOptions.adoptsForeignFolder`) instead of refused.
    let adoptsForeignFolder: Bool
    /// How long a writable open waits for another writer (`--wait`; ``defaultWriterWait``).
    let writerWait: Double
    /// File access rooted at the directory (see `FileIO`): no path the tool reads, writes or
    /// removes can lead outside it through a link, and no FIFO blocks it. Unrooted when the
    /// directory does not exist yet (a `put` that creates it opens it through `DiskCache`).
    let files: FileIO

    var now: Double { clock.now }
    /// A short description of the directory's format.
    var formatDescription: String {
        metadata == nil
            ? "SPTPersistentCache (no Larder metadata), keys \(encodingName), \(layout.folderLayout) layout"
            : "Larder format \(metadata!.format), keys \(encodingName), \(layout.folderLayout) layout"
    }

    /// The cache's name, as its metadata records it.
    var cacheName: String? { metadata?.name }

    /// The demo directory: `$XDG_CACHE_HOME/larder/demo`, else `~/.cache/larder/demo`.
    static func defaultDirectory(environment: [String: String]) -> URL {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("larder/demo", isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".cache/larder/demo", isDirectory: true)
    }

    /// Resolves the shared options.
    /// - Parameter mustExist: Whether a missing directory is an error (inspecting) or will be created (changing).
    init(_ arguments: ParsedArguments, io: CommandIO, mustExist: Bool) throws(CommandFailure) {
        self.io = io
        adoptsForeignFolder = arguments.flag("adopt")
        writerWait = try arguments.number("wait") ?? Self.defaultWriterWait
        directory =
            arguments.value("dir").map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? Self.defaultDirectory(environment: io.environment)
        let layout = DiskLayout(root: directory.standardizedFileURL.path)
        let fileIO = FileIO()

        if let text = arguments.value("now") ?? io.environment["LARDER_NOW"] {
            // Times a record header can hold: from the epoch to the end of year 9999.
            guard let now = Double(text), now >= 0, now <= Double(RecordHeader.maximumTimestamp) else {
                throw .usage(
                    "'--now' (or LARDER_NOW) needs a Unix time in seconds from 0 to \(RecordHeader.maximumTimestamp) (the end of year 9999), not '\(text)'"
                )
            }
            clock = ManualClock(now: now)
        } else {
            clock = SystemClock()
        }
        let requestedExpiration = try arguments.number("default-expiration")
        if let requestedExpiration, !(requestedExpiration > 0) { throw .usage("'--default-expiration' must be positive") }

        var holdsRecords = false
        var files = fileIO
        let root = layout.root
        switch Result(catching: { () throws(Errno) in try fileIO.lstat(root) }) {
        case .success(nil):
            if mustExist {
                throw CommandFailure(
                    .cacheError,
                    "cache directory '\(layout.root)' does not exist (create one with 'larder demo' or 'larder put', or pass --dir)")
            }
        case .success(let info?):
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw CommandFailure(.cacheError, "'\(layout.root)' is not a directory")
            }
            do {
                // Beneath the root, folders and files must be this user's or the root owner's
                // (``FolderTrust``); group write counts only where the root grants it already.
                let trust = FolderTrust(sharedWithGroup: false, acceptsRootOwner: true)
                files = try fileIO.rooted(at: layout.root, trust: trust)
            } catch {
                throw CommandFailure(
                    .cacheError, "cannot read cache directory '\(layout.root)': \(String(cString: strerror(error.rawValue)))")
            }
        case .failure(let error):
            throw CommandFailure(.cacheError, "cannot open cache directory '\(layout.root)': \(String(cString: strerror(error.rawValue)))")
        }

        self.files = files
        if files.root == nil {
            metadata = nil
        } else {
            do {
                metadata = try DiskCache.readMetadata(layout: layout, io: files)
            } catch {
                throw Self.failure(for: error, root: layout.root)
            }
        }

        // The layout: the metadata's, else where the records of an SPT folder are, else Larder's
        // default. A folder of other files is no cache: every command refuses it, so that none
        // lists its files as corrupt records or changes anything in it.
        var folderLayout = FolderLayout.sharded
        if let metadata {
            guard let recorded = metadata.folderLayout else {
                throw CommandFailure(.cacheError, "the directory has layout '\(metadata.layout)', which this version does not know")
            }
            folderLayout = recorded
        } else if files.root != nil {
            let contents: FolderContents
            do {
                contents = try DiskLayout.recognize(root: layout.root, io: files)
            } catch {
                throw CommandFailure(
                    .cacheError, "cannot read cache directory '\(layout.root)': \(String(cString: strerror(error.rawValue)))")
            }
            switch contents {
            case .empty:
                break
            case .spt(let shown):
                holdsRecords = true
                folderLayout = shown ?? .sharded
            case .other:
                // Adopted: a new cache beside the files, which stay foreign to it.
                guard adoptsForeignFolder else { throw CommandFailure(.cacheError, Self.notACacheMessage(layout.root)) }
            }
        }
        self.layout = layout.with(folderLayout)

        // The default expiration: the option's, else the metadata's, else SPT's for an SPT
        // folder, else Larder's.
        if let requestedExpiration {
            defaultExpiration = requestedExpiration
            defaultExpirationSource = "--default-expiration"
        } else if let recorded = metadata?.defaultExpiration, recorded > 0, recorded.isFinite {
            defaultExpiration = recorded
            defaultExpirationSource = "recorded in the directory's metadata"
        } else if metadata == nil, holdsRecords {
            defaultExpiration = DiskCacheOptions.spt(directory: directory).defaultExpiration
            defaultExpirationSource =
                "SPTPersistentCache's default, assumed for a directory without Larder metadata; pass --default-expiration if its app set another"
        } else {
            defaultExpiration = DiskCacheOptions(directory: directory).defaultExpiration
            defaultExpirationSource = "Larder's default"
        }
        roundsTimeToNearestSecond = metadata == nil && holdsRecords

        let requested = arguments.value("keys")
        if let requested, requested != "verbatim", requested != "sha256" {
            throw .usage("'--keys' must be 'verbatim' or 'sha256', not '\(requested)'")
        }
        if let metadata {
            if let requested, requested != metadata.keyEncoding {
                throw .usage("'--keys \(requested)' contradicts the directory's metadata, which says '\(metadata.keyEncoding)'")
            }
            encodingName = metadata.keyEncoding
        } else {
            // Records without metadata are SPTPersistentCache's, whose keys are file names.
            encodingName = requested ?? (holdsRecords ? "verbatim" : "sha256")
        }
        keyEncoding =
            switch encodingName {
            case "sha256": .sha256
            case "verbatim": .verbatim
            default: nil
            }
    }

    /// Options for a `DiskCache` on this directory.
    func cacheOptions(readOnly: Bool) throws(CommandFailure) -> DiskCacheOptions {
        guard let keyEncoding else {
            throw CommandFailure(
                .cacheError,
                "the directory uses the custom key encoding '\(encodingName)', which only its application can compute; this tool can inspect it but not change it"
            )
        }
        var options = DiskCacheOptions(directory: URL(fileURLWithPath: layout.root, isDirectory: true))
        options.keyEncoding = keyEncoding
        options.layout = layout.folderLayout
        if let name = metadata?.name { options.name = name }
        options.defaultExpiration = defaultExpiration
        options.clock = clock
        options.isReadOnly = readOnly
        options.adoptsForeignFolder = adoptsForeignFolder
        options.writerWaitTimeout = readOnly ? 0 : writerWait
        // Set, not left to the default: a changing command is one writer among any number
        // (applications, other commands), each in step with the others through the folder's
        // change log, so that none is refused for another's sake.
        options.sharesFolderWithWriters = !readOnly
        return options
    }

    /// Opens the directory for writing as one of the writers that share it (waiting ``writerWait``
    /// seconds for a process that holds it alone), or, when `alone`, as its only writer (waiting
    /// as long for every other writer to let go of it).
    /// - Throws: Exit code 3 naming the process that kept the directory, or the failure.
    func openWritable(alone: Bool = false, configure: (inout DiskCacheOptions) -> Void = { _ in }) throws(CommandFailure) -> DiskCache {
        var options = try cacheOptions(readOnly: false)
        if alone { options.sharesFolderWithWriters = false }
        configure(&options)
        do {
            return try DiskCache(options: options)
        } catch {
            throw Self.failure(for: error, root: layout.root)
        }
    }

    /// What every command says of a folder that holds files but is not a cache.
    static func notACacheMessage(_ root: String) -> String {
        "'\(root)' is not a cache: it holds files but no Larder metadata (.larder) and no SPTPersistentCache record; larder lists and changes nothing in it (pass --dir a cache, or a new or empty folder; 'larder put --adopt' makes a cache beside its files)"
    }

    /// The message and exit code for a cache error.
    static func failure(for error: CacheError, root: String) -> CommandFailure {
        if error.code == .notACache { return CommandFailure(.cacheError, notACacheMessage(root)) }
        if error.code == .directoryInUse {
            let holder = error.holderPID.map { "process \($0)" } ?? "another process"
            return CommandFailure(
                .cacheError,
                "cache directory '\(root)' is in use by \(holder), which did not let go of it within the wait ('--wait'); a process that holds it alone, or a command that needs it alone while others write, must close first (inspecting commands still work)"
            )
        }
        if error.code == .invalidKey || error.code == .invalidOptions || error.code == .invalidArgument {
            return CommandFailure(.usage, error.message + (error.key.map { " (key '\($0)')" } ?? ""))
        }
        var message = error.message
        if let path = error.path { message += " (\(path))" }
        if let errno = error.errno { message += ": \(String(cString: strerror(errno)))" }
        return CommandFailure(.cacheError, message)
    }
}
