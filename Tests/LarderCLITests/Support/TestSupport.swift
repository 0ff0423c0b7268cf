import Foundation
import Larder
@_exported import LarderTestSupport
@testable import LarderCLI

extension Fixtures {
    /// The arguments that make the tool read the SPT fixture as its manifest describes.
    static func clockArguments(_ manifest: Manifest) -> [String] {
        ["--now", String(Int(manifest.now)), "--default-expiration", String(Int(manifest.defaultExpiration))]
    }
}

/// The outcome of one run of the tool.
struct RunResult {
    var code: Int32
    var stdout: String
    var stdoutData: Data
    var stderr: String
    var stderrData: Data
}

/// Runs `larder ARGS...` through the library, capturing its output.
func larder(_ arguments: [String], input: Data = Data(), environment: [String: String] = [:], terminal: Bool = false) -> RunResult {
    let capture = OutputCapture()
    let code = LarderCommand.run(
        arguments: ["larder"] + arguments, io: capture.io(input: input, environment: environment, terminal: terminal))
    return RunResult(
        code: code, stdout: capture.stdout, stdoutData: capture.stdoutData, stderr: capture.stderr, stderrData: capture.stderrData)
}

/// Parses JSON text into Foundation objects.
func parseJSON(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8))
}

/// The lowercase hex SHA-256 of `data`.
func sha256(_ data: Data) -> String {
    data.withUnsafeBytes { SHA256Hash.hex($0) }
}
