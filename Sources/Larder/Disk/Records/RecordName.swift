/// A record's file name as a read carries it: a hashed name (64 lowercase hex digits) as the 32
/// bytes it spells, any other name as its text.
///
/// A hit the index knows needs the name's bytes for a hash (its key lock's stripe and its kept
/// descriptor's tag), a comparison with a kept descriptor's name, and, when it opens the file, a
/// path; it needs a `String` only where the name is kept as one (a descriptor kept anew; the
/// write-back of access times, which builds it outside the cache's lock) and on its rare paths
/// (a missing or corrupt file, an expired record, a platform without `openat2`). Building the
/// 64-character `String` of a hashed name on every read, then freeing it, cost a seventh of the
/// instructions of a hit on a kept record (`larder-bench disk`, `load-4k-zipf`). So a
/// hashed name is spelled out on the stack where its bytes are needed, and as a `String` only
/// where one is kept.
package struct RecordName: Sendable {
    private enum Storage: Sendable {
        /// The 32 bytes, as four words loaded from memory in order.
        case digest(UInt64, UInt64, UInt64, UInt64)
        case text(String)
    }

    private let storage: Storage

    /// A name given as text.
    package init(_ name: String) {
        storage = .text(name)
    }

    /// A hashed name, by the 32 bytes its digits spell (four words loaded from memory in order).
    package init(digest: (UInt64, UInt64, UInt64, UInt64)) {
        storage = .digest(digest.0, digest.1, digest.2, digest.3)
    }

    /// The name as a `String`: built anew for a hashed name.
    package var string: String {
        switch storage {
        case .text(let name):
            return name
        case .digest:
            return withUTF8 { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// The name's ``NameHash``, the same as the hash of ``string``.
    package var hash: UInt64 {
        switch storage {
        case .text(let name): return NameHash.of(name)
        case .digest(let a, let b, let c, let d): return NameHash.ofHexDigits(of: (a, b, c, d))
        }
    }

    /// Calls `body` with the name's UTF-8 bytes (a hashed name's digits spelled out on the stack).
    package func withUTF8<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        switch storage {
        case .text(var name):
            return try name.withUTF8 { utf8 in Result { () throws(E) in try body(UnsafeRawBufferPointer(utf8)) } }.get()
        case .digest(let a, let b, let c, let d):
            return try withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { text in
                func spell(_ word: UInt64, at offset: Int) {
                    let digits = PackedName.hexDigits(word)
                    text.storeBytes(of: digits.0, toByteOffset: offset, as: UInt64.self)
                    text.storeBytes(of: digits.1, toByteOffset: offset + 8, as: UInt64.self)
                }
                spell(a, at: 0)
                spell(b, at: 16)
                spell(c, at: 32)
                spell(d, at: 48)
                return Result { () throws(E) in try body(UnsafeRawBufferPointer(text)) }
            }.get()
        }
    }

    /// Whether this name is `other`, byte for byte (``ExactName``'s equality).
    package func spells(_ other: String) -> Bool {
        switch storage {
        case .text(let name):
            return ExactName(name) == ExactName(other)
        case .digest(let a, let b, let c, let d):
            var other = other
            return withUnsafeBytes(of: (a, b, c, d)) { digest in
                other.withUTF8 { PackedName.spells(digest, hex: UnsafeRawBufferPointer($0)) }
            }
        }
    }
}
