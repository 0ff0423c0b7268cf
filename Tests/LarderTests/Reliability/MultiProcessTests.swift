#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
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
