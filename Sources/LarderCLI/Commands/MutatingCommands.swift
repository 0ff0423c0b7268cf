import Foundation
import Larder
import Synchronization

/// `larder gc`: one collection.
enum GcCommand: Subcommand {
    static let spec = CommandSpec(
        name: "gc", summary: "Collect garbage: remove expired records, then trim to the size limit.",
        options: CacheContext.changingOptions + [
            .value("size-limit", "BYTES", "Trim least recently used records until the cache fits (locked ones last)."),
            .value("count-limit", "N", "Trim least recently used records until at most N remain."),
            .flag("list", "Also list each removed record: its key and why it went."),
            .flag("quiet", "Print nothing but errors."),
        ],
        discussion:
            "Removes records only (expired, over the limits, or corrupt), never a file that is not a record (see 'larder ls --help')."
            + " Prints how many records went, by reason, and what they occupied on disk, then what remains: the files' bytes and,"
            + " in parentheses, what they occupy on disk in whole blocks (what the size limit counts), as 'larder stats' shows it."
            + " One collection runs at a time across the processes that share the directory: while another one collects it, this"
            + " command's pass is skipped: it removes nothing, says so, and says what remains (exit 0; run it again to collect).")

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let sizeLimit = try arguments.integer("size-limit") ?? 0
        let countLimit = try arguments.integer("count-limit") ?? 0
        let lists = arguments.flag("list")
        let isQuiet = arguments.flag("quiet")
        if lists && isQuiet { throw .usage("'--list' and '--quiet' cannot be used together") }
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let removals = EventLog()
        var report: CollectionReport?
        // Whether a pass found another collection of the folder under way, and so did not run.
        var wasSkipped = false
        // What the records occupy on disk (whole blocks) before and after, as the cache counts it.
        var sizeBefore = 0
        var sizeAfter = 0
        // Expired records go first, in a pass without limits: a cache opened with limits trims
        // to them at once, least recently used first, before it would look at expiry.
        let passes = sizeLimit > 0 || countLimit > 0 ? [false, true] : [false]
        for withLimits in passes {
            let cache = try context.openWritable { options in
                if withLimits {
                    options.sizeLimit = sizeLimit
                    options.countLimit = countLimit
                }
                options.eventHandler = { removals.append($0) }
            }
            defer { cache.close() }
            if !withLimits { sizeBefore = cache.totalSize }
            defer { sizeAfter = cache.totalSize }
            do { report = try cache.collectGarbage() } catch {
                throw CacheContext.failure(for: error, root: context.layout.root)
            }
            if report?.wasSkipped == true { wasSkipped = true }
        }
        guard !isQuiet else { return .success }
        // Opening with limits may already have trimmed; the event log holds every removal.
        let removed = removals.evictions
        var byReason: [EvictionReason: Int] = [:]
        for item in removed { byReason[item.1, default: 0] += 1 }
        var reasons = EvictionReason.allCases.compactMap { reason in byReason[reason].map { "\($0) \(reason)" } }
        // Corrupt records go too (the index build found them, or the pass met them): counted, so
        // that no file leaves unreported.
        let corrupt = removals.corruptRemovals
        if !corrupt.isEmpty { reasons.append("\(corrupt.count) corrupt") }
        let count = removed.count + corrupt.count
        let freed = max(0, sizeBefore - sizeAfter)
        io.out(
            "removed \(count) record\(count == 1 ? "" : "s")"
                + (reasons.isEmpty ? "" : " (\(reasons.joined(separator: ", ")))")
                + (removed.isEmpty ? "" : ", \(HumanFormat.size(freed)) on disk") + "\n")
        if wasSkipped {
            io.out("skipped: another collection of the directory was running; run 'larder gc' again to collect\n")
        }
        if lists {
            for (key, reason) in removed { io.out("  \(key)  \(reason.rawValue)\n") }
            for (key, reason) in corrupt { io.out("  \(key)  corrupt (\(reason.rawValue))\n") }
        }
        if report != nil {
            // Counted as `stats` counts, so that the two agree on the same folder.
            let remaining = try CacheSummary(context)
            let size = HumanFormat.size(remaining.totalSize, onDisk: remaining.totalSizeOnDisk)
            io.out("remaining: \(remaining.count) record\(remaining.count == 1 ? "" : "s"), \(size)\n")
        }
        return .success
    }
}

/// Collects events from a cache's handler, which may run on any thread.
final class EventLog: Sendable {
    private let storage = Mutex<[CacheEvent]>([])

    /// Records an event; pass this as (or from) the cache's event handler.
    func append(_ event: CacheEvent) { storage.withLock { $0.append(event) } }
    /// Forgets what was recorded.
    func removeAll() { storage.withLock { $0.removeAll() } }
    /// Every corrupt record removed so far: its key (or file path) and what was wrong.
    var corruptRemovals: [(String, CorruptionReason)] {
        storage.withLock { list in
            list.compactMap { if case .corruptRecordRemoved(let key, let file, let reason) = $0 { (key ?? file, reason) } else { nil } }
        }
    }
    /// Every record evicted so far: its key (or file name) and why.
    var evictions: [(String, EvictionReason)] {
        storage.withLock { list in
            list.compactMap { if case .recordEvicted(let key, let file, let cause) = $0 { (key ?? file, cause) } else { nil } }
        }
    }
}

/// `larder put KEY [FILE]`: stores a record.
enum PutCommand: Subcommand {
    static let spec = CommandSpec(
        name: "put", summary: "Store FILE (or standard input) under KEY.",
        positionalUsage: "KEY [FILE]", minimumPositionals: 1, maximumPositionals: 2,
        options: CacheContext.changingOptions + [
            .value(
                "ttl", "SECONDS",
                "Expire this many seconds after the store (default 0: the default expiration, sliding with reads; at most 100 years)."),
            .flag("locked", "Store it locked (lock count 1), so it does not expire until unlocked."),
            CacheContext.adoptOption,
        ],
        discussion:
            "Creates the directory when missing (with sha256 keys, or --keys). Shares the directory with other writers (commands, applications)"
            + " that share it; waits for a process that holds it alone (--wait), and fails with exit 3 if it keeps it longer."
            + " A folder that holds files but is not a cache is refused unless --adopt is given; then the cache is made beside"
            + " its files, which stay as they are, listed as foreign."
    )

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let key = arguments.positionals[0]
        let ttl = try arguments.number("ttl") ?? 0
        // Read as a stream, and no further than one byte past the largest record a cache takes:
        // a huge or endless input is refused without holding more than that in memory.
        let limit = DiskCacheOptions(directory: URL(fileURLWithPath: "/")).maximumRecordSize
        let data: Data
        let source: String
        if arguments.positionals.count > 1, arguments.positionals[1] != "-" {
            let path = arguments.positionals[1]
            source = "'\(path)'"
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw CommandFailure(.failure, "cannot read '\(path)': \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var info = stat()
            // A regular file's length says it all; anything else (a FIFO, a device) is read.
            let isTooLong = fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && Int(info.st_size) > limit
            guard !isTooLong, let read = CommandIO.readBounded(fd, limit: limit) else {
                if isTooLong { throw tooLarge(source, limit) }
                throw CommandFailure(.failure, "cannot read '\(path)': \(String(cString: strerror(errno)))")
            }
            data = read
        } else {
            source = "standard input"
            guard let read = io.readIn(limit) else {
                throw CommandFailure(.failure, "cannot read standard input: \(String(cString: strerror(errno)))")
            }
            data = read
        }
        guard data.count <= limit else { throw tooLarge(source, limit) }
        let context = try CacheContext(arguments, io: io, mustExist: false)
        let cache = try context.openWritable()
        defer { cache.close() }
        do {
            try cache.store(data, forKey: key, expiry: ttl == 0 ? .default : .seconds(ttl), locked: arguments.flag("locked"))
        } catch {
            throw CacheContext.failure(for: error, root: context.layout.root)
        }
        io.out(
            "stored '\(key)' (\(HumanFormat.size(data.count)))\(arguments.flag("locked") ? ", locked" : "")\(ttl > 0 ? ", ttl \(HumanFormat.duration(ttl))" : "")\n"
        )
        return .success
    }
}

extension PutCommand {
    /// The failure of an input larger than a record may be.
    static func tooLarge(_ source: String, _ limit: Int) -> CommandFailure {
        CommandFailure(
            .failure,
            "\(source) holds more than \(HumanFormat.size(limit)), the largest record a cache takes (maximumRecordSize); nothing was stored"
        )
    }
}

/// `larder rm KEY...`: removes records.
enum RmCommand: Subcommand {
    static let spec = CommandSpec(
        name: "rm", summary: "Remove the records stored under the keys.",
        positionalUsage: "KEY...", minimumPositionals: 1, maximumPositionals: nil,
        options: CacheContext.changingOptions,
        discussion: "Exits 1 when some key had no record (the others are still removed).")

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let cache = try context.openWritable()
        defer { cache.close() }
        var missing: [String] = []
        for key in arguments.positionals {
            let removed: Bool
            do { removed = try cache.remove(forKey: key) } catch let error where error.code == .invalidKey {
                // A key the encoding refuses names no record.
                removed = false
            } catch {
                throw CacheContext.failure(for: error, root: context.layout.root)
            }
            if removed { io.out("removed '\(key)'\n") } else { missing.append(key) }
        }
        for key in missing { io.err("larder rm: no record for key '\(key)'\n") }
        return missing.isEmpty ? .success : .failure
    }
}

/// `larder lock KEY...`.
enum LockCommand: Subcommand {
    static let spec = CommandSpec(
        name: "lock", summary: "Lock records against expiry and collection (increments the lock count).",
        positionalUsage: "KEY...", minimumPositionals: 1, maximumPositionals: nil,
        options: CacheContext.changingOptions,
        discussion: "Exits 1 when some key could not be locked (absent, expired or corrupt).")

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        try changeLocks(arguments, io: io, locking: true)
    }

    static func changeLocks(_ arguments: ParsedArguments, io: CommandIO, locking: Bool) throws(CommandFailure) -> ExitCode {
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let cache = try context.openWritable()
        defer { cache.close() }
        let keys = arguments.positionals
        let changed: [String]
        do { changed = locking ? try cache.lock(forKeys: keys) : try cache.unlock(forKeys: keys) } catch {
            throw CacheContext.failure(for: error, root: context.layout.root)
        }
        let verb = locking ? "locked" : "unlocked"
        for key in changed { io.out("\(verb) '\(key)'\n") }
        let failed = keys.filter { !changed.contains($0) }
        for key in failed {
            io.err(
                "larder \(locking ? "lock" : "unlock"): not \(verb) '\(key)' (\(locking ? "absent, expired or corrupt" : "absent, corrupt or not locked"))\n"
            )
        }
        return failed.isEmpty ? .success : .failure
    }
}

/// `larder unlock KEY...`.
enum UnlockCommand: Subcommand {
    static let spec = CommandSpec(
        name: "unlock", summary: "Unlock records (decrements the lock count, never below 0).",
        positionalUsage: "KEY...", minimumPositionals: 1, maximumPositionals: nil,
        options: CacheContext.changingOptions,
        discussion: "Exits 1 when some key could not be unlocked (absent, corrupt or not locked).")

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        try LockCommand.changeLocks(arguments, io: io, locking: false)
    }
}
