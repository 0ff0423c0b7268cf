import Foundation
import Testing
@testable import Larder

/// Options for a test cache in `directory` with a manual clock.
func testOptions(_ directory: URL, clock: ManualClock = ManualClock(now: 1_700_000_000), encoding: KeyEncoding = .sha256)
    -> DiskCacheOptions
{
    var options = DiskCacheOptions(directory: directory)
    options.clock = clock
    options.keyEncoding = encoding
    options.defaultExpiration = 600
    return options
}

/// Collects a cache's events.
final class EventLog: Sendable {
    private let events = LarderMutex<[CacheEvent]>([])
    var all: [CacheEvent] { events.withLock { $0 } }
    var handler: @Sendable (CacheEvent) -> Void { { [self] event in events.withLock { $0.append(event) } } }

    /// Everything collected since the last drain, forgotten.
    func drain() -> [CacheEvent] {
        events.withLock { events in
            defer { events = [] }
            return events
        }
    }
}

import Synchronization

/// The record files under a cache folder (not Larder's hidden files), relative to it.
func recordFiles(in directory: URL) -> [String] {
    let enumerator = FileManager.default.enumerator(atPath: directory.path)
    var files: [String] = []
    while let item = enumerator?.nextObject() as? String {
        let last = (item as NSString).lastPathComponent
        if item.hasPrefix(".") || last.hasPrefix(".") { continue }
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: directory.appendingPathComponent(item).path, isDirectory: &isDirectory)
        if !isDirectory.boolValue { files.append(item) }
    }
    return files.sorted()
}

extension Data {
    init(repeating byte: UInt8, count: Int) { self.init([UInt8](repeating: byte, count: count)) }
}

/// Records the closes of a ``DescriptorCache`` built over its ``calls``, and performs them or not
/// (made-up descriptor numbers).
final class RecordedCloses: Sendable {
    private let closed = LarderMutex<[Int32]>([])
    private let performing: Bool

    init(performing: Bool) {
        self.performing = performing
    }

    /// The descriptors closed, in order.
    var all: [Int32] { closed.withLock { $0 } }

    /// The live system calls, with `close` recorded.
    var calls: SystemCalls {
        var calls = SystemCalls.live
        calls.close = { [self] fd in
            closed.withLock { $0.append(fd) }
            return performing ? SystemCalls.live.close(fd) : 0
        }
        return calls
    }
}

/// Returns once the file system's clock reads later than the last change to any of `cache`'s
/// shard folders, as a probe file written in a folder of its own shows: a snapshot written from
/// then on vouches for every folder (its stamps trust only folders changed before it was made).
/// It waits for the clock's next tick, seen on the disk, not for a guessed time.
func waitForFolderStampsToSettle(_ cache: DiskCache) throws {
    let io = FileIO()
    let stamps = try cache.layout.shardStamps(io: io)
    guard let latest = stamps.values.map({ max($0.modification, $0.change) }).max() else { return }
    let probe = TemporaryDirectory("larder-clock")
    defer { probe.remove() }
    let path = probe.path("probe")
    while true {
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let written = try #require(try io.info(atPath: path))
        if written.modification > latest { return }
        try FileManager.default.removeItem(atPath: path)
    }
}
