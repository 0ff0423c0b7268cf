import Synchronization

#if LARDER_SANITIZE_THREADS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock around every cache's state, in Thread Sanitizer builds: a `pthread_mutex_t`, which
/// the sanitizer understands.
///
/// `Synchronization.Mutex` keeps its futex atomics in the uninstrumented standard library, so on
/// Linux (Swift 6.3) the sanitizer cannot see its happens-before edges and reports every access
/// made under it as a race (`.ci/tsan-mutex-probe.swift` shows it in ten lines). `.ci/run` builds
/// the sanitizer run with `-DLARDER_SANITIZE_THREADS` so that the races it reports are real ones.
/// The same `withLock` shape as `Mutex`, so code compiles unchanged against either.
@usableFromInline
package final class LarderMutex<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is only touched between pthread_mutex_lock and pthread_mutex_unlock.
    // It lives in its own allocation: stored inline, an empty value (`Void`, for key stripes)
    // would share its address with the object's header, and the sanitizer would mistake the
    // unlocked read of that header for a race on the value.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    @usableFromInline
    package init(_ initialValue: consuming Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable
    package func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }

    /// Runs `body` holding the lock when no thread holds it, or returns `nil` at once:
    /// `Mutex.withLockIfAvailable`'s shape.
    @inlinable
    package func withLockIfAvailable<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
#else
/// The lock around every cache's state: `Synchronization.Mutex`. (Thread Sanitizer builds swap
/// in a pthread mutex the sanitizer understands; see `.ci/run`.)
@usableFromInline
package typealias LarderMutex<Value: ~Copyable> = Mutex<Value>
#endif

/// A ``LarderMutex`` held by reference, so that several objects share one lock and its value (a
/// ``DiskCache``'s handles on one cache: the owner's and its background work's).
final class SharedMutex<Value: ~Copyable>: Sendable {
    let mutex: LarderMutex<Value>

    init(_ initialValue: consuming sending Value) {
        mutex = LarderMutex(initialValue)
    }

    #if LARDER_SANITIZE_THREADS
    /// Runs `body` with the value, holding the lock.
    @inline(__always)
    func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try mutex.withLock(body)
    }
    #else
    /// Runs `body` with the value, holding the lock.
    @inline(__always)
    func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        try mutex.withLock(body)
    }
    #endif
}

/// An atomic Boolean held by reference, so that several objects share it (see ``SharedMutex``).
final class SharedFlag: Sendable {
    private let value = Atomic<Bool>(false)

    /// Whether it is set (an acquiring load: what was written before ``set()`` is seen after).
    @inline(__always)
    var isSet: Bool {
        value.load(ordering: .acquiring)
    }

    /// Sets it, and returns whether it was set already.
    @inline(__always)
    func set() -> Bool {
        value.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// An atomic counter held by reference, so that several objects share it (see ``SharedMutex``).
final class SharedCounter: Sendable {
    private let value = Atomic<UInt64>(0)

    /// The count before this call, which adds one (wrapping).
    @inline(__always)
    func next() -> UInt64 {
        value.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}
