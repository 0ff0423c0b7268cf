import Dispatch
import Synchronization

/// Set by a task's cancellation handler; read by the work it queued.
private final class CancellationFlag: Sendable {
    let isSet = Atomic<Bool>(false)
}

extension WorkQueue {
    /// Runs blocking work on this queue and awaits its result, so that file I/O never occupies a
    /// thread of the cooperative pool. The one bridge every `async` twin goes through.
    ///
    /// Cancellation is honoured until the work starts: a task cancelled before the call, or while
    /// the work waits in the queue, gets ``CacheError/Code/cancelled`` and the work never runs.
    /// Once started, the work runs to completion.
    /// - Parameters:
    ///   - kind: The kind of work, for its quality of service.
    ///   - key: The key the work concerns, for the cancellation error.
    ///   - work: The blocking work.
    package func runBlocking<T: Sendable>(
        _ kind: WorkKind = .read, key: String?, _ work: @escaping @Sendable () throws(CacheError) -> T
    ) async throws(CacheError) -> T {
        let cancelled = CacheError(.cancelled, "the task was cancelled before the cache started the work", key: key)
        if Task.isCancelled { throw cancelled }
        let flag = CancellationFlag()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, CacheError>, Never>) in
                self.async(kind) {
                    if flag.isSet.load(ordering: .acquiring) {
                        continuation.resume(returning: .failure(cancelled))
                        return
                    }
                    continuation.resume(returning: Result { () throws(CacheError) in try work() })
                }
            }
        } onCancel: {
            flag.isSet.store(true, ordering: .releasing)
        }
        return try result.get()
    }

    /// Runs blocking work on this queue, then hands its outcome to `completion` on `queue`: the
    /// one bridge every callback-style call goes through. A `nil` result is delivered as
    /// ``CacheResponse/notFound``, a thrown error as ``CacheResponse/failure(_:)``.
    package func runBlocking<T: Sendable>(
        _ kind: WorkKind = .read, deliveringOn queue: DispatchQueue, _ work: @escaping @Sendable () throws(CacheError) -> T?,
        completion: @escaping @Sendable (CacheResponse<T>) -> Void
    ) {
        self.async(kind) {
            let response: CacheResponse<T>
            do throws(CacheError) {
                response = try work().map { .success($0) } ?? .notFound
            } catch {
                response = .failure(error)
            }
            queue.async { completion(response) }
        }
    }
}
