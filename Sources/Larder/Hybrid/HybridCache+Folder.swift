import Foundation

// A hybrid whose disk tier shares its folder with other writers
// (``DiskCacheOptions/sharesFolderWithWriters``): what another process stores, removes, locks or
// unlocks is a hit, a miss or a lock here at this cache's next operation on that key, memory
// hits included.
// - The disk tier tells the hybrid which keys each replay of the others' changes touched
//   (``SharedFolder/observe(_:)``), or that any may have changed; the hybrid drops its memory
//   copies of them (this cache's and its typed views'). The replay runs holding the folder's
//   `following` lock, which every local change of the disk takes too, so a drop reported by a
//   replay always comes before the local changes made after that replay.
// - Before a memory look, the log's change counter is loaded (an atomic load in shared memory;
//   a `pread` of the log's header when the counter is not mapped) and, when it moved, the new
//   changes are replayed (``followFolder()``): a memory hit never serves a copy another process
//   changed before the call.
// - The drop takes no key lock (a replay may run inside an operation that holds one), so a copy
//   made from a disk read or a local change could land after the drop of a change that followed
//   it. Each key's generation (``folderGenerations``) moves on before the drop, and a copy is
//   made only if it did not move since before the disk read or change, checked inside the memory
//   tier's lock (``MemoryCache/storeCopies(count:now:_:)``), as remote invalidations do: a drop
//   whose move came after the check comes after the copy, and removes it.
extension HybridCache {
    /// Registers the memory tiers' drops with `disk`'s folder when it shares the folder with
    /// other writers; returns the generations the drops move on, or `nil` when the folder is
    /// this process's alone.
    static func observeFolder(of disk: DiskCache, memory: MemoryCache<String, Data>, typedMemories: TypedMemories) -> KeyGenerations? {
        guard let sharedFolder = disk.sharedFolder else { return nil }
        let generations = KeyGenerations()
        // Weak: a disk tier held past the hybrid does not keep its memory tiers alive.
        sharedFolder.observe { [weak memory, weak typedMemories] change in
            switch change {
            case .keys(let keys):
                for key in keys {
                    generations.bump(key)
                    memory?.remove(forKey: key)
                    typedMemories?.remove(forKey: key)
                }
            case .everything:
                generations.bump(nil)
                memory?.removeAll()
                typedMemories?.removeAll()
            }
        }
        return generations
    }

    /// Replays what the folder's other writers recorded since the disk tier last looked, dropping
    /// the memory copies of what they changed: one atomic load of the change log's counter when
    /// nothing was (a `pread` of its header when the counter is not mapped). Nothing once the
    /// disk tier is closed: the memory tier then serves what it holds (``close()``).
    @usableFromInline
    func followFolder() {
        if !disk.isClosed.isSet { disk.followFolder() }
    }

    /// The key's generation among the other writers' changes, taken before a disk read or a local
    /// change whose result goes to memory, after replaying what they recorded (so that the read's
    /// own look at the log finds nothing new); `nil` when the folder is this process's alone.
    func folderMark(forKey key: String) -> KeyGenerations.Snapshot? {
        guard let folderGenerations else { return nil }
        followFolder()
        return folderGenerations.snapshot(key)
    }

    /// Puts `value` in `tier` until `deadline` (disk clock time; `.infinity` for none, capped by
    /// the tier's default), unless another writer of the folder changed `key` since `mark`:
    /// checked in the memory tier's critical section, so that a drop after the check removes it.
    func storeCopy<Value>(
        _ value: Value, cost: Int, forKey key: String, deadline: Double, into tier: MemoryCache<String, Value>,
        since mark: KeyGenerations.Snapshot
    ) {
        guard let folderGenerations else { return }
        tier.storeCopies(count: 1, now: disk.options.clock.now) { _ in
            folderGenerations.allows(mark) ? MemoryCache.Copy(key: key, value: value, cost: cost, deadline: deadline) : nil
        }
    }
}
