import Dispatch
import Foundation
import Synchronization
@testable import Larder

/// Options for a test hybrid cache in `directory`: the disk's test options (manual clock,
/// default expiration 600 s), no memory count limit and the default memory cost limit.
func hybridOptions(_ directory: URL, clock: ManualClock = ManualClock(now: 1_700_000_000), encoding: KeyEncoding = .sha256)
    -> HybridCacheOptions
{
    var options = HybridCacheOptions(disk: testOptions(directory, clock: clock, encoding: encoding))
    // The memory tier responds to pressure (the default), from a center nothing fires: a real
    // pressure event on a busy test machine would trim memory tiers whose hits the tests count.
    options.pressureCenter = quietPressure.center
    return options
}

/// The pressure center of `hybridOptions`: never fired.
let quietPressure = DrivenPressure()

/// A test hybrid cache in `directory` whose memory tier takes its pressure from a center the
/// test fires itself.
func hybridUnderDrivenPressure(_ directory: URL) throws -> (cache: HybridCache, pressure: DrivenPressure) {
    let pressure = DrivenPressure()
    var options = hybridOptions(directory)
    options.pressureCenter = pressure.center
    return (try HybridCache(options: options), pressure)
}

/// A payload's bytes from a string.
func bytes(_ text: String) -> Data { Data(text.utf8) }

/// A value for typed round trips.
struct Profile: Codable, Equatable, Sendable {
    var name: String
    var age: Int
    var tags: [String]
}

/// A queue whose identity callbacks can check.
struct MarkedQueue: Sendable {
    static let key = DispatchSpecificKey<String>()
    let queue: DispatchQueue
    let name: String

    init(_ name: String) {
        self.name = name
        queue = DispatchQueue(label: name)
        queue.setSpecific(key: Self.key, value: name)
    }

    /// The name of the marked queue the caller runs on, if any.
    static var current: String? { DispatchQueue.getSpecific(key: key) }
}

/// Starts a callback-style call and blocks until its completion runs; returns the response and
/// the marked queue it ran on.
func awaitCallback<T: Sendable>(_ start: (@escaping @Sendable (CacheResponse<T>) -> Void) -> Void) -> (
    response: CacheResponse<T>, queue: String?
) {
    let box = LarderMutex<(CacheResponse<T>, String?)?>(nil)
    let done = DispatchSemaphore(value: 0)
    start { response in
        box.withLock { $0 = (response, MarkedQueue.current) }
        done.signal()
    }
    done.wait()
    let (response, queue) = box.withLock { $0! }
    return (response, queue)
}

/// The code of a thrown ``CacheError``, or `nil` when nothing (or something else) was thrown.
func cacheErrorCode(_ body: () throws -> Void) -> CacheError.Code? {
    do { try body() } catch let error as CacheError { return error.code } catch { return nil }
    return nil
}
