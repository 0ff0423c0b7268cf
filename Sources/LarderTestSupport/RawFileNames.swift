#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Files whose names are given as bytes, which need not be UTF-8 (`ab\xff`), made, listed and
/// read with the C library alone: Foundation's paths are strings, which cannot hold such a name.
public enum RawFileNames {
    /// `folder`, a slash and `name`, NUL-terminated, for the C calls.
    private static func path(_ folder: String, _ name: [UInt8]) -> [CChar] {
        (Array(folder.utf8) + [UInt8(ascii: "/")] + name + [0]).map { CChar(bitPattern: $0) }
    }

    /// Creates (or replaces) the file `name` in `folder` holding `contents`, mode 0600.
    /// - Returns: Whether every byte was written.
    @discardableResult
    public static func createFile(in folder: String, named name: [UInt8], contents: [UInt8]) -> Bool {
        let fd = path(folder, name).withUnsafeBufferPointer { open($0.baseAddress!, O_WRONLY | O_CREAT | O_TRUNC, 0o600) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return contents.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == contents.count
    }

    /// The contents of the file `name` in `folder`, or `nil` when it cannot be opened.
    public static func contents(in folder: String, named name: [UInt8]) -> [UInt8]? {
        let fd = path(folder, name).withUnsafeBufferPointer { open($0.baseAddress!, O_RDONLY) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        return bytes
    }

    /// The names in `folder` (without `.` and `..`), as bytes, sorted; empty when it cannot be listed.
    public static func names(in folder: String) -> [[UInt8]] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { name in
                    Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
                }
            }
            if name != [UInt8(ascii: ".")] && name != [UInt8(ascii: "."), UInt8(ascii: ".")] { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }
}
