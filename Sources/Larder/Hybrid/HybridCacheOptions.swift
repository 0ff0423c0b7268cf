import Foundation

/// Settings for a ``HybridCache`` opened with ``HybridCache/init(options:)``: the memory tier's
/// options, the disk tier's options, entries shipped with the app, and the coder for typed values.
///
/// Every setting is checked when the cache is opened: one out of range makes
/// ``HybridCache/init(options:)`` throw ``CacheError/Code/invalidOptions`` naming it and its
/// value, and nothing is opened. The memory tier uses the disk's ``DiskCacheOptions/clock``, so
/// that both tiers agree on time.
public struct HybridCacheOptions: Sendable {
    /// The memory tier's settings, grouped as the disk's are in ``disk``: `memory.countLimit`
    /// (0: no limit), `memory.totalCostLimit` (``defaultMemoryCostLimit``: a tenth of the
    /// machine's memory, at most 256 MiB), `memory.defaultExpiration` (`nil`: only the disk's
    /// expiry applies; when set, the longest an entry stays in memory whatever its disk expiry),
    /// `memory.policy` (``EvictionPolicy/recommended``, today TinyLFU, which misses less than LRU
    /// on most workloads; see <doc:EvictionPolicies>) and `memory.respondsToMemoryPressure`
    /// (`true`: half of the tier goes on a warning, all of it on a critical event, through the
    /// process's one ``MemoryPressureMonitor``).
    ///
    /// These are a hybrid's defaults; a ``MemoryCache`` made on its own has
    /// ``MemoryCacheOptions``'s (no cost limit, LRU, no response to pressure). The memory tier
    /// uses the disk's ``DiskCacheOptions/clock``. Limits can be changed later on
    /// ``HybridCache/memory`` (``MemoryCache/setCountLimit(_:)``, ``MemoryCache/setTotalCostLimit(_:)``).
    public var memory = MemoryCacheOptions(
        totalCostLimit: HybridCacheOptions.defaultMemoryCostLimit, policy: .recommended, respondsToMemoryPressure: true)
    /// The disk tier's options.
    public var disk: DiskCacheOptions
    /// A directory of entries shipped with the app, imported at open or read through (`nil`).
    public var preloaded: PreloadedEntries?
    /// The coder for typed values (``CacheCoder/json``).
    public var coder: CacheCoder = .json
    /// How long past their expiry load-through reads may serve values: while one load refreshes
    /// them, and instead of a loader's error (``StaleWindows/none``). A call can give its own.
    /// Each window finite and not negative. The disk keeps expired records for the longer
    /// window (its ``DiskCacheOptions/staleRetention`` is raised to it), so that a plain read or
    /// a collection leaves what a stale read may return.
    public var staleWindows: StaleWindows = .none
    /// Called with what load-through reads do: loads, loader failures, stale values served, and
    /// stores that failed (`nil`). See ``LoadEvent``.
    public var loadEventHandler: (@Sendable (LoadEvent) -> Void)?
    /// A shared remote tier behind memory and disk, with invalidations across the instances that
    /// share it (`nil`). See ``RemoteTierOptions`` and <doc:ScalingOut>.
    public var remote: RemoteTierOptions?
    /// The pressure monitor the memory tiers register with; tests give their own.
    var pressureCenter = MemoryPressureCenter.shared

    /// The memory tier's default cost limit for this process: ``defaultMemoryCostLimit(physicalMemory:)``
    /// of the memory it may use, computed once.
    ///
    /// That is `ProcessInfo.processInfo.physicalMemory`, or on Linux the memory limit of the
    /// process's control group (a container's limit) where that is lower: in a container,
    /// `physicalMemory` reports the host's memory, while the kernel ends the process at its group's
    /// limit.
    public static let defaultMemoryCostLimit = defaultMemoryCostLimit(physicalMemory: ProcessMemory.budget)

    /// The memory tier's default cost limit on a machine with `physicalMemory` bytes: a tenth of
    /// it, at most 256 MiB (the cap alone when the size is unknown, 0).
    ///
    /// Nuke's image cache takes a fifth of the device's memory (a tenth up to 512 MB), at most
    /// 512 MB, for decoded images, where a miss means decoding or downloading again. The hybrid's
    /// memory tier holds payloads that its disk tier keeps too, so a miss costs one disk read
    /// (about 10 µs for 4 KiB, BENCHMARKS.md), and an app may open several caches, each with its
    /// own limit, inside one memory budget (on iOS, the system ends an app that holds too much):
    /// half of Nuke's share and cap is plenty. Memory pressure trims below it.
    /// - Parameter physicalMemory: The machine's memory, in bytes.
    /// - Returns: The limit, in bytes of payload.
    public static func defaultMemoryCostLimit(physicalMemory: UInt64) -> Int {
        let cap = 256 << 20
        guard physicalMemory > 0 else { return cap }
        return Int(min(physicalMemory / 10, UInt64(cap)))
    }

    /// Creates options around the disk tier's options; every other setting at its default.
    /// - Parameter disk: The disk tier's options.
    public init(disk: DiskCacheOptions) {
        self.disk = disk
    }

    /// Creates options for a cache in `directory`; every other setting at its default.
    /// - Parameter directory: The disk tier's folder.
    public init(directory: URL) {
        self.init(disk: DiskCacheOptions(directory: directory))
    }
}
