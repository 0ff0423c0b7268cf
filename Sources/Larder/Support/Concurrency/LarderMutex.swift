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
final class LarderMutex<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is only touched between pthread_mutex_lock and pthread_mutex_unlock.
    // It lives in its own allocation: stored inline, an empty value (`Void`, for key stripes)
    // would share its address with the object's header, and the sanitizer would mistake the
    // unlocked read of that header for a race on the value.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    @usableFromInline
    init(_ initialValue: consuming Value) {
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
    func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
#else
/// The lock around every cache's state: `Synchronization.Mutex`. (Thread Sanitizer builds swap
/// in a pthread mutex the sanitizer understands; see `.ci/run`.)
@usableFromInline
typealias LarderMutex<Value: ~Copyable> = Mutex<Value>
#endif
