import Foundation
import Synchronization

/// The stores and removals the remote tier did not take, kept until they are replayed: the keys
/// (or prefixes, or everything) whose value in the shared store may be older than this
/// instance's, in a small file of the cache folder, `.larder-outbox`.
///
/// A write-through store or removal that the store did not confirm (a failure, a timeout, an open
/// breaker, or its invalidation not published) adds its key here before the call returns. Until
/// the key is replayed (`UNLINK` and an invalidation published), this instance's reads of it skip
/// the store; the replay runs in the background once the store answers, and at the next open
/// when the instance is gone first. A replayed removal is safe whatever happened meanwhile: the
/// worst it does is turn a newer value into a miss.
///
/// Bounded: past ``capacity`` entries or ``keyBytesLimit`` bytes of keys, the entries collapse
/// into one that covers every key of the namespace (its replay removes the namespace's values and
/// publishes an invalidation of everything). The file is written whole, owner-only, under a
/// temporary name then renamed; a file that cannot be read or fails its checksum is taken as
/// covering everything, so a damaged outbox never loses a promise.
final class RemoteOutbox: Sendable {
    /// The most entries kept before they collapse into one that covers everything.
    static let capacity = 1024
    /// The most bytes of keys and prefixes kept before the entries collapse.
    static let keyBytesLimit = 128 << 10
    /// The largest file read: the limits above and the framing, with room to spare.
    static let fileSizeLimit = 1 << 20
    /// The file's first bytes.
    static let magic = Array("LARDEROUTBOX1\n".utf8)

    /// What an entry covers.
    enum Scope: Hashable, Sendable {
        case key(String)
        case prefix(String)
    }

    /// The entries, each with the sequence number of its last addition, so that a replay removes
    /// only the entries it replayed and not one added again while it ran.
    struct Entries: Sendable, Equatable {
        var scopes: [Scope: UInt64] = [:]
        /// Whether one entry covers every key, and its sequence number.
        var everything: UInt64?
        var keyBytes = 0

        var isEmpty: Bool { scopes.isEmpty && everything == nil }
    }

    private struct State {
        var entries = Entries()
        var sequence: UInt64 = 0
    }

    /// The namespace the entries belong to (recorded in the file).
    let namespace: String
    /// The file, or `nil` for an outbox in memory only.
    let path: String?
    private let io: FileIO?
    /// Whether the file is written (not in a read-only folder, whose outbox is read at open and
    /// then kept in memory).
    private let writesFile: Bool
    private let state = LarderMutex(State())
    /// Whether any entry is kept: the reads' check costs one load while the outbox is empty.
    private let holdsEntries = Atomic<Bool>(false)
    /// Held while the file is written, so that the last write holds the latest entries.
    private let fileLock = LarderMutex(())

    /// What reading the file at open found wrong, if anything (reported by the tier).
    let loadProblem: CacheError?

    /// The outbox of `namespace` in the file at `path` (`nil`: in memory only), with the entries
    /// the file holds; the file is written only when `writesFile`.
    init(namespace: String, path: String?, io: FileIO?, writesFile: Bool = true) {
        self.namespace = namespace
        self.path = path
        self.io = io
        self.writesFile = writesFile
        var entries = Entries()
        var problem: CacheError?
        var droppedOtherNamespace = false
        if let path, let io {
            do throws(Errno) {
                let bytes = try io.readFile(path, limit: Self.fileSizeLimit)
                switch Self.decode(bytes, namespace: namespace) {
                case .entries(let decoded): entries = decoded
                case .otherNamespace(let other):
                    droppedOtherNamespace = true
                    problem = CacheError(
                        .remoteFailure, "the remote outbox was written for the namespace \"\(other)\"; its entries were dropped",
                        path: path)
                case .damaged(let reason):
                    entries.everything = 0
                    problem = CacheError(
                        .remoteFailure, "the remote outbox is damaged (\(reason)); every key is replayed", path: path)
                }
            } catch  where error == .noSuchFileOrDirectory {
                // No outbox: nothing is owed.
            } catch {
                entries.everything = 0
                problem = CacheError(
                    .remoteFailure, "the remote outbox cannot be read; every key is replayed", path: path, errno: error.rawValue)
            }
        }
        loadProblem = problem
        state.withLock { $0.entries = entries }
        holdsEntries.store(!entries.isEmpty, ordering: .releasing)
        // Another namespace's file is replaced (removed: this namespace owes nothing yet), so
        // that it is reported once, not at every open.
        if droppedOtherNamespace { persist() }
    }

    /// Whether no entry is kept.
    var isEmpty: Bool { !holdsEntries.load(ordering: .acquiring) }

    /// A copy of the entries.
    var entries: Entries { state.withLock { $0.entries } }

    /// Whether an entry covers `key`: its value in the store may be older than this instance's.
    func covers(_ key: String) -> Bool {
        guard holdsEntries.load(ordering: .acquiring) else { return false }
        return state.withLock { s in
            if s.entries.everything != nil || s.entries.scopes[.key(key)] != nil { return true }
            return s.entries.scopes.keys.contains { if case .prefix(let prefix) = $0 { key.hasPrefix(prefix) } else { false } }
        }
    }

    /// Adds an entry (`nil`: every key) and writes the file before returning, unless the entry was
    /// kept already.
    func add(_ scope: Scope?) {
        let changed = state.withLock { s -> Bool in
            s.sequence += 1
            guard let scope else {
                let changed = s.entries.everything == nil || !s.entries.scopes.isEmpty
                s.entries = Entries(scopes: [:], everything: s.sequence, keyBytes: 0)
                return changed
            }
            // Covered already; the entry covering everything counts as added again, so that a
            // replay of it running now does not settle this removal too.
            if s.entries.everything != nil {
                s.entries.everything = s.sequence
                return false
            }
            let isNew = s.entries.scopes.updateValue(s.sequence, forKey: scope) == nil
            guard isNew else { return false }
            s.entries.keyBytes += Self.length(of: scope)
            if s.entries.scopes.count > Self.capacity || s.entries.keyBytes > Self.keyBytesLimit {
                s.entries = Entries(scopes: [:], everything: s.sequence, keyBytes: 0)
            }
            return true
        }
        holdsEntries.store(true, ordering: .releasing)
        if changed { persist() }
    }

    /// Removes the entries of `replayed` that were not added again since (their sequence number
    /// is the same), and writes the file when any went.
    func settle(_ replayed: Entries) {
        let changed = state.withLock { s -> Bool in
            var changed = false
            if let done = replayed.everything, s.entries.everything == done {
                s.entries.everything = nil
                changed = true
            }
            for (scope, sequence) in replayed.scopes where s.entries.scopes[scope] == sequence {
                s.entries.scopes[scope] = nil
                s.entries.keyBytes -= Self.length(of: scope)
                changed = true
            }
            holdsEntries.store(!s.entries.isEmpty, ordering: .releasing)
            return changed
        }
        if changed { persist() }
    }

    /// Forgets `key`'s entry, if any, after a store or removal of it reached the store and its
    /// invalidation went out: the store holds this instance's value now. Writes the file only
    /// when an entry went (the common case, an empty outbox, costs one load).
    func confirm(_ key: String) {
        guard holdsEntries.load(ordering: .acquiring) else { return }
        let changed = state.withLock { s -> Bool in
            guard s.entries.everything == nil, s.entries.scopes.removeValue(forKey: .key(key)) != nil else { return false }
            s.entries.keyBytes -= key.utf8.count
            holdsEntries.store(!s.entries.isEmpty, ordering: .releasing)
            return true
        }
        if changed { persist() }
    }

    private static func length(of scope: Scope) -> Int {
        switch scope {
        case .key(let key): key.utf8.count
        case .prefix(let prefix): prefix.utf8.count
        }
    }

    /// Writes the current entries (or removes the file when there are none). A failure to write
    /// leaves the entries in memory: they are still replayed, and the reads still skip them.
    private func persist() {
        guard writesFile, let path, let io else { return }
        fileLock.withLock { _ in
            let entries = state.withLock { $0.entries }
            if entries.isEmpty {
                _ = try? io.unlink(path)
            } else {
                _ = try? io.writeFileAtomically(path, Self.encode(entries, namespace: namespace), mode: 0o600)
            }
        }
    }

    // MARK: - File format

    /// The file: the magic, the namespace, whether everything is covered, the entries (a letter,
    /// `k` or `p`, a length and the UTF-8 bytes), then the CRC-32 of all that; integers are
    /// 32-bit little-endian.
    static func encode(_ entries: Entries, namespace: String) -> [UInt8] {
        var bytes = magic
        func put(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { bytes.append(contentsOf: $0) } }
        func put(_ string: String) {
            put(string.utf8.count)
            bytes.append(contentsOf: string.utf8)
        }
        put(namespace)
        bytes.append(entries.everything == nil ? 0 : 1)
        // Sorted, so that the same entries always make the same file.
        let scopes = entries.scopes.keys.map { scope -> (UInt8, String) in
            switch scope {
            case .key(let key): (UInt8(ascii: "k"), key)
            case .prefix(let prefix): (UInt8(ascii: "p"), prefix)
            }
        }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
        put(scopes.count)
        for (letter, text) in scopes {
            bytes.append(letter)
            put(text)
        }
        put(Int(CRC32.checksum(of: bytes)))
        return bytes
    }

    enum Decoded: Equatable {
        case entries(Entries)
        case otherNamespace(String)
        case damaged(String)
    }

    /// Reads a file made by ``encode(_:namespace:)``. Every length is checked against the bytes
    /// left before it is used.
    static func decode(_ bytes: [UInt8], namespace: String) -> Decoded {
        guard bytes.count >= magic.count + 4, bytes.starts(with: magic) else { return .damaged("not an outbox file") }
        let body = bytes[..<(bytes.count - 4)]
        let stored = bytes.suffix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard CRC32.checksum(of: body) == stored else { return .damaged("checksum mismatch") }
        var offset = magic.count
        func integer() -> Int? {
            guard body.count - offset >= 4 else { return nil }
            let value = body[offset ..< offset + 4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            offset += 4
            return Int(value)
        }
        func string() -> String? {
            guard let length = integer(), body.count - offset >= length else { return nil }
            defer { offset += length }
            return String(validating: body[offset ..< offset + length], as: UTF8.self)
        }
        guard let recorded = string() else { return .damaged("truncated namespace") }
        guard recorded == namespace else { return .otherNamespace(recorded) }
        guard offset < body.count else { return .damaged("truncated") }
        var entries = Entries()
        switch body[offset] {
        case 0: break
        case 1: entries.everything = 0
        default: return .damaged("unknown flag")
        }
        offset += 1
        guard let count = integer(), count <= capacity else { return .damaged("too many entries") }
        for _ in 0 ..< count {
            guard offset < body.count else { return .damaged("truncated entry") }
            let letter = body[offset]
            offset += 1
            guard let text = string() else { return .damaged("truncated entry") }
            switch letter {
            case UInt8(ascii: "k"): entries.scopes[.key(text)] = 0
            case UInt8(ascii: "p"): entries.scopes[.prefix(text)] = 0
            default: return .damaged("unknown entry kind")
            }
            entries.keyBytes += text.utf8.count
        }
        guard offset == body.count else { return .damaged("trailing bytes") }
        if entries.everything != nil { entries.scopes = [:] }
        return .entries(entries)
    }
}
