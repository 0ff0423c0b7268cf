#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import Testing
@testable import Larder

/// Fails, one at a time, every system call that each operation makes, with each of EIO, ENOSPC,
/// EINTR and EACCES, and shortens every read and write; then checks that the call either worked
/// or threw a ``CacheError``, that the previous record is intact, and that nothing is half-written.
@Suite struct FaultInjectionTests {
    enum Operation: String, CaseIterable, CustomStringConvertible {
        case store, load, lock, unlock, remove, collect
        var description: String { rawValue }
    }

    static let faults: [FaultInjector.Fault] = [.fail(EIO), .fail(ENOSPC), .fail(EINTR), .fail(EACCES), .short]
    static let key = "k"
    static let bystander = "b"
    static let expired = "e"
    // Over 64 KiB, so that a store writes the header and the payload separately.
    static let old = Data(StampedPayload.make(key: key, version: 1, length: 70_000))
    static let new = Data(StampedPayload.make(key: key, version: 2, length: 9_000))
    static let other = Data(StampedPayload.make(key: bystander, version: 1, length: 3_000))

    struct Fixture {
        let dir: TemporaryDirectory
        let injector = FaultInjector()
        let cache: DiskCache
        let clock = ManualClock(now: 1_700_000_000)

        init(_ operation: Operation) throws {
            dir = TemporaryDirectory("larder-fault")
            var options = DiskCacheOptions(directory: dir.url)
            options.durability = .fsync
            options.clock = clock
            cache = try DiskCache(options: options, systemCalls: injector.calls)
            // The index is built before the stores: a store made while the build still runs can
            // leave its record unvouched for, and the operations' system calls would then depend
            // on how fast the build went (a removal reads an unvouched record's header first).
            cache.waitForIndex()
            try cache.store(FaultInjectionTests.old, forKey: FaultInjectionTests.key)
            try cache.store(FaultInjectionTests.other, forKey: FaultInjectionTests.bystander)
            try cache.store(Data("gone soon".utf8), forKey: FaultInjectionTests.expired, expiry: .seconds(1))
            if operation == .unlock { try cache.lock(forKeys: [FaultInjectionTests.key]) }
            clock.advance(by: 5)
            _ = cache.count  // the index is built before any fault
        }

        func lockCount() -> Int {
            guard
                case .record(let contents)? = try? cache.records.read(
                    cache.layout.path(for: try! cache.options.keyEncoding.fileName(for: FaultInjectionTests.key)), readPayload: false)
            else { return -1 }
            return Int(contents.header.refCount)
        }

        func run(_ operation: Operation) throws {
            switch operation {
            case .store: try cache.store(FaultInjectionTests.new, forKey: FaultInjectionTests.key)
            case .load:
                if let record = try cache.record(forKey: FaultInjectionTests.key) {
                    #expect(record.data == FaultInjectionTests.old, "a load under a fault returned other bytes")
                }
            case .lock: try cache.lock(forKeys: [FaultInjectionTests.key])
            case .unlock: try cache.unlock(forKeys: [FaultInjectionTests.key])
            case .remove: try cache.remove(forKeys: [FaultInjectionTests.key])
            case .collect: try cache.collectGarbage()
            }
        }
    }

    /// The system calls an operation makes when nothing fails.
    static func callCounts(_ operation: Operation) throws -> [FaultInjector.Kind: Int] {
        let fixture = try Fixture(operation)
        defer {
            fixture.cache.close()
            fixture.dir.remove()
        }
        fixture.injector.disarm()
        try fixture.run(operation)
        return fixture.injector.counts
    }

    @Test(arguments: Operation.allCases)
    func everyCallFailsOnce(_ operation: Operation) throws {
        let counts = try Self.callCounts(operation)
        #expect(!counts.isEmpty)
        var cases = 0
        var threw = 0
        for (kind, count) in counts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            for nth in 1 ... count {
                for fault in Self.faults where fault != .short || kind.transfers {
                    cases += 1
                    let label = "\(operation): \(kind) #\(nth) \(fault)"
                    let fixture = try Fixture(operation)
                    defer {
                        fixture.cache.close()
                        fixture.dir.remove()
                    }
                    let locksBefore = fixture.lockCount()
                    fixture.injector.arm(kind, nth: nth, fault)
                    var succeeded = true
                    var failure: CacheError?
                    do {
                        try fixture.run(operation)
                    } catch let error as CacheError {
                        succeeded = false
                        failure = error
                        threw += 1
                        #expect(error.code == .ioFailure || error.code == .diskFull, "\(label): \(error)")
                    } catch {
                        Issue.record("\(label): an error that is not a CacheError: \(error)")
                    }
                    let fired = fixture.injector.fired
                    // A store whose rename went through has replaced the record, even if a later call failed.
                    let committed = kind != .rename && (fixture.injector.counts[.rename] ?? 0) > 0
                    fixture.injector.disarm()
                    #expect(fired > 0 || !succeeded || kind == .close, "\(label): the fault never fired")

                    // The record under the key: exactly what the outcome says.
                    let data = try fixture.cache.record(forKey: Self.key)?.data
                    switch operation {
                    case .store:
                        #expect(
                            data == (succeeded || committed ? Self.new : Self.old),
                            "\(label): succeeded \(succeeded), committed \(committed)")
                    case .remove:
                        // A remove whose unlink went through has removed the record even when the
                        // folder's sync then failed (`.fsync`); the error says so.
                        let unsynced = failure?.message.contains("was removed, but its folder could not be synced") == true
                        #expect(
                            data == (succeeded || unsynced ? nil : Self.old),
                            "\(label): succeeded \(succeeded), \(failure.map { "\($0)" } ?? "")")
                    default: #expect(data == Self.old, "\(label): the record changed or vanished")
                    }
                    let locksAfter = fixture.lockCount()
                    switch operation {
                    case .lock:
                        #expect(
                            locksAfter == locksBefore + (succeeded ? 1 : 0),
                            "\(label): lock count \(locksBefore) → \(locksAfter), succeeded \(succeeded)")
                    case .unlock:
                        #expect(
                            locksAfter == locksBefore - (succeeded ? 1 : 0),
                            "\(label): lock count \(locksBefore) → \(locksAfter), succeeded \(succeeded)")
                    case .store, .remove: break
                    default: #expect(locksAfter == locksBefore, "\(label)")
                    }
                    // A full disk may evict the bystander; nothing may change its bytes.
                    let otherData = try fixture.cache.record(forKey: Self.bystander)?.data
                    #expect(
                        otherData == Self.other || (otherData == nil && fault == .fail(ENOSPC)),
                        "\(label): bystander \(otherData?.count ?? -1) bytes")
                    // Nothing half-written: no temporary files, every record file valid, index == disk.
                    #expect(
                        DiskAudit.strayFiles(in: fixture.cache.layout.root).isEmpty,
                        "\(label): \(DiskAudit.strayFiles(in: fixture.cache.layout.root))")
                    for name in DiskAudit.recordFiles(in: fixture.cache.layout.root).keys {
                        guard case .record? = try? fixture.cache.records.read(fixture.cache.layout.path(for: name)) else {
                            Issue.record("\(label): \(name) does not read as a valid record")
                            continue
                        }
                    }
                    let mismatches = DiskAudit.indexMismatches(fixture.cache)
                    #expect(mismatches.isEmpty, "\(label): \(mismatches)")
                }
            }
        }
        print("faults, \(operation): \(cases) cases over \(counts.values.reduce(0, +)) calls, \(threw) threw")
    }

    /// Faults while opening: each call of the open path fails once; the open works or throws a CacheError.
    @Test func openFailsCleanly() throws {
        let seed = TemporaryDirectory("larder-fault-open")
        defer { seed.remove() }
        do {
            let cache = try DiskCache(options: DiskCacheOptions(directory: seed.url))
            try cache.store(Self.old, forKey: Self.key)
            cache.close()
        }
        let probe = FaultInjector()
        do {
            let cache = try DiskCache(options: DiskCacheOptions(directory: seed.url), systemCalls: probe.calls)
            _ = cache.count
            cache.close()
        }
        let counts = probe.counts
        var cases = 0
        for (kind, count) in counts {
            for nth in 1 ... count {
                for fault in Self.faults where fault != .short || kind.transfers {
                    cases += 1
                    let injector = FaultInjector()
                    injector.arm(kind, nth: nth, fault)
                    do {
                        let cache = try DiskCache(options: DiskCacheOptions(directory: seed.url), systemCalls: injector.calls)
                        _ = cache.count
                        injector.disarm()
                        // The record either loads exactly or, if the build's read of it failed, loads on demand.
                        #expect(try cache.record(forKey: Self.key)?.data == Self.old, "open: \(kind) #\(nth) \(fault)")
                        cache.close()
                    } catch {
                        // Typed throws: only a CacheError can reach here.
                        #expect(
                            [.ioFailure, .unsupportedFormat, .directoryInUse].contains(error.code),
                            "open: \(kind) #\(nth) \(fault): \(error)")
                    }
                    injector.disarm()
                }
            }
        }
        #expect(cases > 0)
        // After all that, the directory still opens and holds the record.
        let cache = try DiskCache(options: DiskCacheOptions(directory: seed.url))
        #expect(try cache.record(forKey: Self.key)?.data == Self.old)
        print("faults, open: \(cases) cases")
    }
}
