/// A typed view's memory tier, as its hybrid cache sees it: keys to drop when they change.
protocol TypedMemory: AnyObject, Sendable {
    /// Drops the copy of `key`; whether a live one was there.
    @discardableResult
    func remove(forKey key: String) -> Bool
    /// Drops every copy.
    func removeAll()
    /// The keys held.
    func keys() -> [String]
}

extension MemoryCache: TypedMemory where Key == String {}

/// The memory tiers of a ``HybridCache``'s typed views, held weakly: each change the hybrid
/// makes to a key (store, removal, touch, lock, eviction, invalidation) drops their copies, so
/// that every memory tier holds the key's current value or nothing.
final class TypedMemories: Sendable {
    private struct Entry {
        weak var memory: (any TypedMemory)?
    }

    private let entries = LarderMutex<[Entry]>([])

    /// Adds a view's memory tier.
    func add(_ memory: any TypedMemory) {
        entries.withLock { entries in
            entries.removeAll { $0.memory == nil }
            entries.append(Entry(memory: memory))
        }
    }

    /// The tiers still alive, taken under the lock and used outside it.
    private var live: [any TypedMemory] {
        entries.withLock { entries in entries.compactMap(\.memory) }
    }

    /// Drops `key` from every view; whether any held a live copy.
    @discardableResult
    func remove(forKey key: String) -> Bool {
        var removed = false
        for memory in live where memory.remove(forKey: key) { removed = true }
        return removed
    }

    /// Empties every view.
    func removeAll() {
        for memory in live { memory.removeAll() }
    }

    /// The keys starting with `prefix` that any view holds.
    func keys(withPrefix prefix: String) -> Set<String> {
        var keys = Set<String>()
        for memory in live { keys.formUnion(memory.keys().lazy.filter { $0.hasPrefix(prefix) }) }
        return keys
    }
}
