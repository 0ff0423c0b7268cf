import Dispatch
import Foundation
import Synchronization
import Testing
@testable import Larder

/// `HybridCache.value(forKey:expiry:staleWindows:orLoad:)`: one loader call per key, errors not
/// cached, cancellation, and the typed and callback twins.
@Suite struct HybridLoadThroughTests {
    @Test func aThousandConcurrentCallersOfOneMissingKeyShareOneLoad() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let gate = Gate()
        let loader = CountingLoader(gate: gate)
        let callers = 1_000
        try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0 ..< callers {
                group.addTask { try await cache.value(forKey: "cover/1", expiry: .seconds(300), orLoad: loader.load) }
            }
            // Every caller has joined the one load before it is let through.
            await eventually("\(callers - 1) callers joined the load") { cache.statistics.coalescedWaits == callers - 1 }
            gate.open()
            var results = 0
            for try await data in group {
                #expect(data == Data("loaded 1".utf8))
                results += 1
            }
            #expect(results == callers)
        }
        #expect(loader.count == 1)
        let stats = cache.statistics
        #expect(stats.loads == 1 && stats.coalescedWaits == callers - 1 && stats.loaderFailures == 0 && stats.staleServes == 0)
        #expect(cache.loads.count == 0)
        // Stored before the callers resumed, with the expiry given.
        let record = try await cache.disk.record(forKey: "cover/1")
        #expect(record?.data == Data("loaded 1".utf8) && record?.expiry == .seconds(300))
        // The next call is a memory hit: no load.
        let again = try await cache.value(forKey: "cover/1", orLoad: loader.load)
        #expect(again == Data("loaded 1".utf8) && loader.count == 1)
    }

    @Test func aCallerFindsTheLoadedValueStoredWhenItResumes() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let data = try await cache.value(forKey: "k", expiry: .seconds(60)) { Data("v".utf8) }
        #expect(data == Data("v".utf8))
        #expect(cache.memory.value(forKey: "k") == data)
        #expect(try await cache.disk.record(forKey: "k")?.expiry == .seconds(60))
    }

    @Test func hitsDoNotCallTheLoader() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let loader = CountingLoader()
        try await cache.store(bytes("memory"), forKey: "m")
        try await cache.store(bytes("disk"), forKey: "d", in: .disk)
        #expect(try await cache.value(forKey: "m", orLoad: loader.load) == bytes("memory"))
        #expect(try await cache.value(forKey: "d", orLoad: loader.load) == bytes("disk"))
        #expect(loader.count == 0)
        let stats = cache.statistics
        #expect(stats.memoryHits == 1 && stats.diskHits == 1 && stats.loads == 0)
        #expect(cache.memory.value(forKey: "d") == bytes("disk"))  // promoted
    }

    @Test func distinctKeysLoadInParallel() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let keys = 8
        // Each load waits until every load has started: serialised loads would never get there.
        let started = Tally()
        try await withThrowingTaskGroup(of: (Int, Data).self) { group in
            for i in 0 ..< keys {
                group.addTask {
                    let data = try await cache.value(forKey: "key-\(i)") {
                        started.increment()
                        await eventually("every load started") { started.value == keys }
                        return Data("value \(i)".utf8)
                    }
                    return (i, data)
                }
            }
            for try await (i, data) in group { #expect(data == Data("value \(i)".utf8)) }
        }
        #expect(started.peak == keys)
        #expect(cache.statistics.loads == keys && cache.statistics.coalescedWaits == 0)
    }

    @Test func aLoaderErrorReachesEveryCallerAndIsNotCached() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let log = LoadEventLog()
        var options = hybridOptions(temporary.url)
        options.loadEventHandler = log.handler
        let cache = try HybridCache(options: options)
        let gate = Gate()
        let failing = CountingLoader(gate: gate, failure: LoaderFailure())
        let callers = 50
        await withTaskGroup(of: CacheError?.self) { group in
            for _ in 0 ..< callers {
                group.addTask {
                    do {
                        _ = try await cache.value(forKey: "k", orLoad: failing.load)
                        return nil
                    } catch {
                        return error as? CacheError
                    }
                }
            }
            await eventually("every caller joined") { cache.statistics.coalescedWaits == callers - 1 }
            gate.open()
            var failures = 0
            for await error in group {
                #expect(error?.code == .loadFailed && error?.key == "k")
                #expect(error?.underlying as? LoaderFailure == LoaderFailure())
                failures += 1
            }
            #expect(failures == callers)
        }
        #expect(failing.count == 1)
        #expect(!cache.contains("k"))
        // Not cached: the next call loads again.
        let loader = CountingLoader()
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == bytes("loaded 1"))
        #expect(loader.count == 1)
        let stats = cache.statistics
        #expect(stats.loads == 2 && stats.loaderFailures == 1 && stats.coalescedWaits == callers - 1)
        let failed = log.all.filter {
            if case .loadFailed("k", let error) = $0 { return error.code == .loadFailed }
            return false
        }
        #expect(failed.count == 1 && log.loadedKeys == ["k"])
    }

    @Test func aCancelledCallerStopsWaitingWhileTheOthersGetTheValue() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let gate = Gate()
        let loader = CountingLoader(gate: gate)
        let first = Task { try await cache.value(forKey: "k", orLoad: loader.load) }
        let second = Task { try await cache.value(forKey: "k", orLoad: loader.load) }
        let third = Task { try await cache.value(forKey: "k", orLoad: loader.load) }
        await eventually("three callers on one load") { loader.count == 1 && cache.statistics.coalescedWaits == 2 }
        second.cancel()
        // The cancelled caller is answered while the load is still held at the gate.
        do {
            _ = try await second.value
            Issue.record("a cancelled caller got a value")
        } catch let error as CacheError {
            #expect(error.code == .cancelled && error.key == "k")
        }
        #expect(gate.cancellations == 0 && cache.loads.count == 1)
        gate.open()
        #expect(try await first.value == bytes("loaded 1"))
        #expect(try await third.value == bytes("loaded 1"))
        #expect(loader.count == 1 && cache.contains("k"))
    }

    @Test func theLoadIsCancelledWhenEveryCallerHasGone() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let gate = Gate()
        let loader = CountingLoader(gate: gate)
        let callers = (0 ..< 3).map { _ in Task { try await cache.value(forKey: "k", orLoad: loader.load) } }
        await eventually("three callers on one load") { loader.count == 1 && cache.statistics.coalescedWaits == 2 }
        @Sendable func expectCancelled(_ caller: Task<Data, any Error>) async {
            do {
                _ = try await caller.value
                Issue.record("a cancelled caller got a value")
            } catch {
                #expect((error as? CacheError)?.code == .cancelled)
            }
        }
        callers[0].cancel()
        callers[1].cancel()
        await expectCancelled(callers[0])
        await expectCancelled(callers[1])
        // One caller is still waiting: the load goes on.
        #expect(gate.cancellations == 0 && cache.loads.count == 1)
        callers[2].cancel()
        await expectCancelled(callers[2])
        // The last one out cancels the load: the loader sees it, nothing is stored.
        await eventually("the loader saw the cancellation") { gate.cancellations == 1 }
        #expect(cache.loads.count == 0 && !cache.contains("k"))
        #expect(cache.statistics.loaderFailures == 0)
        // A new call starts a new load.
        gate.open()
        #expect(try await cache.value(forKey: "k", orLoad: loader.load) == bytes("loaded 2"))
        #expect(loader.count == 2)
    }

    @Test func aCallerCancelledBeforeItAsksDoesNothing() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let loader = CountingLoader()
        let gate = Gate()
        let task = Task {
            try? await gate.wait()  // cancelled while it waits here
            return await asyncErrorCode { () async throws(CacheError) in try await cache.value(forKey: "k", orLoad: loader.load) }
        }
        task.cancel()
        #expect(await task.value == .cancelled)
        #expect(loader.count == 0 && cache.loads.count == 0)
    }

    @Test func invalidArgumentsAreRejectedBeforeAnyLoad() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url, encoding: .verbatim))
        let loader = CountingLoader()
        for expiry in invalidExpiries {
            #expect(
                await asyncErrorCode { () async throws(CacheError) in
                    try await cache.value(forKey: "k", expiry: expiry, orLoad: loader.load)
                } == .invalidArgument)
        }
        for windows in [StaleWindows(whileRevalidate: -1), StaleWindows(ifError: .nan), StaleWindows(whileRevalidate: .infinity)] {
            #expect(
                await asyncErrorCode { () async throws(CacheError) in
                    try await cache.value(forKey: "k", staleWindows: windows, orLoad: loader.load)
                }
                    == .invalidArgument)
        }
        // A key the disk cannot store fails at the disk read, before the loader.
        #expect(
            await asyncErrorCode { () async throws(CacheError) in try await cache.value(forKey: "../x", orLoad: loader.load) }
                == .invalidKey)
        #expect(loader.count == 0)

        var options = hybridOptions(temporary.url.appendingPathComponent("other"))
        options.staleWindows = StaleWindows(ifError: -5)
        #expect(cacheErrorCode { _ = try HybridCache(options: options) } == .invalidOptions)
    }

    @Test func typedValuesLoadOnceAndDecodeForEveryCaller() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let calls = Tally()
        let ada = Profile(name: "Ada", age: 36, tags: ["math"])
        let results = try await withThrowingTaskGroup(of: Profile.self) { group in
            for _ in 0 ..< 20 {
                group.addTask {
                    try await cache.value(Profile.self, forKey: "me", expiry: .seconds(60)) {
                        calls.increment()
                        return ada
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 20 && results.allSatisfy { $0 == ada })
        #expect(calls.value == 1)
        #expect(try await cache.value(Profile.self, forKey: "me") == ada)
    }

    @Test func callbacksDeliverTheLoadedValueOnTheQueueGiven() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let cache = try HybridCache(options: hybridOptions(temporary.url))
        let marked = MarkedQueue("larder.test.loadthrough")
        let loaded = awaitCallback { completion in
            cache.value(forKey: "k", orLoad: { bytes("v") }, queue: marked.queue, completion: completion)
        }
        #expect(loaded.response.value == bytes("v") && loaded.queue == marked.name)
        let failed = awaitCallback { completion in
            cache.value(forKey: "other", orLoad: { throw LoaderFailure() }, queue: marked.queue, completion: completion)
        }
        #expect(failed.response.error?.code == .loadFailed && failed.queue == marked.name)
        let typed = awaitCallback { (completion: @escaping @Sendable (CacheResponse<Profile>) -> Void) in
            cache.value(
                Profile.self, forKey: "p", orLoad: { Profile(name: "Bo", age: 3, tags: []) }, queue: marked.queue, completion: completion)
        }
        #expect(typed.response.value == Profile(name: "Bo", age: 3, tags: []) && typed.queue == marked.name)
    }
}
