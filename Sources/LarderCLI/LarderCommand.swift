/// A subcommand of `larder`: what it accepts, and what it does.
protocol Subcommand {
    /// Its name, options and help.
    static var spec: CommandSpec { get }
    /// Runs it with parsed arguments.
    /// - Returns: The exit code (failures that end the command are thrown instead).
    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode
}

/// The `larder` command-line tool: parses the command line, dispatches to a subcommand, and turns
/// failures into one-line messages and exit codes. `main.swift` only calls ``run(arguments:io:)``.
public enum LarderCommand {
    /// Every subcommand, in the order `larder --help` lists them.
    static var subcommands: [any Subcommand.Type] {
        [
            DemoCommand.self, LsCommand.self, ShowCommand.self, CatCommand.self, ExportCommand.self,
            VerifyCommand.self, StatsCommand.self, GcCommand.self, PutCommand.self, RmCommand.self,
            LockCommand.self, UnlockCommand.self, ImportCommand.self, ReportCommand.self,
            CompletionCommand.self,
        ]
    }

    /// The text of `larder --help`.
    static var help: String {
        var text = """
            larder: inspect and manage Larder and SPTPersistentCache cache directories.

            Usage: larder COMMAND [options] [arguments]

            Commands:

            """
        let width = subcommands.map { $0.spec.name.count }.max() ?? 0
        for command in subcommands {
            text += "  " + command.spec.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + command.spec.summary + "\n"
        }
        text += """

            Run 'larder COMMAND --help' for a command's options, 'larder --version' for the version.
            Without --dir, commands use the demo directory ($XDG_CACHE_HOME/larder/demo, else
            ~/.cache/larder/demo).

            Keys, file names, paths and messages are printed with control characters, C1 controls
            and bidirectional overrides escaped (\\n, \\t, \\e for ESC, \\x7F, \\u{202E}; a backslash
            as \\\\), so a crafted cache cannot drive the terminal. --json output gives them exactly,
            and 'larder cat' writes payloads as they are (see 'larder cat --help').

            Exit codes: 0 done, 1 not found or corrupt records found, 2 usage error,
            3 cache error (directory missing, unreadable, or in use by another process).

            """
        return text
    }

    /// Runs the tool.
    /// - Parameters:
    ///   - arguments: The command line, program name first (`CommandLine.arguments`).
    ///   - io: Where output goes and input comes from.
    /// - Returns: The exit code: 0 done, 1 not found or corrupt, 2 usage, 3 cache error.
    public static func run(arguments: [String], io: CommandIO) -> Int32 {
        let rest = Array(arguments.dropFirst())
        guard let name = rest.first else {
            io.err(TerminalText(verbatim: help))
            return ExitCode.usage.rawValue
        }
        if name == "--help" || name == "-h" || name == "help" {
            if name == "help", rest.count > 1, let command = subcommands.first(where: { $0.spec.name == rest[1] }) {
                io.out(TerminalText(verbatim: command.spec.help))
            } else {
                io.out(TerminalText(verbatim: help))
            }
            return ExitCode.success.rawValue
        }
        if name == "--version" {
            io.out(TerminalText(verbatim: "larder \(version)\n"))
            return ExitCode.success.rawValue
        }
        guard let command = subcommands.first(where: { $0.spec.name == name }) else {
            io.err("larder: unknown command '\(name)' (see 'larder --help')\n")
            return ExitCode.usage.rawValue
        }
        do {
            let parsed = try ArgumentParser.parse(Array(rest.dropFirst()), spec: command.spec)
            if parsed.wantsHelp {
                io.out(TerminalText(verbatim: command.spec.help))
                return ExitCode.success.rawValue
            }
            return try command.run(parsed, io: io).rawValue
        } catch {
            io.err("larder \(name): \(error.message)\n")
            return error.code.rawValue
        }
    }
}
