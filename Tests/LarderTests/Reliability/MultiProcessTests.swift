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

/// Two processes on one directory, through the `larder-stress` helper.
@Suite struct MultiProcessTests {
    @Test func secondWriterGetsDirectoryInUseUntilTheHolderDies() throws {
        let dir = TemporaryDirectory("larder-mp")
        defer { dir.remove() }
        let holder = try HelperProcess("larder-stress", ["hold", "--dir", dir.path])
        defer { holder.kill() }
        let pid = try #require(holder.waitUntilReady())
        #expect(pid == holder.pid)
        for _ in 0 ..< 3 {
            #expect { try DiskCache(options: DiskCacheOptions(directory: dir.url)) } throws: { error in
                guard let error = error as? CacheError else { return false }
                return error.code == .directoryInUse && error.holderPID == pid
            }
        }
        // A reader is welcome meanwhile.
        var readOnly = DiskCacheOptions(directory: dir.url)
        readOnly.isReadOnly = true
        let reader = try DiskCache(options: readOnly)
        #expect(try reader.record(forKey: "nothing") == nil)
        #expect { try reader.store(Data(), forKey: "k") } throws: { ($0 as? CacheError)?.code == .readOnly }
        // The advisory lock dies with its holder.
        holder.kill()
        #expect(holder.wasKilled)
        let writer = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        try writer.store(Data("mine".utf8), forKey: "k")
        #expect(try writer.record(forKey: "k")?.data == Data("mine".utf8))
    }

    /// How many times a cache tried to take the folder's lock.
    final class Attempts: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
    }

    /// What an open on another thread ended with.
    final class Opened: Sendable {
        let result = Mutex<Result<DiskCache, CacheError>?>(nil)
    }

    /// System calls whose `flock` counts each try at the folder's lock in `attempts`, and signals
    /// `refused` each time another holder makes one fail.
    static func callsSignalling(_ refused: DispatchSemaphore, attempts: Attempts) -> SystemCalls {
        var calls = SystemCalls.live
        let flock = calls.flock
        calls.flock = { fd, operation in
            let result = flock(fd, operation)
            let error = errno
            if operation & LOCK_EX != 0 {
                attempts.count.add(1, ordering: .relaxed)
                if result == -1 && error == EWOULDBLOCK { refused.signal() }
            }
            errno = error
            return result
        }
        return calls
    }

    @Test func aWaitingWriterOpensOnceTheHolderDies() throws {
        let dir = TemporaryDirectory("larder-mp")
        defer { dir.remove() }
        let holder = try HelperProcess("larder-stress", ["hold", "--dir", dir.path])
        defer { holder.kill() }
        #expect(holder.waitUntilReady() == holder.pid)
        var options = DiskCacheOptions(directory: dir.url)
        // Longer than any test runs: the holder's death, not the deadline, ends the wait.
        options.writerWaitTimeout = 3600
        let refused = DispatchSemaphore(value: 0)
        let attempts = Attempts()
        let calls = Self.callsSignalling(refused, attempts: attempts)
        let opened = Opened()
        let done = DispatchSemaphore(value: 0)
        let waiting = options
        let opener = Thread {
            let result = Result { () throws(CacheError) in try DiskCache(options: waiting, systemCalls: calls) }
            opened.result.withLock { $0 = result }
            done.signal()
        }
        opener.start()
        // The opener found the folder held at least once before the holder dies.
        refused.wait()
        holder.kill()
        #expect(holder.wasKilled)
        done.wait()
        let cache = try #require(opened.result.withLock { $0 }).get()
        defer { cache.close() }
        #expect(attempts.value >= 2, "it tried again after the holder's death")
        try cache.store(Data("mine".utf8), forKey: "k")
        #expect(try cache.record(forKey: "k")?.data == Data("mine".utf8))
    }

    @Test func aWriterIsRefusedNamingTheHolderOnceItsWaitPasses() throws {
        let dir = TemporaryDirectory("larder-mp")
        defer { dir.remove() }
        let holder = try HelperProcess("larder-stress", ["hold", "--dir", dir.path])
        defer { holder.kill() }
        let pid = try #require(holder.waitUntilReady())
        var options = DiskCacheOptions(directory: dir.url)
        options.writerWaitTimeout = 0.05
        let attempts = Attempts()
        let calls = Self.callsSignalling(DispatchSemaphore(value: 0), attempts: attempts)
        #expect { try DiskCache(options: options, systemCalls: calls) } throws: { error in
            guard let error = error as? CacheError else { return false }
            return error.code == .directoryInUse && error.holderPID == pid
        }
        // It tried more than once before giving up; without a wait it tries once.
        #expect(attempts.value > 1)
        options.writerWaitTimeout = 0
        attempts.count.store(0, ordering: .relaxed)
        #expect(throws: CacheError.self) { try DiskCache(options: options, systemCalls: calls) }
        #expect(attempts.value == 1)
    }

    @Test func secondWriterInTheSameProcess() throws {
        let dir = TemporaryDirectory("larder-mp")
        defer { dir.remove() }
        let first = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        #expect { try DiskCache(options: DiskCacheOptions(directory: dir.url)) } throws: { error in
            // The message says the holder is this process, and what to do about it.
            guard let error = error as? CacheError else { return false }
            return error.code == .directoryInUse && error.holderPID == getpid()
                && error.message.contains("another cache of this process (\(getpid()))")
                && error.message.contains("close() it, or let go of it, first")
        }
        first.close()
        let second = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        second.close()
    }

    @Test func readOnlyReadersSeeConsistentRecordsWhileTheWriterChurns() throws {
        let dir = TemporaryDirectory("larder-mp")
        defer { dir.remove() }
        // Records for the readers to find from the start, in the writer's own form (it verifies
        // what it reads): the durable keys locked, as the writer stores them.
        do {
            let seeded = try DiskCache(options: DiskCacheOptions(directory: dir.url))
            for (index, key) in ((0 ..< 12).map({ "c\($0)" }) + (0 ..< 16).map({ "d\($0)" })).enumerated() {
                let payload = Data(StampedPayload.make(key: key, version: UInt64(index + 1), length: 100 + index))
                try seeded.store(payload, forKey: key, locked: key.hasPrefix("d"))
            }
            seeded.close()
        }
        let writer = try HelperProcess("larder-stress", ["churn", "--dir", dir.path, "--seed", "99", "--keys", "12"])
        defer { writer.kill() }
        #expect(writer.waitUntilReady() == writer.pid)
        // A reader in another process...
        let reader = try HelperProcess("larder-stress", ["read", "--dir", dir.path, "--keys", "12", "--count", "3000"])
        // ...and one in this process.
        var options = DiskCacheOptions(directory: dir.url)
        options.isReadOnly = true
        let local = try DiskCache(options: options)
        var hits = 0
        var misses = 0
        for i in 0 ..< 3000 {
            let key = i % 2 == 0 ? "c\(i % 12)" : "d\(i % 16)"
            if let record = try local.record(forKey: key) {
                #expect(StampedPayload.version(of: record.data, key: key) != nil, "\(key): wrong bytes while the writer ran")
                hits += 1
            } else {
                misses += 1
            }
        }
        let line = reader.readLine()
        reader.process.waitUntilExit()
        #expect(reader.process.terminationReason == .exit && reader.process.terminationStatus == 0, "reader: \(line ?? "no output")")
        let remoteHits = line.flatMap { $0.split(separator: " ").first { $0.hasPrefix("hits=") } }.flatMap { Int($0.dropFirst(5)) } ?? 0
        #expect(hits > 0 && remoteHits > 0, "local \(hits) hits, \(misses) misses; remote: \(line ?? "-")")
        #expect(writer.process.isRunning, "the writer stopped by itself")
        writer.kill()
        // After the kill, a new writer opens and every record verifies.
        let next = try DiskCache(options: DiskCacheOptions(directory: dir.url))
        for key in (0 ..< 12).map({ "c\($0)" }) + (0 ..< 16).map({ "d\($0)" }) {
            if let record = try next.record(forKey: key) {
                #expect(StampedPayload.version(of: record.data, key: key) != nil)
            }
        }
        #expect(DiskAudit.strayFiles(in: next.layout.root).isEmpty)
        print("multi-process: local reader \(hits) hits / \(misses) misses; remote \(line ?? "-")")
    }
}
