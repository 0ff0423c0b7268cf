import LarderTestSupport

// A bench-only reference GDSF (Cherkasova 1998, as libCacheSim has it): each cached object has a
// priority of L + frequency / size; the lowest goes first and L becomes its priority, so
// objects not used for a while age behind newer ones. It favours small objects: few object
// misses, but more bytes missed. Not part of the package; counts misses only.

/// Replays `trace` through a GDSF cache of `capacity` bytes (get; on a miss insert, evicting
/// until the object fits; an object larger than the capacity is never inserted).
func gdsfMisses(_ trace: [SizedTraces.Request], capacity: Int) -> SizedTraces.Misses {
    struct Item: Comparable {
        var priority: Double
        var version: Int
        var key: UInt32
        static func < (a: Item, b: Item) -> Bool { (a.priority, a.version) < (b.priority, b.version) }
    }
    var heap = MinHeap<Item>()
    var cached: [UInt32: (frequency: Int, size: Int, version: Int)] = [:]
    var inflation = 0.0
    var bytes = 0
    var version = 0
    var misses = SizedTraces.Misses()
    for request in trace {
        version += 1
        if var entry = cached[request.key] {
            entry.frequency += 1
            entry.version = version
            cached[request.key] = entry
            heap.push(
                Item(priority: inflation + Double(entry.frequency) * 1e6 / Double(max(entry.size, 1)), version: version, key: request.key))
            continue
        }
        misses.add(size: request.size)
        guard request.size <= capacity else { continue }
        while bytes + request.size > capacity, let item = heap.pop() {
            // Skip the stale heap items of objects used since.
            guard let entry = cached[item.key], entry.version == item.version else { continue }
            inflation = item.priority
            bytes -= entry.size
            cached[item.key] = nil
        }
        cached[request.key] = (1, request.size, version)
        bytes += request.size
        heap.push(Item(priority: inflation + 1e6 / Double(max(request.size, 1)), version: version, key: request.key))
    }
    return misses
}

/// A binary min-heap.
struct MinHeap<Element: Comparable> {
    private var items: [Element] = []

    mutating func push(_ item: Element) {
        items.append(item)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let (left, right) = (2 * parent + 1, 2 * parent + 2)
            var least = parent
            if left < items.count && items[left] < items[least] { least = left }
            if right < items.count && items[right] < items[least] { least = right }
            guard least != parent else { break }
            items.swapAt(parent, least)
            parent = least
        }
        return top
    }
}
