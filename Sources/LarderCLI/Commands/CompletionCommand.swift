/// `larder completion bash|zsh|fish`: prints a completion script for every command and option,
/// generated from the command table that `--help` prints (``CompletionModel``).
enum CompletionCommand: Subcommand {
    static let spec = CommandSpec(
        name: "completion", summary: "Print a shell completion script for every command and option.",
        positionalUsage: "bash|zsh|fish", minimumPositionals: 1, maximumPositionals: 1,
        discussion: """
            bash:  source <(larder completion bash)
                   (or save it as ~/.local/share/bash-completion/completions/larder)
            zsh:   source <(larder completion zsh)
                   (or save it as _larder in a folder of $fpath)
            fish:  larder completion fish | source
                   (or save it as ~/.config/fish/completions/larder.fish)
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        let model = CompletionModel.larder
        switch arguments.positionals[0] {
        case "bash": io.out(TerminalText(verbatim: BashCompletion.script(model)))
        case "zsh": io.out(TerminalText(verbatim: ZshCompletion.script(model)))
        case "fish": io.out(TerminalText(verbatim: FishCompletion.script(model)))
        case let other: throw .usage("unknown shell '\(other)'; choose bash, zsh or fish")
        }
        return .success
    }
}
