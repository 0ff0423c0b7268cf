/// Calls over several keys, written once for every tier.
enum KeyBatch {
    /// Removes each of `keys` with `remove` and returns those it removed, in order: the one
    /// body of `remove(forKeys:)` on the disk tier and the hybrid.
    static func removing(_ keys: [String], with remove: (String) throws(CacheError) -> Bool) throws(CacheError) -> [String] {
        var removed: [String] = []
        for key in keys where try remove(key) {
            removed.append(key)
        }
        return removed
    }
}
