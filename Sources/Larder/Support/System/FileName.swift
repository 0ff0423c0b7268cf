/// A file name exactly as the file system holds it: bytes, which need not be UTF-8.
///
/// Linux (and other Unix file systems) allow any bytes but `/` and NUL in a name, so a cache
/// folder can hold `ab\xff` and `ab\xfe`; decoded as UTF-8 with repairs, both would read as
/// `ab\u{FFFD}`, the name of a third file. A listing therefore yields this type, and a name is
/// opened, measured or removed by its bytes. A name that is not UTF-8 is never one of Larder's
/// or SPTPersistentCache's (their names come from strings, keys or hashes): such a file is
/// foreign to every layout. Equality, hashing and order are those of the bytes.
package struct FileName: Hashable, Comparable, Sendable {
    /// The name, when its bytes are valid UTF-8; `nil` otherwise.
    package let string: String?
    /// The bytes of a name that is not UTF-8 (empty when ``string`` holds the name): a listing
    /// of valid names, every name Larder writes, allocates nothing more than the strings.
    private let undecodable: [UInt8]

    /// A name that is a string (and so valid UTF-8).
    package init(_ string: String) {
        self.string = string
        undecodable = []
    }

    /// The name with these bytes.
    package init(bytes: some Collection<UInt8>) {
        let decoded = String(validating: bytes, as: UTF8.self)
        string = decoded
        undecodable = decoded == nil ? Array(bytes) : []
    }

    /// The name's bytes.
    package var bytes: [UInt8] { string.map { Array($0.utf8) } ?? undecodable }

    /// Runs `body` with the name as a NUL-terminated C string of its exact bytes.
    package func withCString<T, E: Error>(_ body: (UnsafePointer<CChar>) throws(E) -> T) throws(E) -> T {
        if let string {
            return try string.withCString { pointer in Result { () throws(E) in try body(pointer) } }.get()
        }
        var terminated = undecodable.map { CChar(bitPattern: $0) }
        terminated.append(0)
        return try terminated.withUnsafeBufferPointer { buffer in Result { () throws(E) in try body(buffer.baseAddress!) } }.get()
    }

    package static func == (a: FileName, b: FileName) -> Bool {
        switch (a.string, b.string) {
        case (let x?, let y?): ExactName(x) == ExactName(y)
        case (nil, nil): a.undecodable == b.undecodable
        default: false
        }
    }

    package func hash(into hasher: inout Hasher) {
        if let string {
            ExactName(string).hash(into: &hasher)
        } else {
            undecodable.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// Byte order (for UTF-8 names, the order of their scalars).
    package static func < (a: FileName, b: FileName) -> Bool {
        a.bytes.lexicographicallyPrecedes(b.bytes)
    }
}

/// One entry of a folder's listing (``FileIO/listDirectory(_:)``).
package struct DirectoryEntry: Sendable {
    /// The entry's name, exactly.
    package var fileName: FileName
    /// Whether it is a folder; `nil` when the file system does not say.
    package var isDirectory: Bool?

    /// An entry.
    package init(fileName: FileName, isDirectory: Bool?) {
        self.fileName = fileName
        self.isDirectory = isDirectory
    }

    /// The name as a string, when it is UTF-8; `nil` for a name that is not, which is never a
    /// record, a shard folder or one of Larder's own files.
    package var name: String? { fileName.string }
}
