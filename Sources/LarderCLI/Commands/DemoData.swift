import Foundation
import Larder

/// Real-looking data for `larder demo`: text, JSON, and images.
enum DemoData {
    /// A paragraph of text.
    static let greeting = Data(
        """
        Larder keeps what you fetched so you need not fetch it again: a memory tier in front of a
        disk tier whose files SPTPersistentCache can read, with TTLs, locks and collection.

        """.utf8)

    /// A JSON document like an API response.
    static func json(items: Int) -> Data {
        let tracks = (1 ... items).map { i in
            #"{"id": \#(i), "title": "Track \#(i)", "durationMs": \#(180_000 + i * 1_337), "explicit": \#(i % 3 == 0)}"#
        }
        return Data(("{\"playlist\": \"demo\", \"tracks\": [\n  " + tracks.joined(separator: ",\n  ") + "\n]}\n").utf8)
    }

    /// A log-like text blob of about `bytes` bytes.
    static func log(day: Int, bytes: Int) -> Data {
        var text = ""
        var line = 0
        while text.utf8.count < bytes {
            text +=
                "2024-01-\(String(day + 1).leftPadded(to: 2)) 12:\(String(line % 60).leftPadded(to: 2)):00 INFO request \(line) served in \(line % 97) ms\n"
            line += 1
        }
        return Data(text.utf8)
    }

    /// The PNG images of the shared fixtures (SPTPersistentCache's test images), when this build
    /// can find them: `$LARDER_FIXTURES/spt-images`, or a `shared/fixtures` folder above the
    /// source checkout. Otherwise, generated PNGs.
    static func images(environment: [String: String], count: Int) -> [(name: String, data: Data)] {
        var folders: [URL] = []
        if let root = environment["LARDER_FIXTURES"] { folders.append(URL(fileURLWithPath: root).appendingPathComponent("spt-images")) }
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0 ..< 6 {
            directory = directory.deletingLastPathComponent()
            folders.append(directory.appendingPathComponent("shared/fixtures/spt-images"))
        }
        for folder in folders {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path), !names.isEmpty else { continue }
            let images = names.sorted().prefix(count).compactMap { name -> (String, Data)? in
                guard let data = try? Data(contentsOf: folder.appendingPathComponent(name)), PayloadKind.of(data) == .png else {
                    return nil
                }
                return ("images/" + name.replacingOccurrences(of: ".dat", with: ".png"), data)
            }
            if !images.isEmpty { return images }
        }
        return (0 ..< count).map { ("images/gradient-\($0).png", gradientPNG(width: 64, height: 64, seed: $0)) }
    }

    /// A small RGB gradient PNG, compressed with stored (uncompressed) deflate blocks so it needs no zlib.
    static func gradientPNG(width: Int, height: Int, seed: Int) -> Data {
        var raw: [UInt8] = []
        raw.reserveCapacity((width * 3 + 1) * height)
        for y in 0 ..< height {
            raw.append(0)  // filter: none
            for x in 0 ..< width {
                raw.append(UInt8(truncatingIfNeeded: x * 4 + seed * 60))
                raw.append(UInt8(truncatingIfNeeded: y * 4))
                raw.append(UInt8(truncatingIfNeeded: 255 - x * 2 - seed * 40))
            }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let chunk = min(65535, raw.count - offset)
            let isLast = offset + chunk == raw.count
            zlib.append(isLast ? 1 : 0)
            zlib += [UInt8(chunk & 0xFF), UInt8(chunk >> 8), UInt8(~chunk & 0xFF), UInt8((~chunk >> 8) & 0xFF)]
            zlib += raw[offset ..< offset + chunk]
            offset += chunk
        } while offset < raw.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in raw {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        zlib += bigEndian(b << 16 | a)

        func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + body
            return bigEndian(UInt32(body.count)) + typed + bigEndian(CRC32.checksum(of: typed))
        }
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, 2, 0, 0, 0])
        png += chunk("IDAT", zlib)
        png += chunk("IEND", [])
        return Data(png)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}
