/// A fixed set of locks, one chosen per key by its hash: calls on the same key are serialised,
/// calls on different keys mostly run in parallel. The one key lock of the disk tier (by file
/// name) and the hybrid (by key).
final class StripedLock: Sendable {
    /// A lock of its own, so that the stripes can live in an array (`Mutex` is not copyable).
    private final class Stripe: Sendable {
        let mutex = LarderMutex(())
    }

    private let stripes: [Stripe]

    /// Creates `count` stripes.
    init(count: Int = 64) {
        precondition(count > 0, "a striped lock needs a stripe")
        stripes = (0 ..< count).map { _ in Stripe() }
    }

    /// Runs `body` holding the stripe of `key`.
    func withLock<T, E: Error>(forKey key: some Hashable, _ body: () throws(E) -> T) throws(E) -> T {
        try withLock(forKeyHash: Self.hash(ofKey: key), body)
    }

    /// The hash by which `withLock(forKey:_:)` picks `key`'s stripe: `Hasher`'s, so that keys
    /// equal as `String`s (canonically equivalent) share a stripe. For a caller that locks the
    /// same key more than once, or hands the hash on (``KeyGenerations``).
    static func hash(ofKey key: some Hashable) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return hasher.finalize()
    }

    /// Runs `body` holding the stripe of the key whose ``hash(ofKey:)`` is `hash`.
    func withLock<T, E: Error>(forKeyHash hash: Int, _ body: () throws(E) -> T) throws(E) -> T {
        let stripe = stripes[Int(UInt(bitPattern: hash) % UInt(stripes.count))]
        return try stripe.mutex.withLock { (_: inout Void) throws(E) -> T in try body() }
    }

    /// Runs `body` holding the stripe of the file name `name`, chosen by its bytes' ``NameHash``
    /// instead of `withLock(forKey:)`'s `Hasher`: the disk tier's key lock, taken once per read,
    /// whose names are compared byte for byte anyway.
    func withLock<T, E: Error>(forName name: String, _ body: () throws(E) -> T) throws(E) -> T {
        try withLock(forNameHash: NameHash.of(name), body)
    }

    /// ``withLock(forName:_:)`` of a name whose ``NameHash`` is `hash` (a read hashes its name
    /// once, for this lock and for its kept descriptor).
    func withLock<T, E: Error>(forNameHash hash: UInt64, _ body: () throws(E) -> T) throws(E) -> T {
        let stripe = stripes[Int(hash % UInt64(stripes.count))]
        return try stripe.mutex.withLock { (_: inout Void) throws(E) -> T in try body() }
    }

    /// ``withLock(forName:_:)`` without waiting: runs `body` holding the stripe of `name` when no
    /// thread holds it, or returns `nil` at once (also when the calling thread holds it).
    func withLockIfAvailable<T>(forName name: String, _ body: () -> T) -> T? {
        let stripe = stripes[Int(NameHash.of(name) % UInt64(stripes.count))]
        return stripe.mutex.withLockIfAvailable { (_: inout Void) -> T in body() }
    }

    /// Runs `body` holding every stripe, taken in order, so that it excludes every per-key call
    /// (which takes one stripe, so no deadlock).
    func withEveryLock<E: Error>(_ body: () throws(E) -> Void) throws(E) {
        try withEveryLock(from: 0, body)
    }

    private func withEveryLock<E: Error>(from index: Int, _ body: () throws(E) -> Void) throws(E) {
        guard index < stripes.count else { return try body() }
        try stripes[index].mutex.withLock { (_: inout Void) throws(E) in
            try withEveryLock(from: index + 1, body)
        }
    }
}
