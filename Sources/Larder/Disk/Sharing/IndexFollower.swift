/// Keeps one writer's in-memory index in step with a folder's ``FolderChangeLog``: what other
/// writers recorded is replayed before each operation (``catchUp(_:index:keyEncoding:rebuild:)``),
/// and this writer's own changes are made under the change lock after replaying what came
/// before them (``change(in:index:keyEncoding:sync:rebuild:_:)``), so that every writer's index
/// applies the same changes in the same order. When the changes since cannot be replayed (a new
/// generation: a compaction, a removal of everything, a damaged log), the index is built from
/// the folder again (`rebuild`), after the place in the log was taken, so that what is recorded
/// meanwhile is replayed on top rather than missed. `DiskCache+Sharing.swift` drives it for a
/// cache that shares its folder.
///
/// A change travels as a journal commit's payload (``IndexJournal/changesPayload(_:)``) and is
/// applied to this writer's index by the same code that applies it to the others', so that the
/// indexes cannot drift by applying one change two ways.
struct IndexFollower {
    /// The record kind of an index change.
    static let indexChangeKind: UInt8 = 1

    /// Where this writer is in the log.
    private(set) var cursor = FolderChangeLog.Cursor.start

    /// What catching up did to the index.
    enum Step: Equatable {
        /// Nothing was recorded since.
        case current
        /// Other writers' changes were applied; the names they touched, whose kept descriptors
        /// and payloads the caller drops (their files may have been replaced or removed), and
        /// the keys of those records, whose copies a memory tier in front drops.
        case applied(touched: [String], keys: [String])
        /// The changes since could not be replayed: the index was built from the folder again;
        /// the caller drops everything it keeps.
        case rebuilt
    }

    /// Replays what other writers recorded since the last call, when the log's header moved:
    /// one read of the header when it did not.
    /// - Complexity: O(*c*) for the *c* changes recorded since.
    /// - Parameter rebuild: Builds the index from the folder, when the changes since cannot be replayed.
    mutating func catchUp(
        _ log: FolderChangeLog, index: inout DiskIndex, keyEncoding: KeyEncoding, rebuild: () -> DiskIndex
    ) -> Step {
        guard log.hasMoved(since: cursor) else { return .current }
        return apply(log.changes(after: cursor), to: &index, keyEncoding: keyEncoding, rebuild: rebuild)
    }

    /// A follower that has replayed the log up to `cursor`.
    init(at cursor: FolderChangeLog.Cursor = .start) {
        self.cursor = cursor
    }

    /// Takes `cursor` as the place replayed up to: the end of what this writer appended, its
    /// index already holding the changes.
    mutating func move(to cursor: FolderChangeLog.Cursor) {
        self.cursor = cursor
    }

    /// Applies `tail`, read from the log after ``cursor``, to `index`; builds the index again
    /// (`rebuild`) when it cannot be replayed.
    /// - Complexity: O(*c*) for the *c* changes in `tail`.
    mutating func apply(
        _ tail: FolderChangeLog.Tail, to index: inout DiskIndex, keyEncoding: KeyEncoding, rebuild: () -> DiskIndex
    ) -> Step {
        switch tail {
        case .current:
            return .current
        case .reset(let next):
            cursor = next
            index = rebuild()
            return .rebuilt
        case .records(let records, let next):
            var touched: [String] = []
            var keys: [String] = []
            for record in records where record.kind == Self.indexChangeKind {
                guard IndexJournal.applyChanges(record.payload, to: &index, keyEncoding: keyEncoding, touched: &touched, keys: &keys)
                else {
                    // A record that does not apply: the folder is the truth, from this place on.
                    cursor = next
                    index = rebuild()
                    return .rebuilt
                }
            }
            cursor = next
            return .applied(touched: touched, keys: keys)
        }
    }

    /// Makes a change under the change lock: replays what others recorded first, then runs
    /// `body` with the index caught up (it changes the record files, and returns the index
    /// change it made, or `nil` for none), applies that change to `index` and records it.
    /// - Parameters:
    ///   - sync: Whether the record is synced (``Durability/fsync``).
    ///   - rebuild: Builds the index from the folder, when the changes before cannot be
    ///     replayed; it runs under the change lock, so that the index `body` sees is the folder's.
    /// - Returns: What `body` returned, and what catching up did first.
    /// - Throws: ``CacheError/Code/ioFailure`` when the lock cannot be taken or the log
    ///   written; `body` ran or not, and the folder is the truth either way.
    /// - Complexity: O(*c*) for the *c* changes recorded since the last call.
    mutating func change<T>(
        in log: FolderChangeLog, index: inout DiskIndex, keyEncoding: KeyEncoding, sync: Bool = false,
        rebuild: () -> DiskIndex, _ body: (DiskIndex) -> (result: T, change: DiskIndex.Changes?)
    ) throws(CacheError) -> (result: T, step: Step) {
        try log.withChangeLock(sync: sync) { appender -> (result: T, step: Step) in
            let step = apply(log.changes(after: cursor), to: &index, keyEncoding: keyEncoding, rebuild: rebuild)
            let (result, change) = body(index)
            if let change, !change.isEmpty {
                let payload = IndexJournal.changesPayload(change)
                var touched: [String] = []
                // The payload was just encoded from entries already checked: it applies whole.
                _ = IndexJournal.applyChanges(payload, to: &index, keyEncoding: keyEncoding, touched: &touched)
                appender.append(kind: Self.indexChangeKind, payload: payload)
            }
            cursor = appender.cursor
            return (result, step)
        }
    }
}
