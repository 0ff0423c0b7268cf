import Foundation
import Larder
import Synchronization

/// `larder demo`: exercises the cache on a real directory and says what happened.
enum DemoCommand: Subcommand {
    static let spec = CommandSpec(
        name: "demo", summary: "Create (or reuse) a demo cache and exercise every feature on it.",
        options: [.value("dir", "DIR", "Where (default: $XDG_CACHE_HOME/larder/demo, else ~/.cache/larder/demo).")],
        discussion: """
            Stores text, JSON and PNG images on disk and reads them back, shows the memory tier's
            LRU eviction and expiry, lets a short expiry pass on disk, locks a record, collects
            garbage with a size limit (the locked record survives), promotes a disk hit into
            memory through a HybridCache, and prints the statistics. Its clock is a manual one that starts an hour in the past, so expiry
            happens in an instant. Running it again reuses the directory; a directory that holds
            anything else (a cache the demo did not make, other files) is refused, since the demo
            expires and evicts records. Afterwards try
            'larder ls', 'larder stats' and 'larder report --html report.html'.
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let directory =
            arguments.value("dir").map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? CacheContext.defaultDirectory(environment: io.environment)
        var demo = DemoRun(directory: directory, io: io)
        try demo.run()
        return .success
    }
}

/// One run of the demo. Each feature is one step.
struct DemoRun {
    let directory: URL
    let io: CommandIO
    /// Starts an hour ago, so that every time the demo writes is in the past.
    let clock = ManualClock(now: (Date().timeIntervalSince1970 - 3600).rounded(.down))
    private let events = EventLog()
    private var statistics: [CacheStatistics] = []
    private var cachedKeys: [String] = []

    init(directory: URL, io: CommandIO) {
        self.directory = directory
        self.io = io
    }

    static let pinnedKey = "config/pinned.json"
    static let tokenKey = "session/token"
    static let newsKey = "api/news.json"
    static let logSize = 48 * 1024
    static let logCount = 6

    /// The name the demo gives its cache (``DiskCacheOptions/name``, kept in its metadata):
    /// how a later run knows the folder is its own.
    static let cacheName = "larder-demo"

    mutating func run() throws(CommandFailure) {
        try Self.checkIsDemoFolder(directory)
        say("Larder demo in \(directory.path)")
        var cache = try open(sizeLimit: 0)
        say("Opened the disk cache (\(cache.count) records from earlier runs).\n")
        try diskTier(cache)
        try memoryTier()
        try expiry(cache)
        try lock(cache)
        try storeLogs(cache)
        statistics.append(cache.statistics)
        cache.close()
        cache = try collection()
        try promotion(cache)
        statistics.append(cache.statistics)
        summary(cache)
        cache.close()
        say("\nNext: larder ls --dir \(shellQuoted(directory.path)); larder stats; larder report --html report.html\n")
    }

    // MARK: Steps

    /// Disk tier: stores and loads real payloads.
    private mutating func diskTier(_ cache: DiskCache) throws(CommandFailure) {
        section("Disk tier")
        var items: [(String, Data)] = [("text/greeting.txt", DemoData.greeting), ("api/playlist.json", DemoData.json(items: 40))]
        items += DemoData.images(environment: io.environment, count: 4)
        for (key, data) in items {
            try attempt { () throws(CacheError) in try cache.store(data, forKey: key) }
            say("  stored \(key) (\(HumanFormat.size(data.count)), \(PayloadKind.describe(data).prefix(40)))")
            cachedKeys.append(key)
        }
        tick(1)
        for (key, data) in items.prefix(2) {
            let record = try attempt { () throws(CacheError) in try cache.record(forKey: key) }
            let same = record?.data == data
            say("  load \(key): \(record == nil ? "miss" : "hit")\(same ? ", payload intact" : "")")
        }
        let missing = try attempt { () throws(CacheError) in try cache.record(forKey: "never/stored") }
        say("  load never/stored: \(missing == nil ? "miss, as expected" : "hit?")")
    }

    /// Memory tier: an LRU with a count limit of 3 and an expiry, on the same manual clock.
    private mutating func memoryTier() throws(CommandFailure) {
        section("Memory tier")
        let evicted = Mutex<[String]>([])
        let clock = clock
        let memory = try attempt { () throws(CacheError) in
            try MemoryCache<String, Data>(countLimit: 3, clock: clock) { key, _, reason in
                evicted.withLock { $0.append("\(key) (\(reason))") }
            }
        }
        let items: [(String, Data)] = [
            ("text/greeting.txt", DemoData.greeting), ("api/playlist.json", DemoData.json(items: 40)),
            ("api/profile.json", DemoData.json(items: 2)),
        ]
        for (key, data) in items { try? memory.store(data, forKey: key, cost: data.count) }
        say("  set \(items.count) values in a memory cache with a count limit of 3 (\(HumanFormat.size(memory.totalCost)))")
        _ = memory.value(forKey: "text/greeting.txt")
        try? memory.store(DemoData.json(items: 1), forKey: "api/settings.json", cost: 64)
        say("  read text/greeting.txt, then set a 4th value: evicted \(evicted.withLock { $0 }.joined(separator: ", "))")
        try? memory.store(Data("42".utf8), forKey: "counter", cost: 2, expiry: .seconds(5))
        let before = memory.value(forKey: "counter") != nil
        tick(6)
        let after = memory.value(forKey: "counter") != nil
        say("  counter with expiry 5 s: \(before ? "hit" : "miss") now, \(after ? "hit?" : "miss (expired)") 6 s later")
        say("  memory statistics: \(memory.statistics)")
    }

    /// Expiry: a record stored with a 30 s expiry is gone 31 s later.
    private mutating func expiry(_ cache: DiskCache) throws(CommandFailure) {
        section("Expiry")
        try attempt { () throws(CacheError) in
            try cache.store(Data("token-\(Int(clock.now))".utf8), forKey: Self.tokenKey, expiry: .seconds(30))
        }
        let before = try attempt { () throws(CacheError) in try cache.record(forKey: Self.tokenKey) }
        say("  stored \(Self.tokenKey) with expiry 30 s; read now: \(before == nil ? "miss" : "hit")")
        tick(31)
        let after = try attempt { () throws(CacheError) in try cache.record(forKey: Self.tokenKey) }
        say("  31 s later: \(after == nil ? "miss (expired)" : "hit?")")
    }

    /// A lock: a locked record with a short expiry outlives it, and survives a collection.
    private mutating func lock(_ cache: DiskCache) throws(CommandFailure) {
        section("Lock")
        try attempt { () throws(CacheError) in
            try cache.store(DemoData.json(items: 3), forKey: Self.pinnedKey, expiry: .seconds(10), locked: true)
        }
        try attempt { () throws(CacheError) in try cache.store(DemoData.json(items: 5), forKey: Self.newsKey, expiry: .seconds(10)) }
        say("  stored \(Self.pinnedKey) locked and \(Self.newsKey) unlocked, both with expiry 10 s")
        tick(60)
        let report = try attempt { () throws(CacheError) in try cache.collectGarbage() }
        let pinned = try attempt { () throws(CacheError) in try cache.record(forKey: Self.pinnedKey) }
        let removed = report.removed.map { $0.key ?? $0.file }.joined(separator: ", ")
        say(
            "  60 s later a collection removed \(report.count(for: .expired)) expired record(s) (\(removed)); \(Self.pinnedKey) is \(pinned != nil ? "still there (lock count \(pinned!.lockCount))" : "gone?")"
        )
    }

    /// Log blobs to push the cache over the size limit of the next step; then the earlier
    /// records are read again so that the logs are the least recently used.
    private mutating func storeLogs(_ cache: DiskCache) throws(CommandFailure) {
        section("Filling up")
        for day in 0 ..< Self.logCount {
            try attempt { () throws(CacheError) in
                try cache.store(DemoData.log(day: day, bytes: Self.logSize), forKey: "logs/day-\(day).log")
            }
        }
        tick(1)
        for key in cachedKeys { _ = try attempt { () throws(CacheError) in try cache.value(forKey: key) } }
        say("  stored \(Self.logCount) logs of \(HumanFormat.size(Self.logSize)), then read the earlier records again")
    }

    /// Collection with a size limit: reopen with a limit half a log-batch below the total.
    private mutating func collection() throws(CommandFailure) -> DiskCache {
        section("Collection with a size limit")
        let probe = try open(sizeLimit: 0)
        let total = probe.totalSize
        probe.close()
        let limit = max(4096, total - Self.logCount * Self.logSize / 2)
        events.removeAll()
        let cache = try open(sizeLimit: limit)
        let report = try attempt { () throws(CacheError) in try cache.collectGarbage() }
        let evicted = events.evictions
        say(
            "  size limit \(HumanFormat.size(limit)) (the cache held \(HumanFormat.size(total))): removed \(evicted.count) least recently used record(s):"
        )
        for (key, reason) in evicted { say("    \(key) (\(reason))") }
        let pinned = try attempt { () throws(CacheError) in try cache.record(forKey: Self.pinnedKey) }
        say(
            "  now \(report.remainingCount) records, \(HumanFormat.size(report.remainingSize)); locked \(Self.pinnedKey) \(pinned != nil ? "survived" : "was removed?")"
        )
        return cache
    }

    /// Promotion: a `HybridCache` puts memory in front of the disk cache; a disk hit is copied
    /// into memory, so the next read of that key touches no file.
    private mutating func promotion(_ cache: DiskCache) throws(CommandFailure) {
        section("Promotion")
        let clock = clock
        let (memory, hybrid) = try attempt { () throws(CacheError) in
            let memory = try MemoryCache<String, Data>(countLimit: 100, clock: clock)
            return (memory, try HybridCache(memory: memory, disk: cache))
        }
        let key = "text/greeting.txt"
        let fromMemoryBefore = try attempt { () throws(CacheError) in try hybrid.value(forKey: key, from: .memory) }
        say("  memory alone before: \(fromMemoryBefore == nil ? "miss" : "hit?")")
        let loadsBefore = cache.statistics.hits
        let first = try attempt { () throws(CacheError) in try hybrid.value(forKey: key) }
        say("  read through both tiers: \(first == nil ? "miss?" : "disk hit (\(HumanFormat.size(first!.count))), promoted to memory")")
        let second = try attempt { () throws(CacheError) in try hybrid.value(forKey: key) }
        let diskReads = cache.statistics.hits - loadsBefore
        say("  read again: \(second == first && second != nil ? "memory hit" : "mismatch?"); disk loads for both reads: \(diskReads)")
        try attempt { () throws(CacheError) in try hybrid.store(Data("written through".utf8), forKey: "hybrid/note.txt") }
        let inMemory = memory.value(forKey: "hybrid/note.txt") != nil
        let onDisk = cache.contains("hybrid/note.txt")
        say("  stored hybrid/note.txt through the hybrid: memory \(inMemory ? "yes" : "no"), disk \(onDisk ? "yes" : "no")")
        _ = try attempt { () throws(CacheError) in try hybrid.remove(forKey: "hybrid/note.txt") }
        let gone = try attempt { () throws(CacheError) in try hybrid.value(forKey: "hybrid/note.txt") } == nil
        say("  removed it: \(gone ? "gone from both tiers" : "still there?")")
        say("  memory statistics: \(memory.statistics)")
    }

    private func summary(_ cache: DiskCache) {
        section("Statistics")
        let total = statistics.reduce(CacheStatistics()) { $0.adding($1) }
        var fields = FieldList()
        fields.add("  stores", "\(total.insertions) (\(HumanFormat.size(total.bytesWritten)))")
        fields.add("  hits", "\(total.hits) (\(HumanFormat.size(total.bytesRead)))")
        fields.add("  misses", "\(total.misses) (\(total.expirations) expired)")
        fields.add("  collections", "\(total.collections)")
        fields.add(
            "  evictions",
            [EvictionReason.expired, .sizeLimit, .countLimit, .diskFull].map { "\($0) \(total.evictions[$0] ?? 0)" }.joined(separator: ", ")
        )
        fields.add(
            "  on disk", "\(cache.count) records, \(HumanFormat.size(cache.totalSize)), locked \(HumanFormat.size(cache.lockedSize))")
        io.out(fields.render())
    }

    // MARK: Helpers

    /// Refuses a folder the demo did not make: one whose metadata names another cache, or one
    /// that holds files without metadata (an SPT cache, or no cache at all). A missing folder,
    /// an empty one, or one that holds only Larder's own files is the demo's to use.
    /// - Throws: Exit code 3 saying why.
    static func checkIsDemoFolder(_ directory: URL) throws(CommandFailure) {
        let layout = DiskLayout(root: directory.standardizedFileURL.path)
        // Missing (created by the open) or not a folder (which the open reports).
        guard let files = try? FileIO().rooted(at: layout.root) else { return }
        let metadata: DirectoryMetadata?
        do { metadata = try DiskCache.readMetadata(layout: layout, io: files) } catch {
            throw CacheContext.failure(for: error, root: layout.root)
        }
        let refusal =
            "'\(layout.root)' holds a cache or files that 'larder demo' did not make, and the demo stores, expires and evicts records; pass --dir a new or empty folder"
        if let metadata {
            guard metadata.name == cacheName else { throw CommandFailure(.cacheError, refusal) }
            return
        }
        let entries: [DirectoryEntry]
        do { entries = try files.listDirectory(layout.root) } catch {
            throw CommandFailure(.cacheError, "cannot read '\(layout.root)': \(String(cString: strerror(error.rawValue)))")
        }
        if entries.contains(where: { entry in entry.name.map { !DiskLayout.isLarderFile($0) } ?? true }) {
            throw CommandFailure(.cacheError, refusal)
        }
    }

    private func open(sizeLimit: Int) throws(CommandFailure) -> DiskCache {
        var options = DiskCacheOptions(directory: directory)
        options.name = Self.cacheName
        options.clock = clock
        options.sizeLimit = sizeLimit
        options.sharesFolderWithWriters = true
        options.eventHandler = { [events] in events.append($0) }
        do {
            return try DiskCache(options: options)
        } catch {
            if error.code == .keyEncodingMismatch {
                throw CommandFailure(.cacheError, "'\(directory.path)' is not a demo cache (\(error.message)); pass another --dir")
            }
            throw CacheContext.failure(for: error, root: directory.path)
        }
    }

    private func tick(_ seconds: Double) { clock.advance(by: seconds) }
    private func say(_ line: TerminalText) { io.out(line + "\n") }
    private func section(_ title: String) { io.out("\n\(title)\n") }

    @discardableResult
    private func attempt<T>(_ body: () throws(CacheError) -> T) throws(CommandFailure) -> T {
        do { return try body() } catch {
            throw CacheContext.failure(for: error, root: directory.path)
        }
    }

    private func shellQuoted(_ path: String) -> String {
        path.allSatisfy { $0.isLetter || $0.isNumber || "/._-".contains($0) }
            ? path : "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
