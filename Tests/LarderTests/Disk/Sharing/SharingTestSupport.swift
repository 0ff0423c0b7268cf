import Foundation
@testable import Larder

/// Two caches on one new folder with one manual clock, the first opened by `openA` and the
/// second by `openB`: each has its own open of the folder's lock files, so their `flock`s
/// exclude one another as two processes' would. Both are closed (by `close`), and the folder
/// removed, after `body`.
func withTwoSharingCaches<Cache>(
    _ name: String, openA: (TemporaryDirectory, ManualClock) throws -> Cache, openB: (TemporaryDirectory, ManualClock) throws -> Cache,
    close: (Cache) -> Void, _ body: (TemporaryDirectory, ManualClock, Cache, Cache) throws -> Void
) throws {
    let dir = TemporaryDirectory(name)
    defer { dir.remove() }
    let clock = ManualClock(now: 1_700_000_000)
    let a = try openA(dir, clock)
    let b = try openB(dir, clock)
    defer {
        close(a)
        close(b)
    }
    try body(dir, clock, a, b)
}
