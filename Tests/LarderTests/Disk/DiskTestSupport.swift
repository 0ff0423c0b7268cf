import Foundation
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
