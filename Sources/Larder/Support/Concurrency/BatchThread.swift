#if canImport(Glibc)
import Glibc
#endif

/// Makes the calling thread a batch thread on Linux (`SCHED_BATCH`): its share of the cores is
/// unchanged, but when it is woken it waits for the running thread's time slice instead of taking
/// that thread's core at once (the scheduler otherwise favours a thread that slept). For a thread
/// of its own that does background work, such as ``PromotionQueue``'s worker. Elsewhere, and where
/// the system refuses, the thread keeps its policy (on Apple platforms its quality of service
/// does this).
func makeCurrentThreadBatch() {
    #if os(Linux)
    var parameters = sched_param()
    let batch: Int32 = 3  // SCHED_BATCH, which Glibc exports only to GNU sources
    _ = pthread_setschedparam(pthread_self(), batch, &parameters)
    #endif
}
