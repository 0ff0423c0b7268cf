// Background compaction of the index journal: once a collection's commit takes the journal past
// its bound (a quarter of the base), the new base is written on the cache's utility queue, not in
// the collection. Until it is, the image on disk is the base and the longer journal, exact as
// after any commit; the compaction itself is the one a flush makes (a new base of a fresh epoch,
// renamed into place, then the journal removed), so a crash at any point leaves the image exact
// or absent. A collection that finds the journal past twice its bound (the compactions skipped
// because a change was under way each time) writes the base itself.
extension DiskCache {
    /// Schedules a background compaction, unless one is scheduled and has not started.
    /// Expects ``snapshotGate`` held (it is `gate`).
    func scheduleCompaction(_ gate: inout SnapshotState) {
        guard !gate.isCompactionScheduled else { return }
        gate.isCompactionScheduled = true
        let background = backgroundHandle
        let work: @Sendable () -> Void = { background.compactJournal() }
        if let runner = gate.compactionRunner {
            runner(work)
        } else {
            ioQueue.async(.collection, work)
        }
    }

    /// Writes a new base and removes the journal, if the journal is still past its bound and the
    /// cache open: under the collection gate, as a collection would, so it never runs beside one
    /// or beside a flush; skipped (the next collection schedules it again) while a change is
    /// under way. A close waits for it, then writes its own base; once the close has begun
    /// taking the gate, it does nothing.
    func compactJournal() {
        var events: [CacheEvent] = []
        collectionGate.withLock { _ in
            let isDue = snapshotGate.withLock { gate in
                gate.isCompactionScheduled = false
                return !gate.isClosing && gate.epoch != nil && gate.journalLength > gate.journalBound
            }
            // The close sets the flag before it takes the collection gate and releases the
            // directory after: checked here, under the gate, no base lands after the release.
            guard isDue, !isClosed.isSet else { return }
            if case .failed(let event) = writeSnapshot(sync: false, compacting: true) { events.append(event) }
        }
        emit(events)
    }
}
