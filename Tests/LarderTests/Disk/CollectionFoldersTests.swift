import Foundation
import Testing

@testable import Larder

@Suite struct CollectionFoldersTests {
    /// A pass's two removal lanes share the bound one pass had before it had lanes: half each,
    /// each lane's folders made once for the pass.
    @Test func aPassSplitsItsBoundBetweenItsTwoLanes() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let io = try FileIO(calls: .live).rooted(at: dir.path)
        let layout = DiskLayout(root: dir.path)
        var pass = CollectionPass()
        let lanes = (0 ..< 2).map { pass.folders(lane: $0, io: io, layout: layout) }
        #expect(lanes[0] !== lanes[1])
        #expect(pass.folders(lane: 0, io: io, layout: layout) === lanes[0])
        #expect(pass.folders(lane: 1, io: io, layout: layout) === lanes[1])
        #expect(lanes[0].limit == lanes[1].limit)
        #expect(lanes[0].limit + lanes[1].limit <= max(2, CollectionFolders.defaultLimit))
    }

    /// A pass over more shard folders than its bound keeps at most the bound open, closing the
    /// oldest; it removes and looks at every file all the same, answers a missing file or folder
    /// with `false` or `nil`, and closes every folder when it goes.
    @Test func keepsAtMostItsBoundOpenAndClosesThemAll() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let shards = ["aa", "bb", "cc", "dd", "ee"]
        var names: [String] = []
        for shard in shards {
            try FileManager.default.createDirectory(atPath: dir.path + "/" + shard, withIntermediateDirectories: true)
            for i in 0 ..< 3 {
                let name = shard + "record\(i)"
                _ = FileManager.default.createFile(atPath: dir.path + "/" + shard + "/" + name, contents: Data([UInt8(i)]))
                names.append(name)
            }
        }
        // The descriptors opened through `io` and not yet closed.
        let descriptors = LarderMutex(0)
        var calls = SystemCalls.live
        calls.openat = { directory, path, flags, mode in
            let fd = SystemCalls.live.openat(directory, path, flags, mode)
            if fd >= 0 { descriptors.withLock { $0 += 1 } }
            return fd
        }
        calls.openBeneath = { directory, path, flags, mode in
            let fd = SystemCalls.live.openBeneath(directory, path, flags, mode)
            if fd >= 0 { descriptors.withLock { $0 += 1 } }
            return fd
        }
        calls.close = { fd in
            descriptors.withLock { $0 -= 1 }
            return SystemCalls.live.close(fd)
        }
        let io = try FileIO(calls: calls).rooted(at: dir.path)
        let layout = DiskLayout(root: dir.path)
        let before = descriptors.withLock { $0 }  // the root's
        do {
            let folders = CollectionFolders(io: io, layout: layout, limit: 2)
            // Round the shards twice, so that every folder is opened again after being closed.
            for name in names.sorted(by: { $0.dropFirst(2) < $1.dropFirst(2) }) {
                #expect(try folders.status(name)?.size == 1, "\(name)")
                #expect(try folders.unlink(name), "\(name)")
                #expect(try folders.status(name) == nil, "\(name)")
                #expect(try !folders.unlink(name), "\(name)")
                #expect(folders.openCount <= 2)
                #expect(descriptors.withLock { $0 } <= before + 2)
            }
            #expect(try !folders.unlink("zzmissing"))
            #expect(try folders.status("zzmissing") == nil)
        }
        #expect(descriptors.withLock { $0 } == before, "a folder was left open")
        for shard in shards {
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/" + shard).isEmpty)
        }
    }

    /// The default bound: an eighth of the descriptor limit, between 1 and the 256 shard folders.
    @Test func defaultBoundIsAnEighthOfTheDescriptorLimit() {
        let limit = CollectionFolders.defaultLimit
        #expect(limit >= 1 && limit <= 256)
        if let soft = FileIO.descriptorLimit() { #expect(limit == min(256, max(1, soft / 8))) }
    }
}
