/// What the index knows of one record: the value ``DiskIndex`` takes and gives back. The index
/// itself keeps no `IndexEntry`: it packs each into a ``DiskIndex/Slot`` and the byte arena.
struct IndexEntry: Sendable {
    /// The record's file name.
    var name: String
    /// The original key, where the record stores it or the encoding is verbatim.
    var key: String?
    /// Bytes the record occupies on disk: its length rounded up to the block size.
    var diskSize: Int
    /// The record file's exact length, 0 when unknown (entries from a snapshot until first read).
    var fileSize: Int = 0
    /// The update time that anchors expiry, in whole seconds. For `ttl` 0 records, reads slide it.
    var updateTime: UInt64
    /// The last use, in milliseconds since the epoch.
    var lastAccessMs: UInt64
    /// Time to live in seconds, 0 for the default (at most ``RecordHeader/maximumTTL``, which
    /// every source of entries clamps to; the index keeps 32 bits of it).
    var ttl: UInt64
    /// The lock count.
    var lockCount: UInt32
    /// Whether `updateTime` or `lastAccessMs` is newer than the record's header.
    var isAccessDirty = false

    init(
        name: String, key: String?, diskSize: Int, fileSize: Int = 0, updateTime: UInt64, lastAccessMs: UInt64, ttl: UInt64,
        lockCount: UInt32, isAccessDirty: Bool = false
    ) {
        self.name = name
        self.key = key
        self.diskSize = diskSize
        self.fileSize = fileSize
        self.updateTime = updateTime
        self.lastAccessMs = lastAccessMs
        self.ttl = ttl
        self.lockCount = lockCount
        self.isAccessDirty = isAccessDirty
    }
}
