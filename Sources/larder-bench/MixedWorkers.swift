#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The worker processes of `concurrency`'s mixed-2p and mixed-4p: this binary, run as
/// `--mixed-worker FOLDER SEED COUNT`, each a writer sharing the folder with the others.
///
/// A worker opens the cache and says `ready`; then, for each `go` line on its standard input,
/// runs its operation list once and says `done`; it closes the cache at the end of its input.
/// What is timed is from the `go` lines to the last `done`: the runs, not the opens.
final class MixedWorkers {
    private var processes: [(process: Process, input: FileHandle, output: Int32)] = []

    /// Starts one worker per seed, each with a list of `operations`, and waits until every one
    /// has opened the cache.
    init(folder: String, seeds: [UInt64], operations: Int) throws {
        let executable = URL(
            fileURLWithPath: CommandLine.arguments[0].hasPrefix("/")
                ? CommandLine.arguments[0] : FileManager.default.currentDirectoryPath + "/" + CommandLine.arguments[0])
        for seed in seeds {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["--mixed-worker", folder, String(seed), String(operations)]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            processes.append((process, input.fileHandleForWriting, output.fileHandleForReading.fileDescriptor))
        }
        for worker in processes { try Self.expect("ready", from: worker.output) }
    }

    /// Runs every worker's list once, all at once; returns when all are done.
    func runOnce() throws {
        for worker in processes { try worker.input.write(contentsOf: Data("go\n".utf8)) }
        for worker in processes { try Self.expect("done", from: worker.output) }
    }

    /// Ends the workers' input, and waits for them to close the cache and exit.
    func close() {
        for worker in processes { try? worker.input.close() }
        for worker in processes { worker.process.waitUntilExit() }
        processes = []
    }

    /// Reads one line from `fd` and checks that it is `word`.
    private static func expect(_ word: String, from fd: Int32) throws {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            guard n == 1 else { throw BenchError("a mixed worker ended before it said '\(word)'") }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        guard String(decoding: line, as: UTF8.self) == word else {
            throw BenchError("a mixed worker said '\(String(decoding: line, as: UTF8.self))', not '\(word)'")
        }
    }
}

/// `--mixed-worker FOLDER SEED COUNT`: one worker of ``MixedWorkers``. Run by hand with
/// `LARDER_BENCH_SHARED_FOLDER=0`, a writer holding the folder alone instead: the same list in
/// each mode, for `strace -c` or `perf` on one process; with `LARDER_BENCH_WORKER_FILL=1`, it
/// stores every key of the suite first (a folder as the suite's), before it says `ready`.
func runMixedWorker(folder: String, seed: UInt64, count: Int) throws {
    let list = ConcurrencyWorkload.operations(count: count, seed: seed)
    let environment = ProcessInfo.processInfo.environment
    let store = try LarderStore(directory: folder, sharesFolder: environment["LARDER_BENCH_SHARED_FOLDER"] != "0")
    defer { store.close() }
    if environment["LARDER_BENCH_WORKER_FILL"] == "1" {
        for key in ConcurrencyWorkload.keys { try store.store(ConcurrencyWorkload.payload, forKey: key) }
    }
    // Unbuffered: the parent waits for each word.
    func say(_ word: String) {
        let line = Array((word + "\n").utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }
    say("ready")
    while let line = readLine() {
        guard line == "go" else { throw BenchError("a mixed worker was told '\(line)', not 'go'") }
        ConcurrencyWorkload.run(list, on: store)
        say("done")
    }
}
