// TinyLFU's window in nearly LRU order without relinking on a use: a ring of FIFO buckets, each
// holding the entries last used (or inserted) in one stretch of the order's clock. A use only
// writes the entry's stamp; the entry moves to the bucket its stamp names when it reaches the
// head of the oldest bucket. The candidate is thus an entry last used in the oldest stretch:
// LRU's victim, give or take one stretch. A stretch lasts a sixteenth of the window candidates'
// recent age (clock ticks since their last use), so the ring spans about twice that age.

extension EvictionOrder {
    /// The number of buckets in TinyLFU's window.
    @inlinable static var bucketCount: Int { 32 }

    /// Starts a new bucket once the current one has spanned a sixteenth of the candidates' recent
    /// age: the oldest bucket's entries join the next oldest, in front, and its queue becomes the
    /// newest. O(1): only the links where the two queues meet change.
    @inlinable
    mutating func _advanceBucketIfDue<E: EvictionEntry>(in entries: inout [E]) {
        let length = max(1, 2 &* candidateAge / UInt64(Self.bucketCount))
        guard clock &- bucketStarts[newestBucket] >= length else { return }
        let oldest = (newestBucket &+ 1) % Self.bucketCount
        let next = (oldest &+ 1) % Self.bucketCount
        let merged = buckets[oldest]
        if merged.head != -1 {
            if buckets[next].head == -1 {
                buckets[next] = merged
            } else {
                // Only the two links where the queues meet change; the entries keep their queue number.
                entries[Int(merged.tail)].evictionLink.next = buckets[next].head
                entries[Int(buckets[next].head)].evictionLink.previous = merged.tail
                buckets[next].head = merged.head
            }
        }
        buckets[oldest] = Queue()
        bucketStarts[oldest] = clock
        newestBucket = oldest
        emptyOldBuckets = max(0, emptyOldBuckets &- 1)
    }

    /// Which bucket an entry with `stamp` belongs in: the newest one that began at or before it.
    @inlinable
    func _bucket(for stamp: UInt32) -> Int {
        let age = UInt64(UInt32(truncatingIfNeeded: clock) &- stamp)
        for back in 0 ..< Self.bucketCount {
            let bucket = (newestBucket &- back &+ Self.bucketCount) % Self.bucketCount
            if clock &- bucketStarts[bucket] >= age { return bucket }
        }
        return (newestBucket &+ 1) % Self.bucketCount
    }

    /// How many buckets `bucket` is newer than the oldest.
    @inlinable
    func _bucketAge(_ bucket: Int) -> Int {
        (bucket &- newestBucket &- 1 &+ 2 &* Self.bucketCount) % Self.bucketCount
    }

    /// The window's candidate: the head of the oldest non-empty bucket once its stamp says it
    /// belongs there; heads used since they were queued move to the bucket of their last use.
    /// Its referenced bit is cleared, as it leaves the window.
    @inlinable
    mutating func _windowVictim<E: EvictionEntry>(in entries: inout [E]) -> Int32 {
        _advanceBucketIfDue(in: &entries)
        while true {
            let bucket = (newestBucket &+ 1 &+ emptyOldBuckets) % Self.bucketCount
            let slot = buckets[bucket].head
            if slot == -1 {
                emptyOldBuckets &+= 1
                continue
            }
            let stamp = entries[Int(slot)].evictionLink.stamp
            let age = UInt64(UInt32(truncatingIfNeeded: clock) &- stamp)
            // Bucket starts grow from the oldest bucket to the newest: when the next newer bucket
            // began after the stamp, the entry belongs here (the common case, without a scan).
            let newer = (bucket &+ 1) % Self.bucketCount
            let target = bucket == newestBucket || clock &- bucketStarts[newer] < age ? bucket : _bucket(for: stamp)
            if _bucketAge(target) <= _bucketAge(bucket) {
                _ = takeReference(slot, in: &entries)
                candidateAge = candidateAge &- candidateAge / 16 &+ age / 16
                return slot
            }
            _unlinkFromWindow(slot, in: &entries)
            _linkToWindow(slot, bucket: target, in: &entries)
        }
    }

    /// Appends `slot` to window bucket `bucket`.
    @inlinable
    mutating func _linkToWindow<E: EvictionEntry>(_ slot: Int32, bucket: Int, in entries: inout [E]) {
        Self.link(slot, to: &buckets[bucket], number: Self.window, in: &entries)
        emptyOldBuckets = min(emptyOldBuckets, _bucketAge(bucket))
        entries[Int(slot)].evictionLink.bucket = UInt8(truncatingIfNeeded: bucket)
        window.count &+= 1
    }

    /// Takes `slot` out of its window bucket, found by its ends when it is at one.
    @inlinable
    mutating func _unlinkFromWindow<E: EvictionEntry>(_ slot: Int32, in entries: inout [E]) {
        let previous = entries[Int(slot)].evictionLink.previous
        let next = entries[Int(slot)].evictionLink.next
        if previous == -1 || next == -1 {
            let hint = Int(entries[Int(slot)].evictionLink.bucket)
            if (previous != -1 || buckets[hint].head == slot) && (next != -1 || buckets[hint].tail == slot) {
                // The bucket it was linked to still holds it (a splice may have moved it on).
                if previous == -1 { buckets[hint].head = next }
                if next == -1 { buckets[hint].tail = previous }
            } else {
                for i in buckets.indices {
                    if buckets[i].head == slot { buckets[i].head = next }
                    if buckets[i].tail == slot { buckets[i].tail = previous }
                }
            }
        }
        if previous != -1 { entries[Int(previous)].evictionLink.next = next }
        if next != -1 { entries[Int(next)].evictionLink.previous = previous }
        window.count &-= 1
    }
}
