import Dispatch

/// The quality of service of each kind of work a cache does on its own threads: a ``DiskCache``,
/// and a ``HybridCache`` through its disk tier (SPTPersistentCache's `readQualityOfService`,
/// `writeQualityOfService`, `deleteQualityOfService` and `garbageCollectionQualityOfService`).
public struct WorkQualityOfService: Sendable, Hashable {
    /// Loads, prefix loads and listings, and the index build at open (`.default`).
    public var reads: DispatchQoS.QoSClass = .default
    /// Stores, touches and locks (`.default`).
    public var writes: DispatchQoS.QoSClass = .default
    /// Removals, unlocks and wipes (`.default`).
    public var deletes: DispatchQoS.QoSClass = .default
    /// Scheduled collections and the `async` and callback forms of collection (`.background`,
    /// as SPTPersistentCache's collector).
    public var collection: DispatchQoS.QoSClass = .background

    /// Every kind at its default.
    public init() {}
}
