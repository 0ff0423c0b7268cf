#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Testing
@testable import LarderCLI

/// What hostile input may cost the `larder` command: escaping, standard input, times.
@Suite struct InputCostTests {
    /// Escaping is linear: 1 MiB of control characters (64 KiB took about 0.2 s when each
    /// escape was appended to a scalar view, hours at this size), exactly escaped.
    @Test(.timeLimit(.minutes(1))) func escapingIsLinear() {
        let count = 1 << 20
        let text = String(repeating: "\u{1}\u{1B}\u{202E}", count: count / 3)
        #expect(TerminalText.escaped(text) == String(repeating: #"\x01\e\u{202E}"#, count: count / 3))
        let bytes = [UInt8](repeating: 0xFF, count: count)
        #expect(TerminalText.escaped(utf8: bytes) == String(repeating: #"\xFF"#, count: count))
    }

    /// Standard input is read no further than one byte past the limit: the rest stays unread.
    @Test func inputIsReadOnlyUpToTheLimit() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let sent = [UInt8](repeating: 7, count: 5000)
        #expect(write(fds[1], sent, sent.count) == sent.count)
        close(fds[1])
        defer { close(fds[0]) }
        let read = try #require(CommandIO.readBounded(fds[0], limit: 1000))
        #expect(read.count == 1001)
        var rest = [UInt8](repeating: 0, count: 8192)
        #expect(Glibc.read(fds[0], &rest, rest.count) == 3999)
        // Under the limit, everything.
        var again: [Int32] = [0, 0]
        #expect(pipe(&again) == 0)
        #expect(write(again[1], sent, sent.count) == sent.count)
        close(again[1])
        defer { close(again[0]) }
        #expect(CommandIO.readBounded(again[0], limit: 1 << 20) == Data(sent))
    }

    /// `put` of an input over the 1 GiB limit is a clear failure, not a trap, and stores
    /// nothing. (The input is `calloc`ed zeros: no page of it is touched.)
    @Test func putStopsAtTheLimit() throws {
        let temp = TemporaryDirectory("larder-cli-input")
        defer { temp.remove() }
        let dir = temp.path("c")
        #expect(larder(["put", "--dir", dir, "small"], input: Data("x".utf8)).code == 0)
        let result = larder(["put", "--dir", dir, "huge"], input: Data(count: (1 << 30) + 1))
        #expect(result.code == 1)
        #expect(result.stderr.contains("standard input holds more than 1"), "\(result.stderr)")
        #expect(!larder(["ls", "--dir", dir]).stdout.contains("huge"))
    }

    /// `--now` and `LARDER_NOW` outside the times a header holds are usage errors, never a trap.
    @Test(arguments: ["2e16", "1e300", "-1", "inf", "nan"])
    func outOfRangeTimesAreUsageErrors(now: String) {
        let temp = TemporaryDirectory("larder-cli-input")
        defer { temp.remove() }
        let dir = temp.path("c")
        let flag = larder(["put", "--dir", dir, "--now", now, "k"], input: Data("x".utf8))
        #expect(flag.code == 2, "\(flag.stderr)")
        #expect(flag.stderr.contains("253402300799"))
        let variable = larder(["put", "--dir", dir, "k"], input: Data("x".utf8), environment: ["LARDER_NOW": now])
        #expect(variable.code == 2, "\(variable.stderr)")
    }
}
