#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A running `larder-stress` helper (see `Sources/larder-stress/main.swift`).
final class StressProcess {
    let process = Process()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    /// The helper built beside the test bundle (`.build/<triple>/<configuration>/larder-stress`).
    static var executable: URL {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("larder-stress")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        // Tests/LarderTests/Support/<this file> → the checkout's .build/debug.
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug/larder-stress")
    }

    init(_ arguments: [String]) throws {
        process.executableURL = Self.executable
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// The next line the helper prints, or `nil` once it has closed its output.
    func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { return nil }
            buffered += data
        }
    }

    /// Waits for "ready <pid>" and returns the pid it names.
    func waitUntilReady() -> Int32? {
        guard let line = readLine(), line.hasPrefix("ready ") else { return nil }
        return Int32(line.dropFirst(6))
    }

    /// Kills the helper with SIGKILL and reaps it.
    func kill() {
        if process.isRunning { sendKill(process.processIdentifier) }
        process.waitUntilExit()
    }

    /// Whether it ended by SIGKILL (rather than exiting on its own, which the helpers only do on failure).
    var wasKilled: Bool {
        process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
    }
}

/// `kill(2)` with SIGKILL, named apart from `StressProcess.kill()`.
private func sendKill(_ pid: Int32) {
    _ = kill(pid, SIGKILL)
}
