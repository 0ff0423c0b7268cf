import Foundation
import Larder
import LarderTestSupport

/// `larder-stress shared --dir D --worker W --count N [--keys K] [--seed S] [--size-limit B]
/// [--fsync-log FILE]`: one of several writer processes on one folder at once
/// (`sharesFolderWithWriters`). Prints "ready <pid>", then makes N operations: stores, reads
/// (every payload verified, exit 3 on a wrong byte), locks and unlocks, removals and collections
/// of the churn keys `c0 ...` that every worker shares, and stores of durable keys `dW-I` of its
/// own (locked, `.fsync`), each appended as "D\t<key>\t<version>" to the log once it returns.
/// Prints "at <i>" every 50 operations, then "done <pid>" and exits 0; exits 2 when the open is
/// refused and 4 when an operation fails.
func sharedWriter(_ args: Arguments) -> Never {
    let worker = args.int("worker")
    let seed = UInt64(args.int("seed", default: worker + 1))
    let keyCount = max(1, args.int("keys", default: 48))
    let count = args.int("count")
    let log = DurableLog(path: args.values["fsync-log"])
    var options = DiskCacheOptions(directory: URL(fileURLWithPath: args.string("dir"), isDirectory: true))
    options.durability = .fsync
    options.sizeLimit = args.int("size-limit", default: 1 << 20)
    options.sharesFolderWithWriters = true
    let cache: DiskCache
    do { cache = try DiskCache(options: options) } catch { fail("cannot open: \(error)") }
    var random = SplitMix64(seed: seed)
    var counter: UInt64 = 0
    func nextVersion() -> UInt64 {
        counter += 1
        return UInt64(worker + 1) &* 1_000_000 &+ counter
    }
    let churnKeys = (0 ..< keyCount).map { "c\($0)" }
    announceReady()
    for i in 0 ..< count {
        if i > 0, i.isMultiple(of: 50) { FileHandle.standardOutput.write(Data("at \(i)\n".utf8)) }
        let key = churnKeys[Int(random.next() % UInt64(keyCount))]
        do {
            switch random.next() % 100 {
            case 0 ..< 35:
                let length = Int(random.next() % 40_000)
                try cache.store(Data(StampedPayload.make(key: key, version: nextVersion(), length: length)), forKey: key)
            case 35 ..< 60:
                verify(try cache.record(forKey: key), key: key)
            case 60 ..< 68:
                if try !cache.lock(forKeys: [key]).isEmpty { try cache.unlock(forKeys: [key]) }
            case 68 ..< 80:
                try cache.remove(forKeys: [key])
            case 80 ..< 83:
                try cache.collectGarbage()
            case 83 ..< 90:
                _ = cache.contains(key)
                _ = try cache.keys(withPrefix: "d")
            default:
                let durable = "d\(worker)-\(i)"
                let version = nextVersion()
                let length = Int(random.next() % 1500)
                try cache.store(Data(StampedPayload.make(key: durable, version: version, length: length)), forKey: durable, locked: true)
                log?.append("D\t\(durable)\t\(version)")
            }
        } catch {
            fail("operation failed: \(error)", status: 4)
        }
    }
    cache.close()
    FileHandle.standardOutput.write(Data("done \(getpid())\n".utf8))
    exit(0)
}
