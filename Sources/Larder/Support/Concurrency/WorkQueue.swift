import Dispatch
import Foundation

/// The kinds of work a cache runs on its own threads, each with its own quality of service.
package enum WorkKind: Sendable {
    case read, write, delete, collection
}

/// A cache's own threads for blocking work (the `async` and callback forms, collections, the
/// index build): one concurrent queue, a quality of service per ``WorkKind``, and an optional
/// bound on how many run at once (the rest wait in line, first come first served).
package final class WorkQueue: Sendable {
    /// The queue the work runs on; also the target of timers.
    package let queue: DispatchQueue
    private let qualities: WorkQualityOfService
    /// The most items running at once; 0 for no bound.
    private let limit: Int
    /// Work waiting for a slot, and how many run (used only with a bound).
    private let line: LarderMutex<Line>
    /// Whether operations started through this queue should note how long they waited.
    package let measuresWaits: Bool

    private struct Line {
        var running = 0
        var waiting: [(qos: DispatchQoS.QoSClass, work: @Sendable () -> Void)] = []
        var head = 0
    }

    /// - Parameters:
    ///   - label: The queue's label, as debuggers and crash reports show it.
    ///   - qualities: The quality of service of each kind of work.
    ///   - maximumConcurrent: The most items running at once; 0 for no bound of its own.
    ///   - measuresWaits: Whether to note each item's wait for ``queuedDuration``.
    package init(label: String, qualities: WorkQualityOfService, maximumConcurrent: Int, measuresWaits: Bool) {
        queue = DispatchQueue(label: label, qos: .utility, attributes: .concurrent)
        self.qualities = qualities
        limit = maximumConcurrent
        line = LarderMutex(Line())
        self.measuresWaits = measuresWaits
    }

    /// The quality of service of a kind of work.
    package func qos(_ kind: WorkKind) -> DispatchQoS.QoSClass {
        switch kind {
        case .read: qualities.reads
        case .write: qualities.writes
        case .delete: qualities.deletes
        case .collection: qualities.collection
        }
    }

    /// Runs `work` on the queue, at the quality of service of `kind`, when a slot is free.
    package func async(_ kind: WorkKind, _ work: @escaping @Sendable () -> Void) {
        let qos = qos(kind)
        var body = work
        if measuresWaits {
            let queuedAt = ContinuousClock.now
            body = {
                WaitNote.set(ContinuousClock.now - queuedAt)
                defer { WaitNote.set(nil) }
                work()
            }
        }
        guard limit > 0 else {
            queue.async(qos: DispatchQoS(qosClass: qos, relativePriority: 0), execute: body)
            return
        }
        let startsNow = line.withLock { l in
            if l.running < limit {
                l.running += 1
                return true
            }
            l.waiting.append((qos, body))
            return false
        }
        if startsNow { start(qos, body) }
    }

    /// Runs `work` in a slot it holds, then hands the slot to the next in line, if any.
    private func start(_ qos: DispatchQoS.QoSClass, _ work: @escaping @Sendable () -> Void) {
        queue.async(qos: DispatchQoS(qosClass: qos, relativePriority: 0)) { [self] in
            work()
            let next = line.withLock { l -> (qos: DispatchQoS.QoSClass, work: @Sendable () -> Void)? in
                guard l.head < l.waiting.count else {
                    l.running -= 1
                    l.waiting.removeAll(keepingCapacity: true)
                    l.head = 0
                    return nil
                }
                defer { l.head += 1 }
                return l.waiting[l.head]
            }
            if let next { start(next.qos, next.work) }
        }
    }

    /// How long the work running on this thread waited in line, when the queue measures waits
    /// and the current thread runs its work; `.zero` otherwise.
    package static var queuedDuration: Duration { WaitNote.get() ?? .zero }
}

/// The wait of the work item running on the current thread, kept in the thread's dictionary
/// (only when a timing handler asks for it).
private enum WaitNote {
    static let key = "larder.queued"

    static func set(_ wait: Duration?) {
        let dictionary = Thread.current.threadDictionary
        if let wait {
            dictionary[key] = WaitBox(wait)
        } else {
            dictionary.removeObject(forKey: key)
        }
    }

    static func get() -> Duration? {
        (Thread.current.threadDictionary[key] as? WaitBox)?.wait
    }
}

private final class WaitBox: NSObject {
    let wait: Duration
    init(_ wait: Duration) { self.wait = wait }
}
