// larder-stress: a helper process for the reliability tests (crash consistency, multi-process).
//
//   larder-stress churn --dir D --seed S --keys N [--fsync-log FILE] [--size-limit BYTES]
//       Opens D writable (durability .fsync, a small size limit), releases the locks a killed run
//       left on churn keys, prints "ready <pid>", then loops
//       forever over stores, loads, locks, unlocks, removes, touches and collections with
//       self-verifying payloads. After a store of a durable key (locked, .fsync) returns it
//       appends "D\t<key>\t<version>" to the log and fsyncs it; after a pinned key's lock
//       returns, "P\t<key>\t<version>"; before unpinning one, "U\t<key>". Exits 3 on a wrong byte.
//   larder-stress hold --dir D [--shares 0|1]
//       Opens D writable (holding it alone, or with --shares 1 as a writer that shares it),
//       prints "ready <pid>", and sleeps until killed.
//   larder-stress flush --dir D --keys N [--flush 0|1]
//       Opens D writable, stores k0 ... k(N-1), reads them back from the last to the first,
//       flushes (unless --flush 0), prints "ready <pid>" and sleeps until killed: an app suspended
//       in the background and then killed. Reopened, the cache lists the keys least recently
//       used first as k(N-1) ... k0 when the flush kept the order.
//   larder-stress read --dir D --keys N [--count LOADS | --seconds S]
//       Opens D read-only and loads random keys (LOADS of them, or for S seconds), verifying every
//       payload; prints "ok hits=H misses=M errors=E" and exits 0, or exits 3 on a wrong byte.
//   larder-stress soak --seconds N [--threads T] [--seed S] [--dir D] [--report FILE] [--growth-check yes|no]
//       Every tier under random load from T threads (4) and a `read` process, for N seconds,
//       sampling resident memory and open descriptors; exits 0 when every payload verified, no
//       call failed and neither grew over the second half beyond the rule in Soak.swift (3: wrong
//       bytes, 4: a failed call, 5: growth, 6: the reader failed). D defaults to a new temporary
//       folder, removed afterwards; FILE gets every sample as CSV.
//   larder-stress changes --dir D --worker W --count N [--hold 1]
//       Appends N records to D's change log (FolderChangeLog), each under its own change lock,
//       prints "done <pid>" and exits 0; with --hold 1, holds the change lock until killed.
//   larder-stress shared --dir D --worker W --count N [--keys K] [--seed S] [--size-limit B] [--fsync-log FILE]
//       One of several writer processes on D at once (sharesFolderWithWriters): N operations on
//       shared churn keys and durable keys of its own, logged as churn's are (SharedWriterWorker.swift).
//
// Payloads are "key\tversion\tlength\n" followed by `length` bytes derived from key and version
// (`StampedPayload` in the LarderTestSupport target, which the tests use to check them).
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Larder
import LarderTestSupport

struct Arguments {
    var command: String
    var values: [String: String]

    init(_ argv: [String]) {
        command = argv.count > 1 ? argv[1] : ""
        values = [:]
        var i = 2
        while i < argv.count {
            let name = argv[i]
            if name.hasPrefix("--"), i + 1 < argv.count {
                values[String(name.dropFirst(2))] = argv[i + 1]
                i += 2
            } else {
                fail("unexpected argument \(name)")
            }
        }
    }

    func string(_ name: String) -> String {
        guard let value = values[name] else { fail("missing --\(name)") }
        return value
    }

    func int(_ name: String, default value: Int? = nil) -> Int {
        if let text = values[name] {
            guard let n = Int(text) else { fail("--\(name) must be a number") }
            return n
        }
        guard let value else { fail("missing --\(name)") }
        return value
    }
}

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("larder-stress: \(message)\n".utf8))
    exit(status)
}

func announceReady() {
    FileHandle.standardOutput.write(Data("ready \(getpid())\n".utf8))
}

/// Checks a loaded record's bytes; exits 3 when they are not a payload written for `key`.
@discardableResult
func verify(_ record: CacheRecord?, key: String) -> UInt64? {
    guard let record else { return nil }
    guard let version = StampedPayload.version(of: record.data, key: key) else {
        fail("WRONG BYTES for key \(key): \(record.data.count) bytes, starting \(Array(record.data.prefix(40)))", status: 3)
    }
    return version
}

/// An append-only log whose lines are on disk (fsync'd) before `append` returns.
struct DurableLog {
    let fd: Int32

    init?(path: String?) {
        guard let path else { return nil }
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 { fail("cannot open the log \(path): errno \(errno)") }
    }

    func append(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count, fsync(fd) == 0 else { fail("cannot write the log: errno \(errno)") }
    }
}

func churn(_ args: Arguments) -> Never {
    let directory = URL(fileURLWithPath: args.string("dir"), isDirectory: true)
    let seed = UInt64(args.int("seed"))
    let keyCount = max(1, args.int("keys"))
    let log = DurableLog(path: args.values["fsync-log"])
    var options = DiskCacheOptions(directory: directory)
    options.durability = .fsync
    options.sizeLimit = args.int("size-limit", default: 384 * 1024)
    let cache: DiskCache
    do { cache = try DiskCache(options: options) } catch { fail("cannot open: \(error)") }

    var random = SplitMix64(seed: seed)
    var counter: UInt64 = 0
    func nextVersion() -> UInt64 {
        counter += 1
        return seed &* 1_000_000 &+ counter
    }
    let churnKeys = (0 ..< keyCount).map { "c\($0)" }
    let durableKeys = (0 ..< 16).map { "d\($0)" }
    let pinnedKeys = (0 ..< 16).map { "p\($0)" }

    // Locks on churn keys left by a killed run would pile up; release them first, so that locked
    // bytes stay far below the size limit (which would otherwise evict locked records too).
    for key in churnKeys {
        while let record = try? cache.record(forKey: key), record.lockCount > 0 {
            _ = try? cache.unlock(forKeys: [key])
        }
    }
    // Ready once the loop starts: a test's kill window then falls on operations, not on this
    // set-up, which a slow machine (a sanitizer, a busy CI runner) can stretch past the window.
    announceReady()

    while true {
        let roll = Int(random.next() % 100)
        let key = churnKeys[Int(random.next() % UInt64(keyCount))]
        do {
            switch roll {
            case 0 ..< 36:
                let version = nextVersion()
                let length = Int(random.next() % 32_000)
                let expiry: Expiry = random.next() % 10 == 0 ? .seconds(1) : .default
                try cache.store(Data(StampedPayload.make(key: key, version: version, length: length)), forKey: key, expiry: expiry)
            case 36 ..< 56:
                verify(try cache.record(forKey: key), key: key)
            case 56 ..< 64:
                if try !cache.lock(forKeys: [key]).isEmpty { try cache.unlock(forKeys: [key]) }
            case 64 ..< 74:
                try cache.remove(forKeys: [key])
            case 74 ..< 78:
                try cache.collectGarbage()
            case 78 ..< 86:
                _ = try cache.touch(forKey: key)
                _ = cache.contains(key)
            case 86 ..< 94:
                let durable = durableKeys[Int(random.next() % UInt64(durableKeys.count))]
                let version = nextVersion()
                let length = Int(random.next() % 1500)
                try cache.store(Data(StampedPayload.make(key: durable, version: version, length: length)), forKey: durable, locked: true)
                log?.append("D\t\(durable)\t\(version)")
            default:
                let pinned = pinnedKeys[Int(random.next() % UInt64(pinnedKeys.count))]
                let record = try cache.record(forKey: pinned)
                if let record, let version = verify(record, key: pinned) {
                    if record.lockCount == 0 {
                        // Stored by a run killed before it could lock it.
                        if try !cache.lock(forKeys: [pinned]).isEmpty { log?.append("P\t\(pinned)\t\(version)") }
                    } else if random.next() % 4 == 0 {
                        log?.append("U\t\(pinned)")
                        while try !cache.unlock(forKeys: [pinned]).isEmpty {}
                        try cache.remove(forKeys: [pinned])
                    }
                } else {
                    let version = nextVersion()
                    let length = Int(random.next() % 1500)
                    try cache.store(Data(StampedPayload.make(key: pinned, version: version, length: length)), forKey: pinned)
                    if try !cache.lock(forKeys: [pinned]).isEmpty { log?.append("P\t\(pinned)\t\(version)") }
                }
            }
        } catch {
            fail("operation failed: \(error)", status: 4)
        }
    }
}

func hold(_ args: Arguments) -> Never {
    var options = DiskCacheOptions(directory: URL(fileURLWithPath: args.string("dir"), isDirectory: true))
    options.sharesFolderWithWriters = args.int("shares", default: 0) != 0
    let cache: DiskCache
    do { cache = try DiskCache(options: options) } catch { fail("cannot open: \(error)") }
    announceReady()
    while true {
        withExtendedLifetime(cache) { _ = sleep(60) }
    }
}

func flushThenHold(_ args: Arguments) -> Never {
    var options = DiskCacheOptions(directory: URL(fileURLWithPath: args.string("dir"), isDirectory: true))
    options.flushesOnBackground = false
    let keys = (0 ..< max(1, args.int("keys"))).map { "k\($0)" }
    let cache: DiskCache
    do {
        cache = try DiskCache(options: options)
        for key in keys { try cache.store(Data(StampedPayload.make(key: key, version: 1, length: 100)), forKey: key) }
        for key in keys.reversed() { verify(try cache.record(forKey: key), key: key) }
        if args.int("flush", default: 1) != 0, try !cache.flush() { fail("the flush skipped the snapshot", status: 3) }
    } catch {
        fail("operation failed: \(error)", status: 4)
    }
    announceReady()
    while true {
        withExtendedLifetime(cache) { _ = sleep(60) }
    }
}

func read(_ args: Arguments) -> Never {
    var options = DiskCacheOptions(directory: URL(fileURLWithPath: args.string("dir"), isDirectory: true))
    options.isReadOnly = true
    let keyCount = max(1, args.int("keys"))
    let loads = args.int("count", default: 2000)
    let deadline = args.values["seconds"].map { _ in Date().addingTimeInterval(Double(args.int("seconds"))) }
    let cache: DiskCache
    do { cache = try DiskCache(options: options) } catch { fail("cannot open: \(error)") }
    var random = SplitMix64(seed: UInt64(getpid()))
    var hits = 0
    var misses = 0
    var errors = 0
    var done = 0
    while deadline.map({ Date() < $0 }) ?? (done < loads) {
        done += 1
        let n = Int(random.next() % UInt64(keyCount + 16))
        let key = n < keyCount ? "c\(n)" : "d\(n - keyCount)"
        do {
            if verify(try cache.record(forKey: key), key: key) != nil { hits += 1 } else { misses += 1 }
        } catch {
            errors += 1
        }
    }
    FileHandle.standardOutput.write(Data("ok hits=\(hits) misses=\(misses) errors=\(errors)\n".utf8))
    exit(0)
}

func soak(_ args: Arguments) -> Never {
    let seconds = args.int("seconds")
    guard seconds > 0 else { fail("--seconds must be positive") }
    let given = args.values["dir"]
    let directory = given ?? NSTemporaryDirectory() + "larder-soak-\(getpid())"
    let soak = Soak(
        seconds: Double(seconds), threads: max(1, args.int("threads", default: 4)), seed: UInt64(args.int("seed", default: 1)),
        directory: directory, checksGrowth: args.values["growth-check"] != "no", reportPath: args.values["report"])
    let status = soak.run()
    if given == nil { try? FileManager.default.removeItem(atPath: directory) }
    exit(status)
}

let arguments = Arguments(CommandLine.arguments)
switch arguments.command {
case "churn": churn(arguments)
case "hold": hold(arguments)
case "flush": flushThenHold(arguments)
case "read": read(arguments)
case "soak": soak(arguments)
case "changes": appendChanges(arguments)
case "shared": sharedWriter(arguments)
case "shared-change": sharedChange(arguments)
default: fail("usage: larder-stress churn|hold|flush|read|soak|changes|shared|shared-change --dir D ...")
}
