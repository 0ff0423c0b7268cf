import Foundation
import Synchronization
@testable import Larder

/// A workload run on a ``SimulatedDisk``, with what it did recorded against the disk's trace,
/// so that ``PowerLossOracle`` can say what each crash state must hold.
struct PowerLossRun {
    /// One operation on the cache.
    enum Step: Sendable, CustomStringConvertible {
        case store(key: String, length: Int, locked: Bool)
        case lock(String)
        case unlock(String)
        case remove(String)
        case load(String)
        case collect
        /// `close()`, then a new cache on the same disk (which reads the snapshot the close wrote).
        case reopen

        var description: String {
            switch self {
            case .store(let key, let length, let locked): "store \(key) \(length)B\(locked ? " locked" : "")"
            case .lock(let key): "lock \(key)"
            case .unlock(let key): "unlock \(key)"
            case .remove(let key): "remove \(key)"
            case .load(let key): "load \(key)"
            case .collect: "collect"
            case .reopen: "reopen"
            }
        }
    }

    /// A change to one key's record, with the stretch of the trace its call covered: the call
    /// began once the trace had `begin` operations and returned once it had `end`.
    struct Change: Sendable {
        enum Kind: Sendable {
            case store, lock, unlock, remove
            /// Removed by a collection or a limit, without a sync: the file may come back.
            case evicted
        }

        var kind: Kind
        var begin: Int
        var end: Int
        /// The payload version the key holds after the change (`nil`: no record).
        var version: UInt64?
        /// The lock count after the change.
        var lockCount: Int
    }

    static let directory = URL(fileURLWithPath: "/larder-sim/cache", isDirectory: true)
    static let keys = (0 ..< 6).map { "key-\($0)" }

    let durability: Durability
    let disk: SimulatedDisk
    /// Every change, per key, in order.
    private(set) var changes: [String: [Change]] = [:]
    /// Every store's version and where it began, per key: what a load may return.
    private(set) var stores: [String: [(begin: Int, version: UInt64)]] = [:]
    /// Problems seen while the workload ran (it must run cleanly on the simulated disk).
    private(set) var problems: [String] = []
    /// Operations run.
    private(set) var stepCount = 0
    /// Background compactions of the journal run (each right after the collection that
    /// scheduled it, so that the trace stays in order).
    private(set) var compactions = 0

    /// The options of every cache in these tests: a size limit small enough that stores and
    /// collections evict, and a clock that only the workload moves.
    static func options(durability: Durability, sizeLimit: Int = 96 * 1024, clock: ManualClock, events: EventLog?) -> DiskCacheOptions {
        var options = DiskCacheOptions(directory: directory)
        options.durability = durability
        options.sizeLimit = sizeLimit
        options.clock = clock
        options.eventHandler = events?.handler
        return options
    }

    /// A random workload over ``keys``: stores (some locked, some over 64 KiB, so that header
    /// and payload are written apart), overwrites, locks, unlocks, removes, loads, collections
    /// and reopens.
    static func randomSteps(count: Int, seed: UInt64) -> [Step] {
        var random = SplitMix64(seed: seed)
        var steps: [Step] = []
        for _ in 0 ..< count {
            let key = keys[random.below(keys.count)]
            // Collections and reopens often enough that many crash points find a snapshot on disk.
            switch random.below(100) {
            case 0 ..< 36:
                let length = random.below(20) == 0 ? 66_000 + random.below(4_000) : random.below(9_000)
                steps.append(.store(key: key, length: length, locked: random.below(5) == 0))
            case 36 ..< 47: steps.append(.lock(key))
            case 47 ..< 56: steps.append(.unlock(key))
            case 56 ..< 64: steps.append(.remove(key))
            case 64 ..< 78: steps.append(.load(key))
            case 78 ..< 92: steps.append(.collect)
            default: steps.append(.reopen)
            }
        }
        return steps
    }

    /// Runs `steps` on a fresh simulated disk (the first open included in the trace).
    init(steps: [Step], durability: Durability, seed: UInt64) {
        self.durability = durability
        disk = SimulatedDisk()
        let clock = ManualClock()
        let events = EventLog()
        let options = Self.options(durability: durability, clock: clock, events: events)
        var versions: [String: UInt64] = [:]
        var lockCounts: [String: Int] = [:]
        var nextVersion = seed &* 1_000_000

        var held: HeldCompactions?
        func open() -> DiskCache? {
            do {
                let cache = try DiskCache(options: options, systemCalls: disk.calls)
                _ = cache.count  // waits for the background index build, so the trace stays in order
                // A bound a few commits long, so that collections schedule compactions, run
                // after them here rather than on the cache's queue.
                held = HeldCompactions(cache)
                cache.snapshotGate.withLock { $0.journalBoundFloor = 256 }
                return cache
            } catch {
                problems.append("open failed on the live disk: \(error)")
                return nil
            }
        }
        guard var cache = open() else { return }
        for step in steps {
            clock.advance(by: 1)
            let begin = disk.traceCount
            var change: (key: String, kind: Change.Kind)?
            do {
                switch step {
                case .store(let key, let length, let locked):
                    nextVersion += 1
                    stores[key, default: []].append((begin, nextVersion))
                    try cache.store(Data(StampedPayload.make(key: key, version: nextVersion, length: length)), forKey: key, locked: locked)
                    versions[key] = nextVersion
                    lockCounts[key] = locked ? 1 : 0
                    change = (key, .store)
                case .lock(let key):
                    if try cache.lock(forKeys: [key]) == [key] {
                        lockCounts[key, default: 0] += 1
                        change = (key, .lock)
                    }
                case .unlock(let key):
                    if try cache.unlock(forKeys: [key]) == [key] {
                        lockCounts[key, default: 0] -= 1
                        change = (key, .unlock)
                    }
                case .remove(let key):
                    try cache.remove(forKey: key)
                    versions[key] = nil
                    lockCounts[key] = 0
                    change = (key, .remove)
                case .load(let key):
                    let record = try cache.record(forKey: key)
                    let version = record.flatMap { StampedPayload.version(of: $0.data, key: key) }
                    if version != versions[key] || (record?.lockCount ?? 0) != (versions[key] == nil ? 0 : lockCounts[key] ?? 0) {
                        problems.append(
                            "live load of \(key) gave version \(version.map(String.init) ?? "none") lock \(record?.lockCount ?? -1), expected \(versions[key].map(String.init) ?? "none") lock \(lockCounts[key] ?? 0)"
                        )
                    }
                case .collect:
                    try cache.collectGarbage()
                    compactions += held?.runAll() ?? 0
                case .reopen:
                    cache.close()
                    guard let reopened = open() else { return }
                    cache = reopened
                }
            } catch {
                problems.append("\(step) failed on the live disk: \(error)")
            }
            let end = disk.traceCount
            if let change {
                changes[change.key, default: []].append(
                    Change(kind: change.kind, begin: begin, end: end, version: versions[change.key], lockCount: lockCounts[change.key] ?? 0)
                )
            }
            for event in events.drain() {
                switch event {
                case .recordEvicted(let key?, _, _):
                    versions[key] = nil
                    lockCounts[key] = 0
                    changes[key, default: []].append(Change(kind: .evicted, begin: begin, end: end, version: nil, lockCount: 0))
                case .corruptRecordRemoved(let key, let file, let reason):
                    problems.append("\(step): a record the live run wrote was corrupt: \(key ?? file) (\(reason))")
                case .ioError(let operation, let path, let errno):
                    problems.append("\(step): \(operation) failed on \(path) with errno \(errno)")
                default:
                    break
                }
            }
            stepCount += 1
        }
        cache.close()
    }

    /// The last change to `key` that had begun before crash point `k`.
    func lastChange(to key: String, before k: Int) -> Change? {
        changes[key]?.last { $0.begin < k }
    }

    /// A hash of what the oracle expects of a crash state at point `k` (per key: the last change
    /// begun, whether it returned, the stores begun), so that one image need not be checked twice
    /// against the same expectations, and is checked again where they differ.
    func expectations(at k: Int) -> Int {
        var hasher = Hasher()
        for key in Self.keys {
            let change = lastChange(to: key, before: k)
            hasher.combine(change?.begin)
            hasher.combine(change.map { $0.end <= k })
            hasher.combine((stores[key] ?? []).filter { $0.begin < k }.count)
        }
        return hasher.finalize()
    }

    /// The versions of `key` whose store had begun before crash point `k`: all a load may return.
    func versionsStarted(for key: String, before k: Int) -> Set<UInt64> {
        Set((stores[key] ?? []).filter { $0.begin < k }.map(\.version))
    }
}
