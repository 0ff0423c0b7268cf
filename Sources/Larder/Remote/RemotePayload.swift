import Foundation

/// The frame of a value on the remote tier: a 20-byte header, then the payload.
///
/// | Offset | Size | Field |
/// |---|---|---|
/// | 0 | 4 | magic `LRDR` |
/// | 4 | 1 | version (1) |
/// | 5 | 1 | flags (bit 0: locked against expiry on the writer's disk) |
/// | 6 | 2 | reserved, 0 |
/// | 8 | 8 | expiry, milliseconds since 1970, little-endian; 0 for none |
/// | 16 | 4 | CRC-32 of the payload, little-endian |
///
/// A value without the magic, of another version, shorter than the header or whose payload
/// does not match its checksum is not Larder's, or is damaged: the cache treats it as a miss.
/// The expiry is the writer's at store time (for an entry stored locked, when it would expire
/// unlocked: the lock is the writer's, local). The store's own time to live starts equal and is
/// only ever lengthened (`touch`), so readers bound their copies by the header's expiry, in
/// wall-clock time: instances' clocks are expected to agree.
public enum RemotePayload {
    /// The header's length in bytes.
    public static let headerSize = 20
    /// The current version.
    public static let version: UInt8 = 1
    private static let magic: [UInt8] = Array("LRDR".utf8)

    /// A decoded frame.
    public struct Frame: Sendable, Hashable {
        /// The payload.
        public var data: Data
        /// The writer's expiry, in milliseconds since 1970; `nil` for none.
        public var expiryMilliseconds: Int64?
        /// Whether the writer stored it locked against expiry.
        public var isLocked: Bool
    }

    /// Frames `data` with a header.
    /// - Parameters:
    ///   - data: The payload.
    ///   - expiryMilliseconds: The writer's expiry in milliseconds since 1970, or `nil`.
    ///   - isLocked: Whether it is locked against expiry.
    /// - Returns: The header followed by the payload.
    public static func encode(_ data: Data, expiryMilliseconds: Int64?, isLocked: Bool) -> Data {
        var frame = Data(capacity: headerSize + data.count)
        frame.append(contentsOf: magic)
        frame.append(version)
        frame.append(isLocked ? 1 : 0)
        frame.append(contentsOf: [0, 0])
        withUnsafeBytes(of: (expiryMilliseconds ?? 0).littleEndian) { frame.append(contentsOf: $0) }
        let crc = data.withUnsafeBytes { CRC32.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { frame.append(contentsOf: $0) }
        frame.append(data)
        return frame
    }

    /// The payload and header fields of `frame`, or `nil` when it is not a valid Larder frame.
    ///
    /// The payload is not copied: it shares `frame`'s bytes (and keeps them alive), and its
    /// indices start at 0.
    /// - Parameter frame: The stored bytes.
    /// - Complexity: O(*n*) in the payload (the checksum).
    public static func decode(_ frame: Data) -> Frame? {
        guard frame.count >= headerSize else { return nil }
        return frame.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Frame? in
            guard raw[0] == magic[0], raw[1] == magic[1], raw[2] == magic[2], raw[3] == magic[3], raw[4] == version else {
                return nil
            }
            let flags = raw[5]
            let expiry = Int64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: Int64.self))
            let crc = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self))
            let payload = UnsafeRawBufferPointer(rebasing: raw[headerSize...])
            guard CRC32.checksum(payload) == crc else { return nil }
            return Frame(data: sharing(payload, of: frame), expiryMilliseconds: expiry == 0 ? nil : expiry, isLocked: flags & 1 != 0)
        }
    }

    /// `part`, some of `frame`'s bytes, as a `Data` that shares them instead of copying them: it
    /// holds a copy of `frame`, which keeps the bytes alive, until its own last copy goes.
    ///
    /// Why the address outlives `withUnsafeBytes`: a `Data` of more than 14 bytes (a frame has at
    /// least 20) keeps them in a heap buffer of its storage object; copies share that object, and
    /// the buffer moves or goes only when a copy is changed (copy-on-write gives the changed copy
    /// a buffer of its own) or the last copy goes. The copy held here is never changed.
    private static func sharing(_ part: UnsafeRawBufferPointer, of frame: Data) -> Data {
        guard let base = part.baseAddress, !part.isEmpty else { return Data() }
        return Data(
            bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: part.count,
            deallocator: .custom { _, _ in withExtendedLifetime(frame) {} })
    }
}
