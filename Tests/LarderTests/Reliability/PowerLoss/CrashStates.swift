import LarderTestSupport

/// How much ordering a file system keeps across a power loss.
enum PersistenceModel: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The weakest ordering POSIX allows (ALICE's abstract persistence model without its
    /// atomicity hints): a file's bytes are durable once that file is synced, a folder's entries
    /// once that folder is synced, and nothing else is ordered. Each unsynced create, mkdir,
    /// rename or unlink happened or not, independently of the others and of the data; each
    /// unsynced write was kept, dropped, or kept in part (a prefix cut at a sector boundary, or
    /// some of its 4 KiB pages), and a file it extended may keep its new length with zeros where
    /// the bytes did not arrive (what `data=writeback` shows).
    case weakest
    /// ext4 with `data=ordered` (its default): folder and size changes are journaled in order, so
    /// the entries that survive are those of a prefix of the trace, which reaches at least the
    /// last `fsync` (any `fsync` commits the journal); a file's data is durable up to its last
    /// `fsync`, and a rename that survived brings the renamed file's data written before it (the
    /// `auto_da_alloc` rule); each file's other writes survive as a prefix of them, the last one
    /// possibly torn at page or sector boundaries. Never zeros where data should be.
    case ext4Ordered

    var description: String { rawValue }
}

/// The file-system images a power loss may leave after a prefix of a ``SimulatedDisk``'s trace:
/// the trace replayed onto the image it started from, each operation kept, dropped or torn as
/// the ``PersistenceModel`` allows. Deterministic: the same seed gives the same images.
///
/// Writes are torn at 512-byte sector boundaries, never inside a sector: disks write a sector
/// whole or not at all, the assumption behind every in-place header update (Larder's lock
/// counts and access times, as SPTPersistentCache's before it).
struct CrashStates {
    let initial: DiskImage
    let trace: [DiskOperation]

    static let sectorSize = 512
    static let pageSize = 4096

    init(initial: DiskImage, trace: [DiskOperation]) {
        self.initial = initial
        self.trace = trace
    }

    init(of disk: SimulatedDisk) {
        self.init(initial: disk.initial, trace: disk.trace)
    }

    // MARK: - Whole states

    /// Everything in the first `k` operations reached the disk: what a process crash (not a
    /// power loss) leaves.
    func everything(upTo k: Int) -> DiskImage {
        var image = initial
        for (i, operation) in trace[..<k].enumerated() { image.apply(operation, at: initial.clock + i) }
        return image
    }

    /// Only what the model guarantees: unsynced entries and data lost (ext4: the journal cut at
    /// the last `fsync`, each file's unsynced data dropped).
    func durableOnly(upTo k: Int, model: PersistenceModel) -> DiskImage {
        var random = SplitMix64(seed: 0)
        return state(upTo: k, model: model, keep: 0, random: &random, tears: false)
    }

    /// A random state the model allows after the first `k` operations.
    func randomState(upTo k: Int, model: PersistenceModel, random: inout SplitMix64) -> DiskImage {
        // Explore both ends: most unsynced changes lost, most kept, and halfway.
        let keep = [0.1, 0.5, 0.9][random.below(3)]
        return state(upTo: k, model: model, keep: keep, random: &random, tears: true)
    }

    // MARK: - Replay

    /// The index of the last `fsync` of each node among the first `k` operations.
    private func lastSyncs(upTo k: Int) -> (byNode: [Int: Int], any: Int) {
        var byNode: [Int: Int] = [:]
        var any = -1
        for (i, operation) in trace[..<k].enumerated() {
            if case .fsync(let node) = operation {
                byNode[node] = i
                any = i
            }
        }
        return (byNode, any)
    }

    private func state(upTo k: Int, model: PersistenceModel, keep: Double, random: inout SplitMix64, tears: Bool) -> DiskImage {
        switch model {
        case .weakest: weakestState(upTo: k, keep: keep, random: &random, tears: tears)
        case .ext4Ordered: orderedState(upTo: k, keep: keep, random: &random, tears: tears)
        }
    }

    private func weakestState(upTo k: Int, keep: Double, random: inout SplitMix64, tears: Bool) -> DiskImage {
        let syncs = lastSyncs(upTo: k).byNode
        var image = initial
        for (i, operation) in trace[..<k].enumerated() {
            switch operation {
            case .create, .mkdir, .rename, .unlink:
                // A rename is one journal entry for both folders: a sync of either keeps it.
                let synced = operation.folders.contains { (syncs[$0] ?? -1) > i }
                image.apply(operation, linking: synced || random.chance(keep), at: initial.clock + i)
            case .write(let node, let offset, let bytes):
                if (syncs[node] ?? -1) > i || random.chance(keep) {
                    image.apply(operation, at: initial.clock + i)
                } else if tears {
                    tear(node, offset, bytes, into: &image, zeros: true, random: &random)
                }
            case .truncate(let node, _):
                if (syncs[node] ?? -1) > i || random.chance(keep) { image.apply(operation, at: initial.clock + i) }
            case .chmod, .fsync, .close:
                image.apply(operation, at: initial.clock + i)
            }
        }
        return image
    }

    private func orderedState(upTo k: Int, keep: Double, random: inout SplitMix64, tears: Bool) -> DiskImage {
        let (syncs, lastSync) = lastSyncs(upTo: k)
        // The journal's cut: entries and sizes of operations before it survive, none after.
        let cut = keep == 0 ? lastSync + 1 : lastSync + 1 + random.below(k - lastSync)
        // Data that must have reached the disk: up to each file's last sync, and up to a
        // surviving rename of it.
        var forcedBefore = syncs
        for (i, operation) in trace[..<min(cut, k)].enumerated() {
            if case .rename(_, _, _, _, let node) = operation { forcedBefore[node] = max(forcedBefore[node] ?? -1, i) }
        }
        // Each file's other writes: a prefix survives, the one after it maybe torn.
        var unforced: [Int: [Int]] = [:]
        for (i, operation) in trace[..<k].enumerated() {
            switch operation {
            case .write(let node, _, _) where (forcedBefore[node] ?? -1) < i: unforced[node, default: []].append(i)
            default: break
            }
        }
        var kept: Set<Int> = []
        var torn: Set<Int> = []
        for (_, writes) in unforced.sorted(by: { $0.key < $1.key }) {
            let survivors = keep == 0 ? 0 : (random.chance(keep) ? writes.count : random.below(writes.count + 1))
            kept.formUnion(writes[..<survivors])
            if tears, survivors < writes.count, random.chance(0.5) { torn.insert(writes[survivors]) }
        }
        var image = initial
        for (i, operation) in trace[..<k].enumerated() {
            switch operation {
            case .create, .mkdir, .rename, .unlink, .truncate, .chmod:
                if operation.changesEntries {
                    image.apply(operation, linking: i < cut, at: initial.clock + i)
                } else if i < cut {
                    image.apply(operation, at: initial.clock + i)
                }
            case .write(let node, let offset, let bytes):
                if (forcedBefore[node] ?? -1) > i || kept.contains(i) {
                    image.apply(operation, at: initial.clock + i)
                } else if torn.contains(i) {
                    tear(node, offset, bytes, into: &image, zeros: false, random: &random)
                }
            case .fsync, .close:
                break
            }
        }
        return image
    }

    /// Applies part of a write: a prefix cut at a sector boundary, or a random subset of the
    /// 4 KiB pages it touches. With `zeros`, a write that extended the file may also leave the
    /// new length, zero-filled where its bytes did not arrive.
    private func tear(_ node: Int, _ offset: Int, _ bytes: [UInt8], into image: inout DiskImage, zeros: Bool, random: inout SplitMix64) {
        let end = offset + bytes.count
        if random.chance(0.5) {
            var cuts = [offset]
            var boundary = (offset / Self.sectorSize + 1) * Self.sectorSize
            while boundary < end {
                cuts.append(boundary)
                boundary += Self.sectorSize
            }
            let cut = cuts[random.below(cuts.count)]
            if cut > offset { image.write(node, at: offset, bytes[..<(cut - offset)]) }
        } else {
            var page = offset / Self.pageSize * Self.pageSize
            while page < end {
                let from = max(offset, page)
                let to = min(end, page + Self.pageSize)
                if random.chance(0.5) { image.write(node, at: from, bytes[(from - offset) ..< (to - offset)]) }
                page += Self.pageSize
            }
        }
        if zeros, random.chance(0.5), (image[node]?.data.count ?? 0) < end { image.resize(node, to: end) }
    }
}

extension SplitMix64 {
    /// `true` with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        Double(next() >> 11) / Double(1 << 53) < p
    }
}

extension DiskImage {
    /// A hash of the tree reachable from the root (names, kinds, bytes), to skip checking a
    /// crash state twice.
    var treeHash: Int {
        var hasher = Hasher()
        func visit(_ node: Int) {
            guard let entry = self[node] else { return }
            hasher.combine(entry.kind == .directory)
            // A folder's time decides whether a snapshot's stamp vouches for it.
            if entry.kind == .directory { hasher.combine(entry.modified) }
            entry.data.withUnsafeBytes { hasher.combine(bytes: $0) }
            for (name, child) in entry.entries.sorted(by: { $0.key < $1.key }) {
                hasher.combine(name)
                visit(child)
            }
            hasher.combine(0xFF)
        }
        visit(DiskImage.rootNode)
        return hasher.finalize()
    }
}
