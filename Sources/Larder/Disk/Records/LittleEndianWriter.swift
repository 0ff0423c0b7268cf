/// Writes integers little-endian and bytes one after the other into a buffer the caller sized,
/// for the index's files (``IndexSnapshot``, ``IndexJournal``).
struct LittleEndianWriter {
    /// The buffer written into.
    let out: UnsafeMutableRawBufferPointer
    /// Where the next value goes.
    var offset: Int

    init(_ out: UnsafeMutableRawBufferPointer, at offset: Int = 0) {
        self.out = out
        self.offset = offset
    }

    /// Writes `value` little-endian, unaligned.
    mutating func put<T: FixedWidthInteger>(_ value: T) {
        out.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
    }

    /// Writes `bytes` as they are.
    mutating func put(bytes: some Collection<UInt8>) {
        UnsafeMutableRawBufferPointer(rebasing: out[offset ..< offset + bytes.count]).copyBytes(from: bytes)
        offset += bytes.count
    }

    /// Writes `count` bytes from `source` as they are.
    mutating func put(_ source: UnsafeRawPointer, count: Int) {
        guard count > 0 else { return }
        out.baseAddress!.advanced(by: offset).copyMemory(from: source, byteCount: count)
        offset += count
    }

    /// The bytes written so far, from the buffer's start.
    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: out[0 ..< offset]) }
}
