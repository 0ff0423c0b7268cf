import Foundation
import Testing
@testable import LarderCLI

/// `larder --version`, and `larder completion bash|zsh|fish`: every command and every option
/// `--help` lists appears in each script, which each shell accepts and (where the shell is
/// installed) completes as expected.
@Suite struct VersionAndCompletionTests {
    /// Each command's options as its `--help` lists them (the `--name` at the start of each
    /// line under "Options:"), the table's other face.
    static func helpOptions(_ command: String) -> Set<String> {
        let help = larder([command, "--help"]).stdout
        guard let start = help.range(of: "\nOptions:\n") else { return [] }
        var options: Set<String> = []
        for line in help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("  --") else { break }
            options.insert(String(line.dropFirst(2).prefix { $0 != " " }))
        }
        return options
    }

    static var commandNames: [String] { LarderCommand.subcommands.map { $0.spec.name } }

    /// Runs `executable` with `arguments`, `input` on standard input; its exit status and output.
    static func run(_ executable: String, _ arguments: [String], input: String = "") throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    static func shell(_ name: String) -> String? {
        ["/usr/bin/\(name)", "/bin/\(name)", "/usr/local/bin/\(name)", "/opt/homebrew/bin/\(name)"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    static func script(_ shell: String) -> String {
        let result = larder(["completion", shell])
        #expect(result.code == 0 && result.stderr.isEmpty, "\(shell): \(result.stderr)")
        return result.stdout
    }

    static func temporaryScript(_ text: String, _ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("larder-completion-\(UUID().uuidString)-\(name)")
        try Data(text.utf8).write(to: url)
        return url
    }

    // MARK: - Version

    @Test func versionIsTheChangelogs() throws {
        let result = larder(["--version"])
        #expect(result.code == 0)
        #expect(result.stdout == "larder \(LarderCommand.version)\n")
        let changelog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("CHANGELOG.md")
        let text = try String(contentsOf: changelog, encoding: .utf8)
        // Keep a Changelog's version headings: `## [0.1.0] - 2026-12-05`.
        let heading = try #require(text.split(separator: "\n").first { $0.hasPrefix("## [") && $0.dropFirst(4).first?.isNumber == true })
        #expect(heading.dropFirst(4).prefix { $0 != "]" } == LarderCommand.version[...], "CHANGELOG.md's latest version is \(heading)")
        #expect(larder(["--help"]).stdout.contains("larder --version"))
    }

    // MARK: - Every command and option, in every script

    @Test func theModelIsTheHelpTable() {
        let model = CompletionModel.larder
        #expect(model.commands.map(\.name) == Self.commandNames)
        for command in model.commands {
            #expect(Set(command.options.map { "--" + $0.name }) == Self.helpOptions(command.name), "\(command.name)")
        }
        #expect(Self.commandNames.contains("completion"))
    }

    @Test func fishScriptNamesEveryCommandAndOption() {
        let script = Self.script("fish")
        for name in Self.commandNames {
            #expect(script.contains("complete -c larder -n __fish_use_subcommand -a \(name) "), "\(name)")
            for option in Self.helpOptions(name) {
                #expect(
                    script.contains("complete -c larder -n '__fish_seen_subcommand_from \(name)' -l \(option.dropFirst(2)) "),
                    "\(name) \(option)")
            }
        }
    }

    /// The zsh script's `case` arm of a command.
    static func zshArm(_ script: String, _ command: String) -> Substring? {
        guard let start = script.range(of: "\n                \(command))\n") else { return nil }
        guard let end = script[start.upperBound...].range(of: "\n                    ;;") else { return nil }
        return script[start.upperBound ..< end.lowerBound]
    }

    @Test func zshScriptNamesEveryCommandAndOption() {
        let script = Self.script("zsh")
        #expect(script.hasPrefix("#compdef larder\n"))
        for name in Self.commandNames {
            #expect(script.contains("                '\(name):"), "\(name) is not offered")
            guard let arm = Self.zshArm(script, name) else {
                Issue.record("no case arm for \(name)")
                continue
            }
            for option in Self.helpOptions(name) {
                #expect(arm.contains("'\(option)[") || arm.contains("'\(option)=["), "\(name) \(option)")
            }
        }
    }

    /// bash, sourced: `_larder` offers exactly the options `--help` lists for each command, every
    /// command at the top, and the words of options and positionals that take a choice.
    @Test func bashCompletesEveryCommandAndOption() throws {
        let bash = try #require(Self.shell("bash"))
        let script = try Self.temporaryScript(Self.script("bash"), "larder.bash")
        defer { try? FileManager.default.removeItem(at: script) }
        #expect(try Self.run(bash, ["-n", script.path]).status == 0, "bash -n rejects the script")
        var driver = """
            source '\(script.path)'
            offer() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _larder; echo "$*|${COMPREPLY[*]}"; }
            offer larder ''
            offer larder ls --sort ''
            offer larder ls --keys = ''
            offer larder ls --keys = sh
            offer larder completion ''
            offer larder help l

            """
        for name in Self.commandNames { driver += "offer larder \(name) --\n" }
        let result = try Self.run(bash, ["--norc", "--noprofile"], input: driver)
        #expect(result.status == 0, "\(result.output)")
        var offers: [String: Set<String>] = [:]
        for line in result.output.split(separator: "\n") {
            let parts = line.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            offers[String(parts[0])] = Set(parts[1].split(separator: " ").map(String.init))
        }
        #expect(offers["larder "] == Set(Self.commandNames + ["help", "--help", "--version"]))
        #expect(offers["larder ls --sort "] == ["key", "size", "age", "access"])
        // `--keys=` as bash splits it: at the '='.
        #expect(offers["larder ls --keys = "] == ["verbatim", "sha256"])
        #expect(offers["larder ls --keys = sh"] == ["sha256"])
        #expect(offers["larder completion "] == ["bash", "zsh", "fish"])
        #expect(offers["larder help l"] == ["ls", "lock"])
        for name in Self.commandNames {
            #expect(offers["larder \(name) --"] == Self.helpOptions(name), "\(name)")
        }
    }

    @Test(.enabled(if: shell("zsh") != nil, "zsh is not installed"))
    func zshAcceptsItsScript() throws {
        let script = try Self.temporaryScript(Self.script("zsh"), "_larder")
        defer { try? FileManager.default.removeItem(at: script) }
        let zsh = try #require(Self.shell("zsh"))
        #expect(try Self.run(zsh, ["-n", script.path]).status == 0)
        // Sourced after compinit, it registers itself for `larder`.
        let registered = try Self.run(
            zsh, ["-f", "-c", "autoload -U compinit; compinit -u -D; source '\(script.path)'; print -r -- $_comps[larder]"])
        #expect(registered.output.trimmingCharacters(in: .whitespacesAndNewlines) == "_larder", "\(registered.output)")
    }

    /// fish, sourced: `complete -C` shows what it would offer for a command line.
    @Test(.enabled(if: shell("fish") != nil, "fish is not installed"))
    func fishCompletesEveryCommandAndOption() throws {
        let fish = try #require(Self.shell("fish"))
        let script = try Self.temporaryScript(Self.script("fish"), "larder.fish")
        defer { try? FileManager.default.removeItem(at: script) }
        #expect(try Self.run(fish, ["--no-execute", script.path]).status == 0, "fish -n rejects the script")
        func offers(_ line: String) throws -> Set<String> {
            let result = try Self.run(fish, ["--no-config", "-c", "source '\(script.path)'; complete -C '\(line)'"])
            return Set(result.output.split(separator: "\n").map { String($0.prefix { $0 != "\t" }) })
        }
        #expect(try offers("larder ls --sort ") == ["key", "size", "age", "access"])
        #expect(try offers("larder completion ") == ["bash", "zsh", "fish"])
        #expect(try offers("larder ").isSuperset(of: Self.commandNames))
        for name in Self.commandNames {
            #expect(try offers("larder \(name) --") == Self.helpOptions(name), "\(name)")
        }
    }

    @Test func unknownOrMissingShellIsAUsageError() {
        let unknown = larder(["completion", "powershell"])
        #expect(unknown.code == 2 && unknown.stderr.contains("powershell") && unknown.stdout.isEmpty)
        #expect(larder(["completion"]).code == 2)
    }
}
