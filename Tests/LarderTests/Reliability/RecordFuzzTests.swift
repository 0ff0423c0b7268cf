#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import Larder

/// Seeded random damage to valid record files: truncations, bit flips, and header fields set to
/// hostile values (with the header CRC recomputed, so that the damage reaches the later checks).
/// A load must return the stored bytes, `nil`, or throw a ``CacheError``; never other bytes.
@Suite struct RecordFuzzTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["LARDER_FUZZ_ITERATIONS"] ?? "") ?? 3000
    static let key = "fuzz/key"

    /// Rewrites the header CRC after a deliberate change.
    static func resealHeader(_ bytes: inout [UInt8]) {
        guard bytes.count >= 64 else { return }
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0 ..< 60])) }
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange(60 ..< 64, with: $0) }
    }

    static func set<T: FixedWidthInteger>(_ value: T, at offset: Int, in bytes: inout [UInt8]) {
        guard bytes.count >= offset + MemoryLayout<T>.size else { return }
        withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset ..< offset + MemoryLayout<T>.size, with: $0) }
    }

    @Test(arguments: [0, 40, 5_000, 70_000])
    func damagedRecordsNeverReturnWrongBytes(payloadLength: Int) throws {
        let dir = TemporaryDirectory("larder-fuzz")
        defer { dir.remove() }
        var options = DiskCacheOptions(directory: dir.url)
        options.clock = ManualClock(now: 1_700_000_000)
        let cache = try DiskCache(options: options)
        let payload = Data(StampedPayload.make(key: Self.key, version: 7, length: payloadLength))
        try cache.store(payload, forKey: Self.key)
        let path = cache.layout.path(for: try cache.options.keyEncoding.fileName(for: Self.key))
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        var random = SplitMix64(seed: 0xF022 &+ UInt64(payloadLength))
        var outcomes: [String: Int] = [:]
        let hostile: [UInt64] = [
            0, 1, 63, 64, 65, UInt64(original.count), UInt64(original.count) + 1, 1 << 31, 1 << 32, 1 << 60, UInt64(Int.max), UInt64.max,
        ]

        for iteration in 0 ..< Self.iterations {
            var bytes = original
            var reseal = false
            for _ in 0 ..< 1 + Int(random.next() % 3) {
                switch random.next() % 6 {
                case 0:
                    bytes.removeSubrange(Int(random.next() % UInt64(bytes.count + 1))...)
                case 1, 2:
                    for _ in 0 ..< 1 + Int(random.next() % 8) where !bytes.isEmpty {
                        let bit = Int(random.next() % UInt64(bytes.count * 8))
                        bytes[bit / 8] ^= 1 << (bit % 8)
                    }
                case 3:
                    Self.set(hostile[Int(random.next() % UInt64(hostile.count))], at: 32, in: &bytes)  // payloadSizeBytes
                    reseal = true
                case 4:
                    // headerSize, refCount, reserved1, key length, key CRC, flags
                    let field = [4, 8, 12, 48, 52, 56][Int(random.next() % 6)]
                    Self.set(
                        UInt32(
                            truncatingIfNeeded: hostile[Int(random.next() % UInt64(hostile.count))]
                                ^ (random.next() % 2 == 0 ? 0 : random.next())), at: field, in: &bytes)
                    reseal = true
                default:
                    bytes += (0 ..< Int(random.next() % 100)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                }
            }
            if reseal || random.next() % 4 == 0 { Self.resealHeader(&bytes) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                if let record = try cache.record(forKey: Self.key) {
                    // Other bytes may only come back when the header, resealed, no longer carries a
                    // payload checksum and the file's payload region really holds them.
                    let header = try? RecordHeader.decode(bytes)
                    let honest =
                        header.map { !$0.flags.contains(.payloadChecksum) && record.data == Data(bytes[$0.payloadOffset...]) } ?? false
                    #expect(record.data == payload || honest, "iteration \(iteration): \(record.data.count) wrong bytes")
                    outcomes[record.data == payload ? "same bytes" : "unchecked payload as written", default: 0] += 1
                } else {
                    outcomes["miss", default: 0] += 1
                }
            } catch {
                outcomes["CacheError \(error.code)", default: 0] += 1
            }
        }
        // Every damaged file was read without crashing; most were misses.
        #expect((outcomes["miss"] ?? 0) > Self.iterations / 2, "\(outcomes)")
        print("fuzz, payload \(payloadLength) bytes: \(Self.iterations) cases: \(outcomes.sorted { $0.key < $1.key })")
    }

    /// A sparse file far larger than memory, with a valid header that claims all of it: the load
    /// must fail cleanly instead of trying to allocate it.
    @Test(arguments: [false, true])
    func recordLargerThanMemory(validHeader: Bool) throws {
        let dir = TemporaryDirectory("larder-fuzz-huge")
        defer { dir.remove() }
        var options = DiskCacheOptions(directory: dir.url)
        options.keyEncoding = .verbatim
        let cache = try DiskCache(options: options)
        try cache.store(Data("small".utf8), forKey: "huge")
        let path = cache.layout.path(for: "huge")
        let size: Int64 = 1 << 42  // 4 TiB of holes
        var header = RecordHeader(updateTimeSec: UInt64(Date().timeIntervalSince1970), payloadSizeBytes: UInt64(size) - 64)
        if !validHeader { header.payloadSizeBytes = 12 }
        try Data(header.encoded()).write(to: URL(fileURLWithPath: path))
        #expect(truncate(path, off_t(size)) == 0)
        do {
            let record = try cache.record(forKey: "huge")
            #expect(record == nil)
        } catch {
            #expect(error.code == .ioFailure)
        }
        // Far above maximumRecordSize (1 GiB) whatever its header says: not a record, even for
        // `contains`, which reads only the header.
        #expect(!cache.contains("huge"))
    }

    /// Links and folders where a record should be: a miss; the link stays (a cache removes no
    /// file it did not write), and its target is never reached.
    @Test func linksAndFoldersWhereRecordsShouldBe() throws {
        let dir = TemporaryDirectory("larder-fuzz-links")
        defer { dir.remove() }
        let outside = TemporaryDirectory("larder-fuzz-outside")
        defer { outside.remove() }
        var options = DiskCacheOptions(directory: dir.url)
        options.keyEncoding = .verbatim
        let cache = try DiskCache(options: options)
        try cache.store(Data("target".utf8), forKey: "target")
        let target = outside.path + "/target"
        try FileManager.default.copyItem(atPath: cache.layout.path(for: "target"), toPath: target)
        for name in ["linked", "dangling", "loop"] {
            try FileManager.default.createDirectory(atPath: cache.layout.folder(for: name), withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(atPath: cache.layout.path(for: "linked"), withDestinationPath: target)
        try FileManager.default.createDirectory(atPath: cache.layout.path(for: "folder"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: cache.layout.path(for: "dangling"), withDestinationPath: "/nonexistent/x")
        try FileManager.default.createSymbolicLink(
            atPath: cache.layout.path(for: "loop"), withDestinationPath: cache.layout.path(for: "loop"))
        for key in ["linked", "folder", "dangling", "loop"] {
            #expect(try cache.record(forKey: key) == nil, "\(key)")
            #expect(!cache.contains(key), "\(key)")
            #expect(try cache.lock(forKeys: [key]).isEmpty, "\(key)")
        }
        #expect(FileManager.default.fileExists(atPath: target), "the link's target outside the cache was touched")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: cache.layout.path(for: "linked"))) == target)
        var isDirectory: ObjCBool = false
        #expect(
            FileManager.default.fileExists(atPath: cache.layout.path(for: "folder"), isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(try cache.collectGarbage().removed.isEmpty)
        #expect(try cache.record(forKey: "target")?.data == Data("target".utf8))
    }
}
