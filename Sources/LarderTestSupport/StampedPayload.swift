/// Self-verifying payloads: `"key\tversion\tlength\n"` then `length` bytes derived from key and
/// version alone, so a checker can tell from the bytes which key and version they claim and
/// whether every byte is right. Written by `larder-stress` in one process, checked by the tests
/// in another.
public enum StampedPayload {
    /// The payload for version `version` of `key`, with `length` derived bytes after its line.
    public static func make(key: String, version: UInt64, length: Int) -> [UInt8] {
        var out = Array("\(key)\t\(version)\t\(length)\n".utf8)
        out.reserveCapacity(out.count + length)
        var random = SplitMix64(seed: fnv1a(key) ^ version &* 0x9E37_79B9_7F4A_7C15)
        var word: UInt64 = 0
        for i in 0 ..< length {
            if i % 8 == 0 { word = random.next() }
            out.append(UInt8(truncatingIfNeeded: word >> (UInt64(i % 8) * 8)))
        }
        return out
    }

    /// The version the bytes carry, when they are exactly a payload for `key`; `nil` otherwise.
    public static func version(of bytes: some Collection<UInt8>, key: String) -> UInt64? {
        let bytes = Array(bytes)
        guard let newline = bytes.firstIndex(of: 0x0A) else { return nil }
        let fields = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0] == key, let version = UInt64(fields[1]), let length = Int(fields[2]),
            length >= 0, length == bytes.count - newline - 1
        else { return nil }
        return make(key: key, version: version, length: length) == bytes ? version : nil
    }

    /// FNV-1a of a string's UTF-8 bytes: a stable seed per key.
    public static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }
}
