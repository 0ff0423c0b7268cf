import Foundation
import Synchronization
import Testing
@testable import Larder

/// Random operations from several threads, and separately from async tasks, on a small key space,
/// with version-stamped payloads and a per-key log of completed stores and removes. Afterwards
/// each key holds a version the log allows, the index matches the files, and lock counts agree.
@Suite struct ConcurrencyTests {
    static let workers = 4
    static let operations = Int(ProcessInfo.processInfo.environment["LARDER_CONCURRENCY_OPS"] ?? "") ?? 1500
    static let keys = (0 ..< 8).map { "key-\($0)" }
    /// Keys 0..<4 are never removed (and there are no limits), so once stored they must be present.
    static let removable = Set(keys[4...])

    final class Log: Sendable {
        struct State {
            var stored: [String: Set<UInt64>] = [:]
            var removed: Set<String> = []
            var wrongBytes = 0
            var ops = 0
        }
        let state = LarderMutex(State())
    }

    static func work(cache: DiskCache, worker: Int, log: Log) {
        var random = SplitMix64(seed: 0xC0C0 &+ UInt64(worker))
        var counter: UInt64 = 0
        for _ in 0 ..< operations {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            do {
                switch random.next() % 10 {
                case 0, 1, 2:
                    counter += 1
                    let version = UInt64(worker) << 32 | counter
                    try cache.store(
                        Data(StampedPayload.make(key: key, version: version, length: Int(random.next() % 6000))), forKey: key,
                        locked: random.next() % 8 == 0)
                    log.state.withLock { _ = $0.stored[key, default: []].insert(version) }
                case 3, 4:
                    if let record = try cache.record(forKey: key), StampedPayload.version(of: record.data, key: key) == nil {
                        log.state.withLock { $0.wrongBytes += 1 }
                    }
                case 5:
                    if try !cache.lock(forKeys: [key]).isEmpty { try cache.unlock(forKeys: [key]) }
                case 6:
                    try cache.unlock(forKeys: [key])
                case 7:
                    if removable.contains(key) {
                        try cache.remove(forKeys: [key])
                        log.state.withLock { _ = $0.removed.insert(key) }
                    } else {
                        _ = try cache.touch(forKey: key)
                    }
                case 8:
                    _ = cache.contains(key)
                    _ = cache.totalSize
                default:
                    if random.next() % 8 == 0 { try cache.collectGarbage() } else { _ = try cache.keys(withPrefix: "key-") }
                }
                log.state.withLock { $0.ops += 1 }
            } catch {
                Issue.record("worker \(worker): \(error)")
            }
        }
    }

    static func audit(_ cache: DiskCache, _ log: Log) throws {
        let state = log.state.withLock { $0 }
        #expect(state.wrongBytes == 0)
        #expect(state.ops == workers * operations)
        for key in keys {
            let record = try cache.record(forKey: key)
            if let record {
                let version = StampedPayload.version(of: record.data, key: key)
                #expect(version.map { state.stored[key]?.contains($0) == true } == true, "\(key): a version the log does not allow")
                // Every lock is paired with an unlock by the same worker, so what remains is at most the
                // one lock a store may give a record.
                #expect(record.lockCount <= 1, "\(key): lock count \(record.lockCount)")
            } else {
                #expect(removable.contains(key) || state.stored[key] == nil, "\(key): stored, never removed, yet missing")
            }
        }
        #expect(DiskAudit.indexMismatches(cache).isEmpty, "\(DiskAudit.indexMismatches(cache))")
        // Each indexed lock count is the one in the record's header; the locked total adds up.
        var lockedOnDisk = 0
        for (name, length) in DiskAudit.recordFiles(in: cache.layout.root) {
            guard case .record(let contents)? = try? cache.records.read(cache.layout.path(for: name), readPayload: false) else {
                Issue.record("\(name) is not a valid record")
                continue
            }
            let indexed = cache.state.withLock { $0.index[name]?.lockCount }
            #expect(
                indexed == contents.header.refCount,
                "\(name): index lock count \(indexed.map(String.init) ?? "-") vs header \(contents.header.refCount)")
            if contents.header.refCount > 0 { lockedOnDisk += cache.diskSize(length) }
        }
        #expect(cache.lockedSize == lockedOnDisk)
        #expect(DiskAudit.strayFiles(in: cache.layout.root).isEmpty)
    }

    @Test func threads() throws {
        let dir = TemporaryDirectory("larder-conc")
        defer { dir.remove() }
        let cache = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        let log = Log()
        let done = DispatchGroup()
        for worker in 0 ..< Self.workers {
            done.enter()
            let thread = Thread {
                Self.work(cache: cache, worker: worker, log: log)
                done.leave()
            }
            thread.start()
        }
        done.wait()
        try Self.audit(cache, log)
        cache.close()
        // And again after a reopen, from the snapshot.
        let reopened = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        try Self.audit(reopened, log)
    }

    @Test func asyncTasks() async throws {
        let dir = TemporaryDirectory("larder-conc")
        defer { dir.remove() }
        let cache = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        let log = Log()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0 ..< Self.workers {
                group.addTask { Self.work(cache: cache, worker: worker + 100, log: log) }
            }
        }
        try Self.audit(cache, log)
    }
}
