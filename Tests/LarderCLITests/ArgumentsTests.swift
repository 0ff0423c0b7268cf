import Foundation
import Testing
@testable import LarderCLI

@Suite struct ArgumentsTests {
    static let spec = CommandSpec(
        name: "x", summary: "s", positionalUsage: "KEY...", minimumPositionals: 1, maximumPositionals: 2,
        options: [.flag("json", "j"), .value("dir", "DIR", "d")])

    @Test func parsesOptionsFlagsAndPositionals() throws {
        let parsed = try ArgumentParser.parse(["--dir", "/a", "k1", "--json", "--", "--k2"], spec: Self.spec)
        #expect(parsed.value("dir") == "/a")
        #expect(parsed.flag("json"))
        #expect(parsed.positionals == ["k1", "--k2"])
        let inline = try ArgumentParser.parse(["--dir=/b", "k"], spec: Self.spec)
        #expect(inline.value("dir") == "/b")
    }

    @Test(arguments: [
        (["--nope", "k"], "unknown option '--nope'"),
        (["k", "--dir"], "needs a value"),
        ([], "needs KEY..."),
        (["a", "b", "c"], "unexpected argument 'c'"),
        (["--json=1", "k"], "takes no value"),
    ])
    func rejectsBadCommandLines(arguments: [String], message: String) {
        #expect {
            try ArgumentParser.parse(arguments, spec: Self.spec)
        } throws: { error in
            guard let failure = error as? CommandFailure else { return false }
            return failure.code == .usage && failure.message.contains(message)
        }
    }

    @Test func everyCommandHasHelp() {
        for command in LarderCommand.subcommands {
            let result = larder([command.spec.name, "--help"])
            #expect(result.code == 0, "\(command.spec.name)")
            #expect(result.stdout.contains("Usage: larder \(command.spec.name)"))
            #expect(result.stdout.contains("--help"))
            #expect(!result.stdout.contains("--now"), "hidden options stay out of help")
        }
        let top = larder(["--help"])
        #expect(top.code == 0)
        for command in LarderCommand.subcommands { #expect(top.stdout.contains("  \(command.spec.name) ")) }
        #expect(top.stdout.contains("Exit codes"))
    }

    @Test func usageErrorsAreOneLineWithExitCode2() {
        for arguments in [["frobnicate"], ["ls", "--bogus"], ["show"], ["put"], ["gc", "--size-limit"], ["ls", "--sort", "colour"], []] {
            let result = larder(arguments)
            #expect(result.code == 2, "\(arguments)")
            if !arguments.isEmpty {
                #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
        }
    }

    @Test func missingDirectorySaysWhichAndWhy() {
        let result = larder(["ls", "--dir", "/nonexistent/larder-cache"])
        #expect(result.code == 3)
        #expect(result.stderr.contains("/nonexistent/larder-cache"))
        #expect(result.stderr.contains("does not exist"))
    }

    @Test func defaultDirectoryFollowsXDGThenHome() {
        #expect(CacheContext.defaultDirectory(environment: ["XDG_CACHE_HOME": "/x/cache", "HOME": "/h"]).path == "/x/cache/larder/demo")
        #expect(CacheContext.defaultDirectory(environment: ["HOME": "/h"]).path == "/h/.cache/larder/demo")
    }
}
