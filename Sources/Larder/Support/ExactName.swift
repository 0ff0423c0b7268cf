import Foundation

/// A file name or key compared and hashed by its UTF-8 bytes.
///
/// Swift's `String` equality is canonical equivalence: "caf\u{E9}" (composed) equals
/// "cafe\u{301}" (decomposed). On disk they are two names, two files, two records, as they are
/// to SPTPersistentCache and to the file system. A set or dictionary of names on the disk tier
/// uses this type, so that one record is never taken for the other (a kept descriptor lent for
/// the wrong file would return the other record's bytes).
struct ExactName: Hashable, Sendable {
    /// The name.
    let string: String

    init(_ string: String) {
        self.string = string
    }

    static func == (a: ExactName, b: ExactName) -> Bool {
        var a = a.string
        return a.withUTF8 { spells(UnsafeRawBufferPointer($0), b.string) }
    }

    /// Whether `bytes` are the UTF-8 bytes of `string`, byte for byte: one `memcmp` over
    /// contiguous UTF-8 (native strings always are), not a walk through a view's iterator.
    static func spells(_ bytes: UnsafeRawBufferPointer, _ string: String) -> Bool {
        var string = string
        return string.withUTF8 { y in
            bytes.count == y.count && (y.count == 0 || memcmp(bytes.baseAddress!, y.baseAddress!, y.count) == 0)
        }
    }

    func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
