#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A moment on a file system's clock: seconds and nanoseconds since the epoch, as `stat` gives them.
package struct FileTime: Sendable, Hashable, Comparable {
    package var seconds: Int64
    package var nanoseconds: UInt32

    package init(seconds: Int64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    init(_ time: timespec) {
        self.init(seconds: Int64(time.tv_sec), nanoseconds: UInt32(clamping: time.tv_nsec))
    }

    package static func < (a: FileTime, b: FileTime) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }
}
