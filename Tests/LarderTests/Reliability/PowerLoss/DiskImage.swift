/// The contents of a simulated file system at one moment: every file and folder by number, and
/// the operations that change it. ``SimulatedDisk`` keeps one image as what a running process
/// sees and records each change as a ``DiskOperation``; ``CrashStates`` replays a trace onto the
/// image of what was on disk before it, keeping, dropping or tearing each change as a power loss
/// may, to make the image a machine would find after rebooting.
struct DiskImage: Sendable, Equatable {
    /// A file or a folder.
    struct Node: Sendable, Equatable {
        enum Kind: Sendable, Equatable {
            case file, directory
        }

        var kind: Kind
        /// A file's bytes.
        var data: [UInt8] = []
        /// A folder's entries: name to node number.
        var entries: [String: Int] = [:]
        /// Permission bits.
        var mode: UInt16
        /// How many folder entries name this node (0 for an orphan: unlinked, or created by an
        /// operation that did not reach the disk).
        var links = 0
        /// When its entries (a folder) or bytes (a file) last changed, on the image's
        /// ``DiskImage/clock``: what `stat` reports as its modification and change times. A
        /// folder's time changes with its entries, as on a journaling file system, where both
        /// are one metadata update: an entry change lost in a power loss takes its time with it.
        var modified = 0
    }

    /// The node number of the root folder, `/`.
    static let rootNode = 1

    /// Every node ever made, linked or not, by number.
    private(set) var nodes: [Int: Node]
    /// The number the next new node gets.
    private(set) var nextNode: Int
    /// The time the next operation gets unless told otherwise: one tick per operation, so that
    /// the operation at index `i` of a trace recorded on this image happens at `clock + i`,
    /// live or replayed.
    private(set) var clock = 0

    /// A file system holding only its root folder.
    static let empty = DiskImage(nodes: [rootNode: Node(kind: .directory, mode: 0o755, links: 1)], nextNode: rootNode + 1)

    subscript(node: Int) -> Node? { nodes[node] }

    /// A new node number.
    mutating func allocateNode() -> Int {
        defer { nextNode += 1 }
        return nextNode
    }

    /// The node `name` names in the folder `parent`.
    func lookup(_ parent: Int, _ name: String) -> Int? { nodes[parent]?.entries[name] }

    /// Applies one operation. With `linking` false, an operation that adds or removes a folder
    /// entry (create, mkdir, rename, unlink) only makes sure its node exists, as when the data
    /// reached the disk and the entry did not.
    mutating func apply(_ operation: DiskOperation, linking: Bool = true, at time: Int? = nil) {
        let now = time ?? clock
        clock = max(clock, now + 1)
        defer {
            if linking { for folder in operation.folders { nodes[folder]?.modified = now } }
            switch operation {
            case .create(_, _, let node, _), .mkdir(_, _, let node, _), .write(let node, _, _), .truncate(let node, _), .chmod(let node, _):
                nodes[node]?.modified = now
            default: break
            }
        }
        switch operation {
        case .create(let parent, let name, let node, let mode):
            ensure(node, kind: .file, mode: mode)
            if linking { link(parent, name, node) }
        case .mkdir(let parent, let name, let node, let mode):
            ensure(node, kind: .directory, mode: mode)
            if linking { link(parent, name, node) }
        case .rename(let fromParent, let fromName, let toParent, let toName, let node):
            guard linking else { return }
            if nodes[fromParent]?.entries[fromName] == node { unlink(fromParent, fromName) }
            link(toParent, toName, node)
        case .unlink(let parent, let name, let node):
            guard linking else { return }
            if nodes[parent]?.entries[name] == node { unlink(parent, name) }
        case .write(let node, let offset, let bytes):
            write(node, at: offset, bytes[...])
        case .truncate(let node, let length):
            ensure(node, kind: .file, mode: 0o600)
            resize(node, to: length)
        case .chmod(let node, let mode):
            nodes[node]?.mode = mode
        case .fsync, .close:
            break
        }
    }

    /// Writes `bytes` at `offset`, filling any gap past the end with zeros.
    mutating func write(_ node: Int, at offset: Int, _ bytes: ArraySlice<UInt8>) {
        ensure(node, kind: .file, mode: 0o600)
        guard !bytes.isEmpty else { return }
        let end = offset + bytes.count
        if nodes[node]!.data.count < end { resize(node, to: end) }
        // Copied as memory: element by element, unspecialized, debug builds crawl.
        nodes[node]!.data.withUnsafeMutableBytes { out in
            bytes.withUnsafeBytes { out.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
    }

    /// Sets a file's length: cut, or extended with zeros.
    mutating func resize(_ node: Int, to length: Int) {
        let count = nodes[node]?.data.count ?? 0
        if length < count {
            nodes[node]!.data.removeSubrange(length...)
        } else if length > count {
            nodes[node]!.data.append(contentsOf: [UInt8](repeating: 0, count: length - count))
        }
    }

    /// Makes node `node` exist (an orphan of `kind` when new).
    private mutating func ensure(_ node: Int, kind: Node.Kind, mode: UInt16) {
        if nodes[node] == nil { nodes[node] = Node(kind: kind, mode: mode) }
        nextNode = max(nextNode, node + 1)
    }

    /// Points `name` in `parent` at `node`, replacing what it named.
    private mutating func link(_ parent: Int, _ name: String, _ node: Int) {
        guard nodes[parent] != nil else { return }
        if let old = nodes[parent]!.entries[name] {
            if old == node { return }
            nodes[old]?.links -= 1
        }
        nodes[parent]!.entries[name] = node
        nodes[node]?.links += 1
    }

    private mutating func unlink(_ parent: Int, _ name: String) {
        guard let old = nodes[parent]?.entries.removeValue(forKey: name) else { return }
        nodes[old]?.links -= 1
    }

    /// Whether two images hold the same tree: the same names, kinds, bytes and modes reachable
    /// from the root (node numbers and orphans aside).
    func sameTree(as other: DiskImage) -> Bool {
        func same(_ a: Int, _ b: Int) -> Bool {
            guard let x = nodes[a], let y = other.nodes[b], x.kind == y.kind, x.data == y.data, x.mode == y.mode,
                x.entries.keys.sorted() == y.entries.keys.sorted()
            else { return false }
            return x.entries.allSatisfy { name, child in same(child, y.entries[name]!) }
        }
        return same(Self.rootNode, Self.rootNode)
    }

    /// Every path reachable from the root, with a file's length (`nil` for a folder), for messages.
    func listing() -> [String: Int?] {
        var result: [String: Int?] = [:]
        func visit(_ node: Int, _ path: String) {
            guard let entry = nodes[node] else { return }
            for (name, child) in entry.entries {
                let childPath = path + "/" + name
                if nodes[child]?.kind == .directory {
                    result[childPath] = .some(nil)
                    visit(child, childPath)
                } else {
                    result[childPath] = nodes[child]?.data.count
                }
            }
        }
        visit(Self.rootNode, "")
        return result
    }

    /// The node at an absolute path, following folders from the root.
    func node(atPath path: String) -> Int? {
        var node = Self.rootNode
        for component in path.split(separator: "/") {
            guard let next = lookup(node, String(component)) else { return nil }
            node = next
        }
        return node
    }

    /// The same image without the entry at `path` (a file), as if it had been removed.
    func removing(_ path: String) -> DiskImage {
        var copy = self
        let components = path.split(separator: "/").map(String.init)
        guard let name = components.last, let parent = node(atPath: components.dropLast().joined(separator: "/")),
            let node = lookup(parent, name)
        else { return copy }
        copy.apply(.unlink(parent: parent, name: name, node: node))
        return copy
    }
}

/// One change to a file system, as ``SimulatedDisk`` records it.
enum DiskOperation: Sendable, Equatable, CustomStringConvertible {
    /// A new file `node` named `name` in the folder `parent` (`open` with `O_CREAT`).
    case create(parent: Int, name: String, node: Int, mode: UInt16)
    /// A new folder.
    case mkdir(parent: Int, name: String, node: Int, mode: UInt16)
    /// Bytes written at an offset (`write` or `pwrite`).
    case write(node: Int, offset: Int, bytes: [UInt8])
    /// `ftruncate` (or `O_TRUNC`).
    case truncate(node: Int, length: Int)
    /// `renameat`, replacing what `toName` named.
    case rename(fromParent: Int, fromName: String, toParent: Int, toName: String, node: Int)
    /// `unlinkat` of a file or an empty folder.
    case unlink(parent: Int, name: String, node: Int)
    /// `fsync` of a file or a folder.
    case fsync(node: Int)
    /// `close`: changes nothing on disk, kept to read traces by.
    case close(node: Int)
    /// `fchmod`.
    case chmod(node: Int, mode: UInt16)

    /// Whether the operation adds or removes a folder entry.
    var changesEntries: Bool {
        switch self {
        case .create, .mkdir, .rename, .unlink: true
        default: false
        }
    }

    /// The folders whose entries it changes.
    var folders: [Int] {
        switch self {
        case .create(let parent, _, _, _), .mkdir(let parent, _, _, _), .unlink(let parent, _, _): [parent]
        case .rename(let from, _, let to, _, _): from == to ? [from] : [from, to]
        default: []
        }
    }

    var description: String {
        switch self {
        case .create(let parent, let name, let node, _): "create \(parent)/\(name) #\(node)"
        case .mkdir(let parent, let name, let node, _): "mkdir \(parent)/\(name) #\(node)"
        case .write(let node, let offset, let bytes): "write #\(node) @\(offset) +\(bytes.count)"
        case .truncate(let node, let length): "truncate #\(node) \(length)"
        case .rename(let fromParent, let fromName, let toParent, let toName, let node):
            "rename #\(node) \(fromParent)/\(fromName) -> \(toParent)/\(toName)"
        case .unlink(let parent, let name, let node): "unlink \(parent)/\(name) #\(node)"
        case .fsync(let node): "fsync #\(node)"
        case .close(let node): "close #\(node)"
        case .chmod(let node, let mode): "chmod #\(node) \(String(mode, radix: 8))"
        }
    }
}
