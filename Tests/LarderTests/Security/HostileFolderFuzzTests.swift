#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Larder

/// The issue's fuzz, library side: folders of random links (into a sentinel tree outside the
/// root), FIFOs, folders and files at record, shard and Larder's own paths; then open (writable
/// and read-only), load, store, contains, keys, lock, collect and `removeAll`. Nothing outside
/// the root may change, no load may return bytes that were not stored under its key, every
/// failure is a `CacheError`, and nothing traps or hangs.
@Suite struct HostileFolderFuzzTests {
    /// Keys whose verbatim record paths meet the sentinel tree when a shard is linked into it:
    /// `important.txt` (`im/` -> the sentinel root), `aa` (`aa/` -> its `inner/`).
    static let keys = ["important.txt", "aa", "inner", "passwd", "b", "zz-login", "0123456789abcdef"]

    static var iterations: Int { Int(ProcessInfo.processInfo.environment["LARDER_HOSTILE_ITERATIONS"] ?? "") ?? 100 }

    /// Whether `path` is `root` or a folder beneath it reached through no link.
    static func isRealFolder(_ path: String, under root: String) -> Bool {
        var current = path
        while current.count > root.count {
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return false }
            current = (current as NSString).deletingLastPathComponent
        }
        return current == root
    }

    /// The live calls, or the live calls without `openat2` (as on kernels before Linux 5.6), so
    /// that both ways of resolving a path are fuzzed.
    static func calls(walking: Bool) -> SystemCalls {
        var calls = SystemCalls.live
        if walking {
            calls.openBeneath = { _, _, _, _ in
                errno = ENOSYS
                return -1
            }
        }
        return calls
    }

    @Test(arguments: [KeyEncoding.verbatim, .sha256], [false, true])
    func hostileFoldersNeverReachOutsideTheRoot(encoding: KeyEncoding, walking: Bool) throws {
        let calls = Self.calls(walking: walking)
        let fixture = HostileFixture("larder-hostile-fuzz")
        defer { fixture.remove() }
        let baseline = fixture.sentinel.fingerprint()
        var random = SplitMix64(seed: 0x1919_5EC0)
        var planted = 0
        var outcomes: [String: Int] = [:]
        for iteration in 0 ..< Self.iterations {
            try? FileManager.default.removeItem(atPath: fixture.root)
            var expected: [String: Data] = [:]
            let first = try DiskCache(options: fixture.options(encoding))
            for key in Self.keys where random.below(3) != 0 {
                let data = Data("\(key) \(iteration)".utf8)
                try first.store(data, forKey: key)
                expected[key] = data
            }
            first.close()

            // Targets: records, their shard folders, Larder's own files, stray names at the root.
            var targets = [".larder", ".larder.lock", ".larder-index", ".larder-tmp", ".larder-tmp/\(getpid())-0", "x", "zz"]
                .map { fixture.root + "/" + $0 }
            for key in Self.keys {
                let path = fixture.recordPath(key, encoding)
                targets.append(path)
                targets.append((path as NSString).deletingLastPathComponent)
            }
            for _ in 0 ..< 1 + random.below(5) {
                let target = targets[random.below(targets.count)]
                let plant = HostilePlant.allCases[random.below(HostilePlant.allCases.count)]
                if target.hasSuffix("/im"), random.below(2) == 0 {
                    // The issue's example: the shard of `important.txt` linked to the victim's folder.
                    _ = unlink(target)
                    try? FileManager.default.removeItem(atPath: target)
                    if HostileFiles.symlink(fixture.sentinel.root, at: target) { planted += 1 }
                } else if Self.isRealFolder((target as NSString).deletingLastPathComponent, under: fixture.root),
                    plant.plant(at: target, sentinel: fixture.sentinel)
                {
                    // (Planting through a shard already replaced by a link would be the test
                    // itself writing outside the root.)
                    planted += 1
                }
            }

            for readOnly in [false, true] {
                let label = "iteration \(iteration), \(encoding), \(readOnly ? "read-only" : "writable")"
                do {
                    let cache = try DiskCache(options: fixture.options(encoding, readOnly: readOnly), systemCalls: calls)
                    for key in Self.keys {
                        do {
                            if let record = try cache.record(forKey: key) {
                                #expect(record.data == expected[key], "\(label): \(key) returned bytes never stored under it")
                            }
                        } catch {
                            outcomes["load \(error.code)", default: 0] += 1
                        }
                        _ = cache.contains(key)
                    }
                    if !readOnly {
                        for key in Self.keys where random.below(2) == 0 {
                            let data = Data("\(key) again \(iteration)".utf8)
                            do {
                                try cache.store(data, forKey: key)
                                expected[key] = data
                                #expect(try cache.record(forKey: key)?.data == data, "\(label): \(key) lost its store")
                            } catch {
                                // A failed store leaves the previous record (or none) in place.
                                outcomes["store \(error.code)", default: 0] += 1
                            }
                        }
                        _ = try? cache.lock(forKeys: Self.keys)
                        _ = try? cache.unlock(forKeys: Self.keys)
                        _ = try? cache.keys(withPrefix: "")
                        _ = try cache.collectGarbage()
                        if random.below(2) == 0 {
                            do { try cache.removeAll() } catch { outcomes["removeAll \(error.code)", default: 0] += 1 }
                        }
                    }
                    _ = cache.count
                    cache.close()
                    outcomes[readOnly ? "opened read-only" : "opened", default: 0] += 1
                } catch {
                    outcomes["open \(error.code)", default: 0] += 1
                }
                #expect(fixture.sentinel.fingerprint() == baseline, "\(label): something outside the root changed")
            }
        }
        print(
            "hostile folders, \(encoding), \(walking ? "walking paths" : "openat2"): \(Self.iterations) iterations, \(planted) entries planted: \(outcomes.sorted { $0.key < $1.key })"
        )
        #expect(planted > Self.iterations)
    }
}
