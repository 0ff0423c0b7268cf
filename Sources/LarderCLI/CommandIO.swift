#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Where a command reads and writes: its output streams, standard input, the environment, and
/// whether each stream is a terminal. Tests pass a capturing value; `main.swift` passes ``standard``.
public struct CommandIO: Sendable {
    /// Writes bytes to standard output.
    public var writeOut: @Sendable (Data) -> Void
    /// Writes bytes to standard error.
    public var writeErr: @Sendable (Data) -> Void
    /// Reads standard input, up to its end or until it has more than `limit` bytes, whichever
    /// comes first: at most `limit + 1` bytes are read and returned, so that an endless or huge
    /// stream costs no more memory than the largest record; `nil` when reading fails.
    public var readIn: @Sendable (_ limit: Int) -> Data?
    /// Whether standard output is a terminal (tables get colour only then).
    public var isStdoutTerminal: Bool
    /// Whether standard error is a terminal (progress bars are drawn only then).
    public var isStderrTerminal: Bool
    /// The environment variables the tool consults (`HOME`, `XDG_CACHE_HOME`, `LARDER_NOW`, `NO_COLOR`).
    public var environment: [String: String]

    /// Creates streams from closures.
    public init(
        writeOut: @escaping @Sendable (Data) -> Void, writeErr: @escaping @Sendable (Data) -> Void,
        readIn: @escaping @Sendable (_ limit: Int) -> Data? = { _ in Data() }, isStdoutTerminal: Bool = false,
        isStderrTerminal: Bool = false, environment: [String: String] = [:]
    ) {
        self.writeOut = writeOut
        self.writeErr = writeErr
        self.readIn = readIn
        self.isStdoutTerminal = isStdoutTerminal
        self.isStderrTerminal = isStderrTerminal
        self.environment = environment
    }

    /// The process's own standard streams and environment.
    public static var standard: CommandIO {
        CommandIO(
            writeOut: { writeAll(STDOUT_FILENO, $0) }, writeErr: { writeAll(STDERR_FILENO, $0) },
            readIn: { limit in readBounded(STDIN_FILENO, limit: limit) },
            isStdoutTerminal: isatty(STDOUT_FILENO) == 1, isStderrTerminal: isatty(STDERR_FILENO) == 1,
            environment: ProcessInfo.processInfo.environment)
    }

    /// Writes text to standard output. Interpolated values are escaped (see ``TerminalText``), so
    /// keys, paths and messages cannot send control sequences to the terminal.
    func out(_ text: TerminalText) { writeOut(Data(text.text.utf8)) }
    /// Writes text to standard error, escaped like ``out(_:)``.
    func err(_ text: TerminalText) { writeErr(Data(text.text.utf8)) }
    /// Writes a JSON value and a newline to standard output. Exact: strings are JSON-escaped,
    /// including every character ``TerminalText`` escapes (``JSONValue/quote(_:)``), so parsing
    /// gives back the original text and the raw text is safe on a terminal too.
    func out(json value: JSONValue) { writeOut(Data((value.render() + "\n").utf8)) }

    /// Reads `fd` to its end or until it has given more than `limit` bytes: at most `limit + 1`
    /// bytes, in a buffer grown as they come (never beyond `limit + 1`, so a stream that does not
    /// end costs that much memory at most). `nil` when a read fails or memory runs out.
    /// - Complexity: O(*n*) in the bytes read.
    static func readBounded(_ fd: Int32, limit: Int) -> Data? {
        let most = max(0, limit) &+ 1
        var capacity = min(most, 64 * 1024)
        guard var buffer = malloc(capacity) else { return nil }
        var count = 0
        while count < most {
            if count == capacity {
                let grown = min(most, capacity < most / 2 ? capacity * 2 : most)
                guard let moved = realloc(buffer, grown) else {
                    free(buffer)
                    return nil
                }
                buffer = moved
                capacity = grown
            }
            let n = read(fd, buffer + count, capacity - count)
            if n < 0 {
                if errno == EINTR { continue }
                free(buffer)
                return nil
            }
            if n == 0 { break }
            count += n
        }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
    }

    private static func writeAll(_ fd: Int32, _ data: Data) {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
    }
}

/// Collects what a command writes, for tests and embedding.
public final class OutputCapture: Sendable {
    private let buffers = Mutex((out: Data(), err: Data()))

    /// Creates an empty capture.
    public init() {}

    /// Streams that write into this capture, with `input` as standard input.
    /// - Parameters:
    ///   - input: What standard input holds.
    ///   - environment: The environment the command sees.
    ///   - terminal: Whether both streams claim to be terminals.
    public func io(input: Data = Data(), environment: [String: String] = [:], terminal: Bool = false) -> CommandIO {
        CommandIO(
            writeOut: { data in self.buffers.withLock { $0.out.append(data) } },
            writeErr: { data in self.buffers.withLock { $0.err.append(data) } },
            readIn: { limit in input.prefix(max(0, limit) &+ 1) }, isStdoutTerminal: terminal, isStderrTerminal: terminal,
            environment: environment)
    }

    /// Everything written to standard output, as bytes.
    public var stdoutData: Data { buffers.withLock { $0.out } }
    /// Everything written to standard output, as UTF-8 text.
    public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    /// Everything written to standard error, as bytes.
    public var stderrData: Data { buffers.withLock { $0.err } }
    /// Everything written to standard error, as UTF-8 text.
    public var stderr: String { String(decoding: stderrData, as: UTF8.self) }
}
