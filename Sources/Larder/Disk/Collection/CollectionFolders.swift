/// The shard folders one collection pass removes record files from (and looks at them in), each
/// opened once for the pass and closed with it, up to a bound.
///
/// A removal by path resolves the path beneath the root each time: an `openat` of the shard
/// folder, the `unlinkat`, a `close`, three system calls a file. A 1 % prune of 100,000 records
/// removes 1,000 files from at most 256 shard folders, so most removals find their folder open
/// and cost the `unlinkat` alone (`larder-bench gc`). The folders are opened as every
/// path is, beneath the root with no link followed; a folder removed or replaced while the
/// pass runs holds no record of the cache's any more, and a removal from it finds nothing, as
/// a removal by path would have a moment earlier.
///
/// At most ``limit`` folders are open at once (the oldest opened is closed for the next): an
/// eighth of the process's descriptor limit, as kept record files take
/// (``DiskCacheOptions/defaultMaximumOpenFiles``), and no more than the 256 shard folders, so
/// that a pass never takes much of what the application may open (an app on Apple platforms may
/// open 256 in all).
final class CollectionFolders {
    private let io: FileIO
    private let layout: DiskLayout
    /// The most folders open at once.
    let limit: Int
    /// The shard folders open, by shard name.
    private var open: [String: Int32] = [:]
    /// The open folders' names, oldest opened first (from `first`), for closing the oldest.
    private var order: [String] = []
    private var first = 0
    /// The folder asked for last.
    private var last: (shard: String, fd: Int32)?

    init(io: FileIO, layout: DiskLayout, limit: Int = CollectionFolders.defaultLimit) {
        self.io = io
        self.layout = layout
        self.limit = max(1, limit)
    }

    /// An eighth of `RLIMIT_NOFILE`'s soft limit, at least 1 and at most 256 (256 when it is
    /// unlimited or unknown).
    static var defaultLimit: Int {
        min(256, max(1, (FileIO.descriptorLimit() ?? 2_048) / 8))
    }

    deinit {
        for fd in open.values { io.close(fd) }
    }

    /// How many folders are open now.
    var openCount: Int { open.count }

    /// Removes the record file `name`; `false` when it (or its folder) did not exist.
    func unlink(_ name: String) throws(Errno) -> Bool {
        guard let shard = layout.shard(for: name) else { return try io.unlink(layout.path(for: name)) }
        guard let folder = try folder(shard, of: name) else { return false }
        return try io.unlink(name, inFolder: folder)
    }

    /// What `lstat` says of the record file `name`; `nil` when it (or its folder) does not exist.
    func status(_ name: String) throws(Errno) -> FileInfo? {
        guard let shard = layout.shard(for: name) else { return try io.info(atPath: layout.path(for: name)) }
        guard let folder = try folder(shard, of: name) else { return nil }
        return try io.info(of: name, inFolder: folder)
    }

    /// The descriptor of the shard folder `shard` of `name`, opened on first use; `nil` when the
    /// folder does not exist.
    private func folder(_ shard: String, of name: String) throws(Errno) -> Int32? {
        // A removal looks at its file, then removes it: the same folder twice running.
        if let last, last.shard == shard { return last.fd }
        if let known = open[shard] {
            last = (shard, known)
            return known
        }
        let folder: Int32
        do {
            folder = try io.openDirectory(layout.folder(for: name))
        } catch let error where error == .noSuchFileOrDirectory {
            return nil
        }
        if open.count >= limit, first < order.count, let oldest = open.removeValue(forKey: order[first]) {
            io.close(oldest)
            first += 1
        }
        open[shard] = folder
        order.append(shard)
        last = (shard, folder)
        return folder
    }
}
