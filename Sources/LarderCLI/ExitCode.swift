/// The tool's exit codes.
public enum ExitCode: Int32, Sendable {
    /// Done.
    case success = 0
    /// A key was not found, or corrupt records were found.
    case failure = 1
    /// The command line was wrong.
    case usage = 2
    /// The cache could not be used: in use by another process, missing, unreadable.
    case cacheError = 3
}

/// A failure that ends a command: a one-line message for standard error and an exit code.
struct CommandFailure: Error {
    var code: ExitCode
    var message: String

    init(_ code: ExitCode, _ message: String) {
        self.code = code
        self.message = message
    }

    static func usage(_ message: String) -> CommandFailure { CommandFailure(.usage, message) }
}
