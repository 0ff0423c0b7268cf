#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A helper executable of this package run as a second process by a test (`larder-stress`,
/// `larder-redis-peer`): its output read line by line, killed or awaited.
public final class HelperProcess {
    /// The running process.
    public let process = Process()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    /// The helper named `name`, built beside the test bundle (`.build/<triple>/<configuration>/`),
    /// else in the checkout's `.build/debug`.
    public static func executable(_ name: String) -> URL {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        // Sources/LarderTestSupport/<this file> → the checkout.
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/\(name)")
    }

    /// Starts the helper `name` with `arguments`; its standard error goes to the test's.
    public init(_ name: String, _ arguments: [String]) throws {
        process.executableURL = Self.executable(name)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
    }

    /// The helper's process id.
    public var pid: Int32 { process.processIdentifier }

    /// The next line the helper prints, or `nil` once it has closed its output.
    public func readLine() -> String? {
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
    public func waitUntilReady() -> Int32? {
        guard let line = readLine(), line.hasPrefix("ready ") else { return nil }
        return Int32(line.dropFirst(6))
    }

    /// Waits until the helper exits and returns its status.
    public func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Kills the helper with SIGKILL (if it still runs) and reaps it.
    public func kill() {
        if process.isRunning { sendKill(process.processIdentifier) }
        process.waitUntilExit()
    }

    /// Whether it ended by SIGKILL (rather than exiting on its own).
    public var wasKilled: Bool {
        process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
    }
}

/// `kill(2)` with SIGKILL, named apart from `HelperProcess.kill()`.
private func sendKill(_ pid: Int32) {
    _ = kill(pid, SIGKILL)
}
