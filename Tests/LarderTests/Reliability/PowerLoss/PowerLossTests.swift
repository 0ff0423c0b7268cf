import Foundation
import Testing
@testable import Larder

/// Power loss, simulated under the syscall seam: a workload runs on a ``SimulatedDisk``, and for
/// crash points along its trace, ``CrashStates`` makes the file systems a power loss may leave
/// (under two ``PersistenceModel``s) and ``PowerLossOracle`` opens a cache on each and checks it.
///
/// `LARDER_POWERLOSS_SEED` replays a run (default `0x9E57`); `LARDER_POWERLOSS_SCALE` multiplies
/// the states explored (default 1).
@Suite struct PowerLossTests {
    static let seed = UInt64(ProcessInfo.processInfo.environment["LARDER_POWERLOSS_SEED"] ?? "") ?? 0x9E57
    static let scale = max(1, Int(ProcessInfo.processInfo.environment["LARDER_POWERLOSS_SCALE"] ?? "") ?? 1)

    @Test func aCacheRunsOnTheSimulatedDisk() throws {
        let disk = SimulatedDisk()
        let clock = ManualClock()
        let options = PowerLossRun.options(durability: Durability.fsync, clock: clock, events: EventLog?.none)
        let cache = try DiskCache(options: options, systemCalls: disk.calls)
        try cache.store(Data("hello".utf8), forKey: "a", locked: true)
        try cache.store(Data(repeating: 7, count: 70_000), forKey: "b")
        #expect(try cache.value(forKey: "a") == Data("hello".utf8))
        #expect(try cache.collectGarbage().removed.isEmpty)
        cache.close()
        // Only the root's descriptor stays open, until the cache goes away.
        #expect(disk.openDescriptorCount == 1)
        // The close wrote an exact image; a new cache reads it and withdraws it.
        #expect(PowerLossOracle.indexImage(disk.image, options: options)?.index.count == 2)
        let reopened = try DiskCache(options: options, systemCalls: disk.calls)
        #expect(reopened.count == 2)
        #expect(try reopened.record(forKey: "a")?.lockCount == 1)
        #expect(try reopened.value(forKey: "b") == Data(repeating: 7, count: 70_000))
        #expect(PowerLossOracle.indexImage(disk.image, options: options) == nil)
        // A collection with nothing changed since the open makes it exact again.
        #expect(try reopened.collectGarbage().removed.isEmpty)
        #expect(PowerLossOracle.indexImage(disk.image, options: options)?.index.count == 2)
        reopened.close()
    }

    @Test func replayingEveryOperationGivesTheLiveImage() {
        let run = PowerLossRun(steps: PowerLossRun.randomSteps(count: 40, seed: Self.seed), durability: .fsync, seed: Self.seed)
        #expect(run.problems.isEmpty, "\(run.problems)")
        let states = CrashStates(of: run.disk)
        #expect(states.everything(upTo: states.trace.count).sameTree(as: run.disk.image))
        // With nothing unsynced lost, the weakest model's durable state at the end holds every
        // `.fsync` store: checked by the oracle like any other state.
        var tally = PowerLossOracle.Tally()
        let problems = PowerLossOracle(run: run, model: .weakest).check(
            states.durableOnly(upTo: states.trace.count, model: .weakest), at: states.trace.count, tally: &tally)
        #expect(problems.isEmpty, "\(problems)")
        #expect(tally.promisesChecked > 0)
    }

    /// A short run, every crash point: the state a process crash leaves, the durable-only state,
    /// and random states.
    @Test(arguments: [Durability.atomicRename, .fsync], PersistenceModel.allCases)
    func everyPointOfAShortRun(durability: Durability, model: PersistenceModel) {
        let seed = Self.seed &+ (durability == .fsync ? 1 : 0)
        let run = PowerLossRun(steps: PowerLossRun.randomSteps(count: 32, seed: seed), durability: durability, seed: seed)
        #expect(run.problems.isEmpty, "\(run.problems)")
        let points = Array(0 ... run.disk.traceCount)
        #expect(run.compactions > 0, "a background compaction ran in the trace")
        explore(run, model: model, points: points, randomStatesPerPoint: 4 * Self.scale, seed: seed, label: "short")
    }

    /// A long run, sampled crash points.
    @Test(arguments: [Durability.atomicRename, .fsync], PersistenceModel.allCases)
    func sampledPointsOfALongRun(durability: Durability, model: PersistenceModel) {
        let seed = Self.seed &+ 100 &+ (durability == .fsync ? 1 : 0)
        let run = PowerLossRun(steps: PowerLossRun.randomSteps(count: 300, seed: seed), durability: durability, seed: seed)
        #expect(run.problems.isEmpty, "\(run.problems)")
        #expect(run.compactions > 0, "a background compaction ran in the trace")
        var random = SplitMix64(seed: seed)
        let points = (0 ..< 300 * Self.scale).map { _ in random.below(run.disk.traceCount + 1) }.sorted()
        explore(run, model: model, points: points, randomStatesPerPoint: 4, seed: seed, label: "long")
    }

    /// Checks the states a power loss may leave at each point; reports the first problems.
    private func explore(
        _ run: PowerLossRun, model: PersistenceModel, points: [Int], randomStatesPerPoint: Int, seed: UInt64, label: String
    ) {
        let states = CrashStates(of: run.disk)
        let oracle = PowerLossOracle(run: run, model: model)
        var tally = PowerLossOracle.Tally()
        // Images already checked, with what was expected of them (the same image at another
        // point may owe more: a store that has returned since).
        var seen: Set<[Int]> = []
        var problems: [String] = []
        for k in points {
            // A close changes nothing on disk: its state is the one before it.
            if k > 0, case .close = states.trace[k - 1] { continue }
            var random = SplitMix64(seed: seed ^ UInt64(k) &* 0x9E37_79B9_7F4A_7C15)
            var images = [states.everything(upTo: k), states.durableOnly(upTo: k, model: model)]
            for _ in 0 ..< randomStatesPerPoint { images.append(states.randomState(upTo: k, model: model, random: &random)) }
            let expectations = run.expectations(at: k)
            for (i, image) in images.enumerated() where seen.insert([image.treeHash, expectations]).inserted {
                // One state in four also loses power again while the cache recovers from it.
                let recoveryCrashes = random.below(4) == 0 ? 2 : 0
                problems += oracle.check(image, at: k, tally: &tally, recoveryCrashes: recoveryCrashes, seed: seed ^ UInt64(k << 8 | i))
                if problems.count >= 10 { break }
            }
            if problems.count >= 10 { break }
        }
        print(
            "PowerLossTests.\(label) \(run.durability) \(model): \(run.stepCount) operations, \(run.compactions) background compactions, \(run.disk.traceCount) calls traced; \(tally)"
        )
        #expect(problems.isEmpty, "seed \(seed), \(run.durability), \(model):\n\(problems.prefix(10).joined(separator: "\n"))")
        #expect(tally.states > 0 && tally.hits > 0)
        if run.durability == .fsync { #expect(tally.promisesChecked > 0) }
        // The snapshot's folder stamps were trusted, not only listed around.
        #expect(tally.statesTrustingStamps > 0)
    }
}
