import Foundation
import Synchronization
@testable import Larder

/// Opens a cache on a crash state of a ``PowerLossRun`` and says what is wrong with it.
///
/// The promises checked, for a crash after the first `k` operations of the run's trace:
/// - the cache opens (twice: as it is, and without its index snapshot) and leaves no temporary file;
/// - no load returns bytes other than a version whose store had begun before the crash
///   (payloads are ``StampedPayload``s, so the bytes say which key and version they are);
/// - with ``Durability/fsync``, a key whose last change (store, lock, unlock, remove) had
///   returned before the crash, with no later change begun, holds exactly what that change left:
///   the version and lock count, or no record after a remove;
/// - the index built from the snapshot equals the one a scan of the files builds (keys, count,
///   total and locked size, each record's lock count), as far as ``IndexPromise`` says.
struct PowerLossOracle {
    let run: PowerLossRun
    let model: PersistenceModel

    /// What a batch of checks covered.
    struct Tally: CustomStringConvertible {
        var states = 0
        /// Of those, states left by a second power loss while a cache recovered from the first.
        var recoveryStates = 0
        /// States with an exact index image on disk (base and journal), compared with a scan.
        var statesWithSnapshot = 0
        var loads = 0
        var hits = 0
        /// Keys whose exact content the durability promised.
        var promisesChecked = 0
        /// Torn records the loads caught (by header, stored-key or payload checks).
        var tornRecordsCaught = 0
        /// Differences between the snapshot's index and a scan's that ``IndexPromise`` allows.
        var unpromisedIndexDifferences = 0
        /// States whose open left a shard folder unlisted, the snapshot's stamp for it unchanged.
        var statesTrustingStamps = 0

        var description: String {
            "\(states) states (\(recoveryStates) after a second loss during recovery, \(statesWithSnapshot) with a snapshot), \(loads) loads (\(hits) hits), \(promisesChecked) durable promises, \(tornRecordsCaught) torn records caught, \(unpromisedIndexDifferences) unpromised index differences, \(statesTrustingStamps) trusting folder stamps"
        }
    }

    /// What an index holds, to compare two.
    struct IndexFacts: Equatable, CustomStringConvertible {
        var count: Int
        var totalSize: Int
        var lockedSize: Int
        var lockCounts: [String: UInt32]
        var keys: Set<String>

        init(_ cache: DiskCache) throws(CacheError) {
            keys = Set(try cache.keys(includingExpired: true))
            (count, totalSize, lockedSize, lockCounts) = cache.state.withLock { s in
                s.index._checkInvariants()
                let entries = s.index.entriesLeastRecentFirst
                return (
                    s.index.count, s.index.totalSize, s.index.lockedSize,
                    Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.lockCount) })
                )
            }
        }

        var description: String {
            "count \(count), size \(totalSize), locked \(lockedSize), locks \(lockCounts.filter { $0.value > 0 }.count), keys \(keys.sorted())"
        }
    }

    /// How far the index built from a snapshot must agree with a scan of the files.
    enum IndexPromise {
        /// In every fact: ``Durability/fsync`` syncs each change a snapshot describes before the
        /// snapshot is written, and withdraws the snapshot durably before the next change.
        case exact
        /// In keys, count and total size, not lock counts: ``Durability/atomicRename`` on ext4.
        /// The journal keeps renames and removals in order with the snapshot's own rename, but
        /// a lock count is rewritten in place, unsynced, and ext4 writes such data back in any
        /// order, so a lock or unlock may be lost while the snapshot that counts it survives.
        case namesAndSizes
        /// None: ``Durability/atomicRename`` on the weakest model, where the snapshot's rename
        /// may survive without the renames and removals made before it.
        case none
    }

    var indexPromise: IndexPromise {
        if run.durability == .fsync { return .exact }
        return model == .ext4Ordered ? .namesAndSizes : .none
    }

    /// Whether two indexes agree as far as ``indexPromise`` says they must.
    func agree(_ a: IndexFacts, _ b: IndexFacts) -> Bool {
        switch indexPromise {
        case .exact: a == b
        case .namesAndSizes: a.keys == b.keys && a.count == b.count && a.totalSize == b.totalSize && a.lockCounts.keys == b.lockCounts.keys
        case .none: true
        }
    }

    /// The index image (base and journal) in `image`, as a cache opening it reads it; `nil`
    /// when it is absent.
    static func indexImage(_ image: DiskImage, options: DiskCacheOptions) -> IndexJournal.Image? {
        let root = PowerLossRun.directory.path
        guard let base = image.node(atPath: root + "/" + DiskLayout.snapshotName).flatMap({ image[$0]?.data }) else { return nil }
        let journal = image.node(atPath: root + "/" + DiskLayout.journalName).flatMap { image[$0]?.data }
        return IndexJournal.load(base: base, journal: journal, keyEncoding: options.keyEncoding)
    }

    /// Checks one crash state taken after the first `k` operations of the trace.
    /// - Parameters:
    ///   - recoveryCrashes: How many crash states of the recovery itself to check too: the
    ///     cache that checked `image` (opening, loading, closing) ran on a simulated disk of its
    ///     own, and a power loss may strike it anywhere; each state it may leave must keep the
    ///     same promises.
    ///   - seed: Picks those states.
    /// - Returns: The problems found, each naming the crash point.
    func check(_ image: DiskImage, at k: Int, tally: inout Tally, recoveryCrashes: Int = 0, seed: UInt64 = 0) -> [String] {
        let disk = SimulatedDisk(image)
        var problems = check(disk, image, at: k, tally: &tally)
        guard recoveryCrashes > 0, problems.isEmpty else { return problems }
        let states = CrashStates(of: disk)
        var random = SplitMix64(seed: seed)
        for _ in 0 ..< recoveryCrashes {
            let point = random.below(states.trace.count + 1)
            let nested = states.randomState(upTo: point, model: model, random: &random)
            tally.recoveryStates += 1
            problems += check(SimulatedDisk(nested), nested, at: k, tally: &tally).map {
                "\($0) (then a second power loss during recovery, after \(point) of its \(states.trace.count) calls)"
            }
        }
        return problems
    }

    /// Opens a cache on `disk`, which holds `image`, checks it, and closes it.
    private func check(_ disk: SimulatedDisk, _ image: DiskImage, at k: Int, tally: inout Tally) -> [String] {
        var problems: [String] = []
        func problem(_ text: String) { problems.append("crash after \(k) of \(run.disk.traceCount) operations: \(text)") }
        tally.states += 1
        let root = PowerLossRun.directory.path
        let clock = ManualClock(now: 1_700_000_000 + Double(run.stepCount + 1))
        let events = EventLog()
        // No size limit: a limit would evict at open, in an order that depends on the snapshot.
        let options = PowerLossRun.options(durability: run.durability, sizeLimit: 0, clock: clock, events: events)

        let cache: DiskCache
        do {
            cache = try DiskCache(options: options, systemCalls: disk.calls)
        } catch {
            problem("open failed: \(error)")
            return problems
        }
        defer { cache.close() }
        let hadSnapshot = Self.indexImage(image, options: options) != nil
        cache.waitForIndex()
        if cache.state.withLock({ $0.foldersVouchedFor }) > 0 { tally.statesTrustingStamps += 1 }
        let facts: IndexFacts
        do { facts = try IndexFacts(cache) } catch {
            problem("listing keys failed: \(error)")
            return problems
        }
        let opened = disk.image
        let temporary = opened.node(atPath: root + "/" + DiskLayout.temporaryFolderName).flatMap { opened[$0]?.entries.keys.sorted() }
        if let temporary, !temporary.isEmpty { problem("temporary files left after open: \(temporary)") }
        let strays = (opened.node(atPath: root).flatMap { opened[$0]?.entries.keys } ?? [:].keys).filter { $0.contains(".tmp-") }
        if !strays.isEmpty { problem("temporary files left at the root after open: \(strays.sorted())") }

        // The same state without its base (so with no image): a fresh scan of the files.
        if hadSnapshot {
            let scanned = SimulatedDisk(image.removing(root + "/" + DiskLayout.snapshotName))
            do {
                let fresh = try DiskCache(options: options, systemCalls: scanned.calls)
                defer { fresh.close() }
                let freshFacts = try IndexFacts(fresh)
                tally.statesWithSnapshot += 1
                if !agree(facts, freshFacts) {
                    problem("the index built from the snapshot (\(facts)) differs from a scan (\(freshFacts))")
                } else if facts != freshFacts {
                    tally.unpromisedIndexDifferences += 1
                }
            } catch {
                problem("open without the snapshot failed: \(error)")
            }
        }

        for key in PowerLossRun.keys {
            let record: CacheRecord?
            do { record = try cache.record(forKey: key) } catch {
                problem("loading \(key) failed: \(error)")
                continue
            }
            tally.loads += 1
            var version: UInt64?
            if let record {
                tally.hits += 1
                version = StampedPayload.version(of: record.data, key: key)
                guard let version, run.versionsStarted(for: key, before: k).contains(version) else {
                    problem("\(key): \(record.data.count) bytes that were never stored under it: \(Array(record.data.prefix(24)))")
                    continue
                }
            }
            guard run.durability == .fsync, let change = run.lastChange(to: key, before: k), change.end <= k, change.kind != .evicted
            else { continue }
            tally.promisesChecked += 1
            if let expected = change.version {
                if version != expected || record?.lockCount != change.lockCount {
                    problem(
                        "\(key): after a \(change.kind) that returned (operations \(change.begin)..<\(change.end)), expected version \(expected) lock \(change.lockCount), found \(version.map(String.init) ?? "nothing") lock \(record?.lockCount ?? 0)"
                    )
                }
            } else if record != nil {
                problem("\(key): removed (operations \(change.begin)..<\(change.end)) but back after the power loss")
            }
        }
        tally.tornRecordsCaught +=
            events.drain().filter {
                if case .corruptRecordRemoved = $0 { true } else { false }
            }.count
        return problems
    }
}
