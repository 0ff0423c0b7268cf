import Foundation
import Testing
@testable import Larder

/// Writers that each keep an index, following one change log: compared step by step with a
/// plain dictionary of what the folder holds.
@Suite struct IndexFollowerTests {
    /// One writer: its log (its own open of the file, its own `flock`), index and place in the log.
    final class Writer {
        let log: FolderChangeLog
        var index = DiskIndex()
        var follower = IndexFollower()

        init(log: FolderChangeLog) { self.log = log }
    }

    /// What the folder holds: name → (size, lock count).
    typealias Model = [String: (size: Int, locks: UInt32)]

    static func entry(_ name: String, size: Int, locks: UInt32) -> IndexEntry {
        IndexEntry(name: name, key: name, diskSize: size, updateTime: 1, lastAccessMs: 1000, ttl: 0, lockCount: locks)
    }

    static func check(_ index: DiskIndex, against model: Model, _ comment: Comment) {
        #expect(index.count == model.count, comment)
        for (name, expected) in model {
            let entry = index[name]
            #expect(entry?.diskSize == expected.size && entry?.lockCount == expected.locks, comment)
        }
        #expect(index.totalSize == model.values.reduce(0) { $0 + $1.size }, comment)
    }

    /// A writer that rebuilt its index from the folder.
    static func rebuilt(from model: Model) -> DiskIndex {
        var index = DiskIndex()
        for (name, value) in model.sorted(by: { $0.key < $1.key }) {
            index.upsert(entry(name, size: value.size, locks: value.locks))
        }
        return index
    }

    @Test(arguments: [2, 4] as [Int], [1, 2, 3] as [UInt64])
    func everyWriterConvergesOnTheFolderAtItsNextOperation(writers count: Int, seed: UInt64) throws {
        let dir = TemporaryDirectory("larder-follow")
        defer { dir.remove() }
        var random = SplitMix64(seed: seed)
        let writers = try (0 ..< count).map { _ in Writer(log: try FolderChangeLogTests.open(dir)) }
        var model: Model = [:]
        var resets = 0
        var rebuilds = 0
        let names = (0 ..< 12).map { "k\($0)" }
        for step in 0 ..< 400 {
            let w = Int.random(in: 0 ..< count, using: &random)
            let name = names.randomElement(using: &random)!
            let roll = Int.random(in: 0 ..< 100, using: &random)
            let writer = writers[w]
            // The folder first, as a writer changes the record file under the lock.
            let (_, caughtUp) = try writer.follower.change(
                in: writer.log, index: &writer.index, keyEncoding: .verbatim, rebuild: { Self.rebuilt(from: model) },
                { index -> (result: Void, change: DiskIndex.Changes?) in
                    // Under the lock, caught up: the writer's index is the folder's.
                    Self.check(index, against: model, "writer \(w) before its change at step \(step)")
                    if roll < 50 {
                        let entry = Self.entry(name, size: 4096 * Int.random(in: 1 ... 4, using: &random), locks: model[name]?.locks ?? 0)
                        model[name] = (entry.diskSize, entry.lockCount)
                        return ((), DiskIndex.Changes(removed: [], changedInPlace: [], moved: [entry]))
                    } else if roll < 80 {
                        guard model.removeValue(forKey: name) != nil else { return ((), nil) }
                        return ((), DiskIndex.Changes(removed: [name], changedInPlace: [], moved: []))
                    } else {
                        guard let old = model[name] else { return ((), nil) }
                        let locks = roll < 90 ? old.locks + 1 : old.locks.saturatingDecrement
                        model[name] = (old.size, locks)
                        return (
                            (), DiskIndex.Changes(removed: [], changedInPlace: [Self.entry(name, size: old.size, locks: locks)], moved: [])
                        )
                    }
                })
            if caughtUp == .rebuilt { rebuilds += 1 }
            Self.check(writer.index, against: model, "writer \(w) after its change at step \(step)")
            // Now and then a writer compacts: every other one rebuilds from the folder.
            if Int.random(in: 0 ..< 50, using: &random) == 0 {
                try writer.log.withChangeLock { $0.reset() }
                _ = writer.follower.catchUp(writer.log, index: &writer.index, keyEncoding: .verbatim) { Self.rebuilt(from: model) }
                resets += 1
            }
            // Another writer, at its next operation, sees the change.
            let other = Int.random(in: 0 ..< count, using: &random)
            let reader = writers[other]
            if reader.follower.catchUp(reader.log, index: &reader.index, keyEncoding: .verbatim, rebuild: { Self.rebuilt(from: model) })
                == .rebuilt
            {
                rebuilds += 1
            }
            Self.check(reader.index, against: model, "writer \(other) caught up at step \(step)")
        }
        for (i, writer) in writers.enumerated() {
            _ = writer.follower.catchUp(writer.log, index: &writer.index, keyEncoding: .verbatim) {
                Self.rebuilt(from: model)
            }
            Self.check(writer.index, against: model, "writer \(i) at the end")
            #expect(
                writer.follower.catchUp(writer.log, index: &writer.index, keyEncoding: .verbatim) { DiskIndex() } == .current)
        }
        // Both paths were taken: replays, and rebuilds after compactions.
        #expect(resets > 0)
        #expect(rebuilds > resets)
    }

    @Test func catchingUpNamesWhatOthersTouched() throws {
        let dir = TemporaryDirectory("larder-follow")
        defer { dir.remove() }
        let a = Writer(log: try FolderChangeLogTests.open(dir))
        let b = Writer(log: try FolderChangeLogTests.open(dir))
        _ = try a.follower.change(
            in: a.log, index: &a.index, keyEncoding: .verbatim, rebuild: { DiskIndex() },
            { _ in
                ((), DiskIndex.Changes(removed: [], changedInPlace: [], moved: [Self.entry("k1", size: 4096, locks: 0)]))
            })
        #expect(b.follower.catchUp(b.log, index: &b.index, keyEncoding: .verbatim) { Self.rebuilt(from: ["k1": (4096, 0)]) } == .rebuilt)
        _ = try a.follower.change(
            in: a.log, index: &a.index, keyEncoding: .verbatim, rebuild: { DiskIndex() },
            { _ in
                ((), DiskIndex.Changes(removed: ["k1"], changedInPlace: [], moved: [Self.entry("k2", size: 8192, locks: 1)]))
            })
        // The keys too: k1's from b's own entry (a removal names the file only), k2's from a's change.
        #expect(
            b.follower.catchUp(b.log, index: &b.index, keyEncoding: .verbatim) { DiskIndex() }
                == .applied(touched: ["k1", "k2"], keys: ["k1", "k2"]))
        Self.check(b.index, against: ["k2": (8192, 1)], "b after a's change")
        #expect(b.follower.catchUp(b.log, index: &b.index, keyEncoding: .verbatim) { DiskIndex() } == .current)
    }
}

extension UInt32 {
    fileprivate var saturatingDecrement: UInt32 { self == 0 ? 0 : self - 1 }
}
