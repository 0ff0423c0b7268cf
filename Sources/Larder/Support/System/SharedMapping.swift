#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CLarderChecksum

/// Memory mapped from a file that several processes map at once (`mmap`, `MAP_SHARED`), and
/// atomics on a 64-bit word in it, which Swift's `Atomic` cannot reach: what the change counter
/// of a folder's change log (``FolderChangeCounter``) needs of the C library, kept here with the
/// other system calls the tiers make.
enum SharedMapping {
    /// Maps the first `size` bytes of the open file `fd`, readable and writable, shared with
    /// every process that maps the file; `nil` when `mmap` fails.
    static func map(_ fd: Int32, size: Int) -> UnsafeMutableRawPointer? {
        // `MAP_FAILED` is `(void *)-1`.
        guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), Int(bitPattern: mapped) != -1 else { return nil }
        return mapped
    }

    /// Unmaps `size` bytes at `base`, which ``map(_:size:)`` returned.
    static func unmap(_ base: UnsafeMutableRawPointer, size: Int) {
        _ = munmap(base, size)
    }

    /// The word's value, with acquire ordering: what its writer wrote before its last release
    /// is visible after this load. `word` is 8-byte aligned.
    @inline(__always)
    static func loadAcquiring(_ word: UnsafePointer<UInt64>) -> UInt64 {
        larder_atomic_load_acquire_u64(word)
    }

    /// Adds one to the word with release ordering, unless it holds `UInt64.max`, which it then
    /// keeps; returns the value before. `word` is 8-byte aligned.
    static func incrementUnlessMaximum(_ word: UnsafeMutablePointer<UInt64>) -> UInt64 {
        larder_atomic_increment_unless_max_u64(word)
    }
}
