import Foundation

/// What a shell may complete after a word: derived from the command table (each command's
/// ``CommandSpec``), the same table `--help` prints, so that completions cannot drift from it.
struct CompletionModel {
    /// What may follow an option or stand as a positional argument.
    enum Values: Equatable {
        /// Nothing to offer (a key, a number): the shell completes nothing.
        case free
        /// A path to a file.
        case files
        /// A path to a folder.
        case directories
        /// One of a few words.
        case choices([String])

        /// The values a placeholder stands for: `a|b|c` is a choice of words, a placeholder
        /// naming a folder (`DIR`, `OUTDIR`) is a folder, one naming a file (`FILE`) a file, and
        /// anything else (`KEY`, `SECONDS`, `N`) is free.
        init(placeholder: String) {
            let words = placeholder.split(separator: "|").map(String.init)
            if words.count > 1, words.allSatisfy({ $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } }) {
                self = .choices(words)
            } else if placeholder.hasSuffix("DIR") {
                self = .directories
            } else if placeholder.contains("FILE") {
                self = .files
            } else {
                self = .free
            }
        }
    }

    /// One option: its name without dashes, what its value is (`nil` for a flag), and its help.
    struct Option {
        var name: String
        var value: Values?
        var help: String
    }

    /// One subcommand: its name, summary, options (those `--help` lists, `--help` included) and
    /// what its positional arguments are.
    struct Command {
        var name: String
        var summary: String
        var options: [Option]
        var positionals: Values
    }

    /// The subcommands, in the order `larder --help` lists them.
    var commands: [Command]
    /// The options of `larder` itself.
    var topLevelOptions: [Option] = [
        Option(name: "help", value: nil, help: "Show the list of commands."),
        Option(name: "version", value: nil, help: "Print the version."),
    ]
    /// The word `larder help COMMAND` takes before a command's name.
    let helpCommand = "help"

    /// The model of the tool's command table.
    static var larder: CompletionModel { CompletionModel(specs: LarderCommand.subcommands.map { $0.spec }) }

    /// The model of `specs`; hidden options (testing aids) are left out, as `--help` leaves them out.
    init(specs: [CommandSpec]) {
        commands = specs.map { spec in
            let visible = spec.options.filter { !$0.hidden } + [.flag("help", "Show this help.")]
            return Command(
                name: spec.name, summary: spec.summary,
                options: visible.map { Option(name: $0.name, value: $0.value.map(Values.init(placeholder:)), help: $0.help) },
                positionals: Self.positionals(spec))
        }
    }

    /// What a command's positional arguments are: the last one its usage names decides
    /// (`KEY [FILE]`: files; `OUTDIR`: folders; `bash|zsh|fish`: those words; `KEY...`: free).
    private static func positionals(_ spec: CommandSpec) -> Values {
        guard spec.maximumPositionals != 0, let last = spec.positionalUsage.split(separator: " ").last else { return .free }
        let placeholder = last.trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        return Values(placeholder: placeholder)
    }
}
