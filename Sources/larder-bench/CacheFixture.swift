#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import Synchronization

// Shared by the gc and open suites: a DiskCache of n records of 1 KiB, stored one second apart
// on a manual clock (so that both LRU order and SPT's update times are distinct), and a volume
// whose free space the benchmark controls.

/// The free space a cache sees, set by the benchmark through a stand-in for `statvfs`.
final class VolumeGauge: Sendable {
    /// Bytes the cache is asked to keep free (its `minimumFreeDiskSpace`).
    static let reserve = 1 << 39
    /// The volume's size.
    static let volumeSize = 1 << 40
    /// Bytes free; plenty unless the benchmark lowers it.
    let available = Atomic<Int>(VolumeGauge.volumeSize)

    /// Plenty of space: no limit on the cache.
    func setPlenty() { available.store(Self.volumeSize, ordering: .relaxed) }

    /// Free space short of the reserve by `deficit` bytes: the cache's effective size limit is
    /// its total minus `deficit`.
    func setShort(by deficit: Int) { available.store(Self.reserve - deficit, ordering: .relaxed) }

    /// System calls whose `statvfs` reports this gauge.
    var systemCalls: SystemCalls {
        var calls = SystemCalls.live
        calls.statvfs = { [self] _, buffer in
            buffer.pointee = StatVFS()
            buffer.pointee.f_frsize = 1
            buffer.pointee.f_bsize = 4096
            buffer.pointee.f_blocks = fsblkcnt_t(Self.volumeSize)
            let free = fsblkcnt_t(available.load(ordering: .relaxed))
            buffer.pointee.f_bfree = free
            buffer.pointee.f_bavail = free
            return 0
        }
        return calls
    }
}

enum CacheFixture {
    static let recordBytes = 1024
    static let startTime: Double = 1_700_000_000

    static func key(_ i: Int) -> String { "record-\(i)" }

    /// Options for a fixture cache in `folder` on `clock`.
    static func options(_ folder: String, clock: ManualClock, keepsFree: Bool = false) -> DiskCacheOptions {
        var options = DiskCacheOptions(directory: URL(fileURLWithPath: folder, isDirectory: true))
        options.clock = clock
        if keepsFree { options.minimumFreeDiskSpace = .bytes(VolumeGauge.reserve) }
        return options
    }

    /// Builds a closed cache of `n` records in `folder`; returns the clock, now one second after
    /// the newest record.
    static func build(_ folder: String, n: Int) throws -> ManualClock {
        let clock = ManualClock(now: startTime)
        let cache = try DiskCache(options: options(folder, clock: clock))
        let payload = randomPayload(recordBytes, seed: 1024)
        for i in 0 ..< n {
            clock.now = startTime + Double(i)
            try cache.store(payload, forKey: key(i))
        }
        clock.now = startTime + Double(n)
        cache.close()
        return clock
    }
}
