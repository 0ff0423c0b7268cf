#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import LarderTestSupport
import Testing
@testable import Larder

@Suite("Kept record descriptors under exhaustion and concurrency")
struct DescriptorCacheStressTests {
    /// Closes recorded by a ``DescriptorCache`` built over it, and performed.
    typealias CloseLog = RecordedCloses

    @Test("a descriptor retired or evicted while lent is closed by its last user, not before")
    func closeAfterLastUse() throws {
        let dir = TemporaryDirectory("larder-fd-lease")
        defer { dir.remove() }
        let log = CloseLog(performing: true)
        let cache = DescriptorCache(limit: 1, calls: log.calls)
        func openFile(_ name: String) -> Int32 {
            let made = FileManager.default.createFile(atPath: dir.url.appendingPathComponent(name).path, contents: Data([1]))
            #expect(made)
            return open(dir.url.appendingPathComponent(name).path, O_RDONLY | O_CLOEXEC)
        }
        let a = openFile("a")
        #expect(!cache.keep(a, as: "a"), "admission keeps a name from its second read")
        #expect(cache.keep(a, as: "a"))
        #expect(!cache.keep(a, as: "a"), "one descriptor per name")
        #expect(cache.lend("a") == a)
        #expect(cache.lend("a") == a)
        cache.retire("a")
        #expect(cache.counts.kept == 0 && cache.counts.draining == 1)
        #expect(log.all.isEmpty)
        cache.giveBack(a)
        #expect(log.all.isEmpty)
        cache.giveBack(a)
        #expect(log.all == [a])

        // Evicted while lent: the bound is 1, so keeping "c" evicts "b".
        let b = openFile("b")
        #expect(!cache.keep(b, as: "b"))
        #expect(cache.keep(b, as: "b"))
        #expect(cache.lend("b") == b)
        let c = openFile("c")
        // "c" displaces "b" once read more often than it (offered twice, lent once) by more than
        // the admission margin of 2: at its sixth offer.
        for _ in 0 ..< 5 { #expect(!cache.keep(c, as: "c")) }
        #expect(cache.keep(c, as: "c"))
        #expect(cache.counts.kept == 1 && cache.counts.draining == 1)
        #expect(log.all == [a])
        cache.giveBack(b)
        #expect(log.all == [a, b])

        // Exhaustion closes the idle ones and halves the bound; closing keeps nothing more.
        #expect(cache.relieve())
        #expect(log.all == [a, b, c])
        #expect(cache.counts.bound == 0)
        let d = openFile("d")
        cache.retireAll(closing: true)
        #expect(!cache.keep(d, as: "d"))
        #expect(!cache.keep(d, as: "d"))
        close(d)
    }

    static func options(_ dir: TemporaryDirectory, limit: Int) -> DiskCacheOptions {
        var options = testOptions(dir.url)
        options.maximumOpenFiles = limit
        options.flushesOnBackground = false
        return options
    }

    @Test("EMFILE and ENFILE on open close the kept descriptors and retry: reads and stores succeed", arguments: [EMFILE, ENFILE])
    func exhaustionFallsBack(errno code: Int32) throws {
        let dir = TemporaryDirectory("larder-fd-emfile")
        defer { dir.remove() }
        let before = openDescriptors(beneath: dir.url)
        let injector = FaultInjector()
        do {
            let cache = try DiskCache(options: Self.options(dir, limit: 4), systemCalls: injector.calls)
            let keys = (0 ..< 8).map { "k\($0)" }
            for key in keys { try cache.store(Data(key.utf8), forKey: key) }
            // The index build's own opens must not meet the faults armed below (under TSan on a
            // loaded machine the build can outlast the reads).
            cache.waitForIndex()
            // Three times: a read may learn the file's length, the next one tells the doorkeeper
            // about the record, and the one after that keeps its descriptor.
            for _ in 0 ..< 3 {
                for key in keys.prefix(4) { #expect(try cache.value(forKey: key) == Data(key.utf8)) }
            }
            let descriptors = try #require(cache.records.descriptors)
            #expect(descriptors.counts.kept == 4)

            // A read that must open: the open fails once, the kept descriptors go, the retry succeeds.
            injector.arm(.open, nth: 1, .fail(code))
            #expect(try cache.value(forKey: "k4") == Data("k4".utf8))
            #expect(injector.fired == 1)
            #expect(descriptors.counts.bound == 2)
            #expect(descriptors.counts.kept <= 1)

            // A store likewise.
            #expect(try cache.value(forKey: "k5") == Data("k5".utf8))
            #expect(try cache.value(forKey: "k5") == Data("k5".utf8))
            #expect(descriptors.counts.kept >= 1)
            injector.arm(.open, nth: 1, .fail(code))
            try cache.store(Data("new".utf8), forKey: "k0")
            #expect(injector.fired == 1)
            #expect(try cache.value(forKey: "k0") == Data("new".utf8))

            injector.disarm()
            cache.close()

            // Every open failing: a kept record still reads; one that must open fails with the
            // errno once nothing is left to close (what it did before descriptors were kept).
            let reopened = try DiskCache(options: Self.options(dir, limit: 4), systemCalls: injector.calls)
            // Else a build still running when every open fails has its failed open relieved by
            // closing k6's kept descriptor, and the read of k6 must open (seen once under TSan).
            reopened.waitForIndex()
            let kept = try #require(reopened.records.descriptors)
            for _ in 0 ..< 3 { #expect(try reopened.value(forKey: "k6") == Data("k6".utf8)) }
            #expect(kept.isKeeping(try reopened.options.keyEncoding.fileName(for: "k6")))
            injector.arm(.open, nth: 1, .fail(code), persistent: true)
            #expect(try reopened.value(forKey: "k6") == Data("k6".utf8))
            do {
                _ = try reopened.value(forKey: "k7")
                Issue.record("the read of k7 should fail: no descriptor is left to close")
            } catch {
                #expect(error.code == .ioFailure && error.errno == code)
            }
            injector.disarm()
            #expect(kept.counts.bound == 0)

            // The bound grows back as records are read again (by one every 16 admitted offers).
            for _ in 0 ..< 6 {
                for key in keys { #expect(try reopened.value(forKey: key) != nil) }
                for key in keys { try reopened.store(Data(key.utf8), forKey: key) }
            }
            #expect(kept.counts.bound > 0)
            reopened.close()
        }
        #expect(openDescriptors(beneath: dir.url) == before)
    }

    @Test("concurrent reads, stores, removals and collections of few keys with a bound of 2: every read is a stored payload")
    func concurrentReadsAndChanges() throws {
        let dir = TemporaryDirectory("larder-fd-concurrent")
        defer { dir.remove() }
        let before = openDescriptors(beneath: dir.url)
        do {
            let cache = try DiskCache(options: Self.options(dir, limit: 2))
            let keys = (0 ..< 4).map { "hot-\($0)" }
            for key in keys { try cache.store(DescriptorCacheTests.payload(key, 0), forKey: key) }
            let failures = LarderMutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                var random = SplitMix64(seed: UInt64(worker) + 1)
                for i in 0 ..< 400 {
                    let key = keys[Int(random.next() % UInt64(keys.count))]
                    do {
                        switch (worker, i % 10) {
                        case (3, 0): try cache.remove(forKey: key)
                        case (3, 5): _ = try cache.collectGarbage()
                        case (2, _), (3, _):
                            try cache.store(DescriptorCacheTests.payload(key, worker * 1_000 + i, size: 200 + i % 9), forKey: key)
                        default:
                            guard let data = try cache.value(forKey: key) else { continue }
                            // The payload names its key and version, and is exactly that store's.
                            let text = String(decoding: data.prefix(40), as: UTF8.self)
                            let parts = text.split(separator: "#")
                            guard parts.count >= 2, parts[0] == key, let version = Int(parts[1]) else {
                                failures.withLock { $0.append("\(key): \(text)") }
                                continue
                            }
                            let size = version == 0 ? 300 : 200 + (version % 1_000) % 9
                            if data != DescriptorCacheTests.payload(key, version, size: size) {
                                failures.withLock { $0.append("\(key) version \(version): wrong bytes") }
                            }
                        }
                    } catch {
                        failures.withLock { $0.append("\(key): \(error)") }
                    }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let counts = try #require(cache.records.descriptors).counts
            #expect(counts.kept <= 2 && counts.draining == 0)
            cache.close()
        }
        #expect(openDescriptors(beneath: dir.url) == before)
    }
}
