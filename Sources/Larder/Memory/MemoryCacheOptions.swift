import Foundation

/// Settings for a memory tier: ``MemoryCache/init(options:clock:evictionHandler:)``, and
/// ``HybridCacheOptions/memory``.
///
/// Every setting is checked when the cache is made: one out of range makes the initializer
/// throw ``CacheError/Code/invalidOptions`` naming it and its value (see ``validate()``).
/// A ``MemoryCache`` made without options has the defaults given here; a ``HybridCache``'s
/// memory tier has its own, given at ``HybridCacheOptions/memory``.
public struct MemoryCacheOptions: Sendable, Equatable {
    /// The most entries to hold; 0 means no limit (0). Not negative.
    public var countLimit: Int
    /// The most total cost to hold; 0 means no limit (0). Not negative. A ``HybridCache``'s
    /// memory tier counts payload bytes.
    public var totalCostLimit: Int
    /// Seconds a value stored with ``Expiry/default`` lives; `nil` means forever (`nil`). Finite
    /// and above 0 when given; larger than ``Expiry/maximumSeconds`` is clamped to it.
    public var defaultExpiration: TimeInterval?
    /// How to choose what to evict (``EvictionPolicy/lru``); see <doc:EvictionPolicies>.
    public var policy: EvictionPolicy
    /// Whether the system's memory pressure events trim the cache (`false`); see
    /// ``MemoryCache/respondsToMemoryPressure``.
    public var respondsToMemoryPressure: Bool

    /// Creates memory settings; each parameter's default is the setting's.
    /// - Parameters:
    ///   - countLimit: The most entries to hold; 0 means no limit.
    ///   - totalCostLimit: The most total cost to hold; 0 means no limit.
    ///   - defaultExpiration: Seconds a value stored with ``Expiry/default`` lives; `nil` means forever.
    ///   - policy: How to choose what to evict.
    ///   - respondsToMemoryPressure: Whether memory pressure trims the cache.
    public init(
        countLimit: Int = 0, totalCostLimit: Int = 0, defaultExpiration: TimeInterval? = nil, policy: EvictionPolicy = .lru,
        respondsToMemoryPressure: Bool = false
    ) {
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
        self.defaultExpiration = defaultExpiration
        self.policy = policy
        self.respondsToMemoryPressure = respondsToMemoryPressure
    }

    /// Checks every value's range.
    /// - Throws: ``CacheError/Code/invalidOptions`` naming the first setting out of range and its value.
    public func validate() throws(CacheError) {
        guard countLimit >= 0 else {
            throw CacheError(.invalidOptions, "countLimit must be 0 (no limit) or positive, not \(countLimit)")
        }
        guard totalCostLimit >= 0 else {
            throw CacheError(.invalidOptions, "totalCostLimit must be 0 (no limit) or positive, not \(totalCostLimit)")
        }
        if let defaultExpiration, !(defaultExpiration.isFinite && defaultExpiration > 0) {
            throw CacheError(.invalidOptions, "defaultExpiration must be finite and above 0, or nil, not \(defaultExpiration)")
        }
    }
}
