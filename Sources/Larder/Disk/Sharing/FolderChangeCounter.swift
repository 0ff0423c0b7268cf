import Synchronization

/// The change counter of a folder's change log, in shared memory, after SQLite's WAL-index
/// (`-shm`) file: what lets a writer sharing its folder see that nothing changed with one atomic
/// load instead of a read of the log's header.
///
/// The file `.larder-changes-shm`, beside the log, is ``size`` bytes (little-endian on the
/// platforms Larder builds for, the processor's order): the magic `LRDSHM01`, then at byte 8 a
/// 64-bit counter, then zeros. It is never truncated; every writer sharing the folder maps it
/// `MAP_SHARED`. Every change to the log's header (an append, a new generation, a log cut back
/// without the lock) adds one to the counter, with release ordering, after the header is written
/// (``FolderChangeLog``). A reader takes the counter (acquire) before it reads the header; while
/// the counter still has that value, the header has not changed since, and the read is skipped.
/// A counter of all ones is retired: it stays so, and every writer reads the header before every
/// look. A writer that cannot map a file that is Larder's and others may map (it belongs to
/// another user, and this writer does not share the cache with the group; `mmap` failed) retires
/// it, with one `pwrite`, after each change it makes, so that no writer misses that change.
///
/// The folder is untrusted: the file is opened as the log is (a regular file with one link, the
/// user's unless the cache is shared with a group, no link followed); it is grown to ``size``
/// only when what it holds is the beginning of what Larder writes there, and mapped only when
/// it then holds exactly that layout. Anything else leaves the counter unmapped, and every look
/// reads the log's header (correct, one `pread` slower). A mapped file truncated later by its
/// owner makes a load or an addition raise `SIGBUS`, as a truncated SQLite `-shm` file does;
/// Larder never truncates it. A counter file removed while writers have it mapped is not seen
/// by a writer that opens the folder afterwards: the writers open before it stop seeing that
/// one's changes until they open the folder again, so the file must be left alone as the log is.
final class FolderChangeCounter: Sendable {
    /// The file's name, beside the change log.
    static let fileName = ".larder-changes-shm"
    /// The file's size in bytes: one page of the smallest size mapped.
    static let size = 4096
    /// The magic that begins the file.
    static let magic: [UInt8] = Array("LRDSHM01".utf8)
    /// Where the counter is in the file.
    static let counterOffset = 8

    /// The address of the counter that changes are counted in (``bump()``), 0 for none.
    private let address = Atomic<Int>(0)
    /// The address of the counter that looks read (``value``): the first mapping's, 0 for none,
    /// and 0 for good once another is made. A value a reader took from one file is then never
    /// compared with another file's, whose counter may have reached the same number.
    private let readAddress = Atomic<Int>(0)
    /// The mappings kept: the first, which a look may still read through (``readAddress``), and
    /// the one changes are counted in (``address``); one between them is unmapped at the next
    /// attach, which no ``bump()`` can race, since it loads ``address`` and adds to it holding
    /// this lock. The rest go with the counter. Also whether
    /// ``attach(path:io:sharedWithGroup:growing:)`` ran, and the file it last attached, which a
    /// change made without a mapping retires.
    private let mappings = LarderMutex<(bases: [Int], attached: Bool, file: (path: String, io: FileIO)?)>(([], false, nil))

    /// A counter that is not mapped yet.
    init() {}

    deinit {
        for base in mappings.withLock({ $0.bases }) {
            if let mapped = UnsafeMutableRawPointer(bitPattern: base) { SharedMapping.unmap(mapped, size: Self.size) }
        }
    }

    /// The counter's value (acquire), or `nil` when looks must read the header: the file could
    /// not be mapped, or was mapped again since the first time.
    var value: UInt64? {
        guard let word = UnsafePointer<UInt64>(bitPattern: readAddress.load(ordering: .acquiring)) else { return nil }
        return SharedMapping.loadAcquiring(word)
    }

    /// How many mappings of the counter file are kept (a probe for tests and diagnostics).
    var mappingCount: Int { mappings.withLock { $0.bases.count } }

    /// Whether ``attach(path:io:sharedWithGroup:growing:)`` ran since the counter was made or
    /// ``detach()`` called.
    var isAttached: Bool { mappings.withLock { $0.attached } }

    /// The counter's value when it is retired: every look reads the header.
    static let retired = UInt64.max

    /// Adds one to the counter (release), after the log's header changed; returns the value
    /// before, or `nil` when it is not mapped or retired. Without a mapping, retires the file
    /// when it is Larder's and of the size others map (see the type's description).
    @discardableResult
    func bump() -> UInt64? {
        // Under the lock: an attach meanwhile may unmap the mapping `address` named.
        let counted: UInt64?? = mappings.withLock { _ in
            guard let word = UnsafeMutablePointer<UInt64>(bitPattern: address.load(ordering: .acquiring)) else { return .none }
            let previous = SharedMapping.incrementUnlessMaximum(word)
            return .some(previous == Self.retired ? nil : previous)
        }
        if let counted { return counted }
        if let file = mappings.withLock({ $0.attached ? $0.file : nil }) { Self.retire(path: file.path, io: file.io) }
        return nil
    }

    /// Writes the retired value into the counter of the file at `path`, when it is a regular
    /// file with one link, of Larder's size and magic (whoever owns it: a file another user's
    /// writers map).
    private static func retire(path: String, io: FileIO) {
        guard let fd = try? io.openForUpdate(path, creating: false) else { return }
        defer { io.close(fd) }
        guard let info = try? io.info(fd), info.kind == .regular, info.linkCount == 1, info.size == size else { return }
        var present = [UInt8](repeating: 0, count: magic.count)
        let n = (try? present.withUnsafeMutableBytes { b in Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) } }.get()) ?? 0
        guard n == magic.count, present == magic else { return }
        let value = withUnsafeBytes(of: retired) { Array($0) }
        _ = try? value.withUnsafeBytes { b in Result { () throws(Errno) in try io.pwrite(fd, b, at: counterOffset) } }.get()
    }

    /// Maps the counter file at `path`, creating it and, when `growing`, growing it, in place of
    /// the mapping in use; leaves none when the file is not one to trust (see the type's
    /// description). Called holding the change lock when `growing`, so that no other writer
    /// grows the file or adds to its counter meanwhile.
    func attach(path: String, io: FileIO, sharedWithGroup: Bool, growing: Bool) {
        let base = Self.map(path: path, io: io, sharedWithGroup: sharedWithGroup, growing: growing)
        let counter = base.map { $0 + Self.counterOffset } ?? 0
        mappings.withLock { m in
            defer {
                m.attached = true
                m.file = (path, io)
            }
            if let base { m.bases.append(base) }
            let first = m.bases.count == (base == nil ? 0 : 1) && !m.attached
            if !first { readAddress.store(0, ordering: .releasing) }
            address.store(counter, ordering: .releasing)
            if first { readAddress.store(counter, ordering: .releasing) }
            // Neither the first nor this one: only `address` named it, and no bump holds it now.
            while m.bases.count > (base == nil ? 1 : 2) {
                let replaced = m.bases.remove(at: 1)
                if let mapped = UnsafeMutableRawPointer(bitPattern: replaced) { SharedMapping.unmap(mapped, size: Self.size) }
            }
        }
    }

    /// Stops counting changes, and reading the counter, until the next attach (a log opened
    /// again, whose counter file is mapped at the next change lock).
    func detach() {
        readAddress.store(0, ordering: .releasing)
        address.store(0, ordering: .releasing)
        mappings.withLock { $0.attached = false }
    }

    /// The file's bytes as Larder writes them, before any change is counted.
    private static let template: [UInt8] = magic + [UInt8](repeating: 0, count: size - magic.count)

    /// The address of the file's mapping, or `nil` when it cannot be trusted or mapped.
    private static func map(path: String, io: FileIO, sharedWithGroup: Bool, growing: Bool) -> Int? {
        guard let fd = try? io.openForUpdate(path, creating: true) else { return nil }
        defer { io.close(fd) }
        guard let info = try? io.info(fd), info.problemAsFolderFile(sharedWithGroup: sharedWithGroup) == nil,
            info.size <= size
        else { return nil }
        if info.size < size {
            guard growing else { return nil }
            // Grown only from a beginning of Larder's own layout: a file Larder did not write
            // is never changed. A file shorter than the layout has never been mapped, so its
            // counter is still zero.
            var present = [UInt8](repeating: 0, count: info.size)
            if info.size > 0 {
                let n =
                    (try? present.withUnsafeMutableBytes { b in Result { () throws(Errno) in try io.pread(fd, into: b, at: 0) } }.get())
                    ?? -1
                guard n == info.size, present.elementsEqual(template[..<info.size]) else { return nil }
            }
            // Written, not truncated to size, so that the blocks exist: a write through the
            // mapping to a hole on a full disk would raise SIGBUS.
            let written: Void? = try? template[info.size...].withUnsafeBytes { b in
                Result { () throws(Errno) in try io.pwrite(fd, b, at: info.size) }
            }.get()
            guard written != nil else { return nil }
        }
        guard let grown = try? io.info(fd), grown.size == size else { return nil }
        guard let mapped = SharedMapping.map(fd, size: size) else { return nil }
        let base = Int(bitPattern: mapped)
        guard UnsafeRawBufferPointer(start: mapped, count: magic.count).elementsEqual(magic) else {
            SharedMapping.unmap(mapped, size: size)
            return nil
        }
        return base
    }
}
