/// One option a command accepts.
struct OptionSpec: Sendable {
    /// The long name, without the leading dashes.
    var name: String
    /// The value's placeholder in help (`DIR`), or `nil` for a flag.
    var value: String?
    /// One line of help.
    var help: String
    /// Whether `--help` leaves it out (testing aids).
    var hidden = false

    static func flag(_ name: String, _ help: String, hidden: Bool = false) -> OptionSpec {
        OptionSpec(name: name, value: nil, help: help, hidden: hidden)
    }

    static func value(_ name: String, _ placeholder: String, _ help: String, hidden: Bool = false) -> OptionSpec {
        OptionSpec(name: name, value: placeholder, help: help, hidden: hidden)
    }
}

/// What a command accepts: options, and how many positional arguments.
struct CommandSpec: Sendable {
    /// The subcommand's name (`ls`).
    var name: String
    /// One line for the tool's command list.
    var summary: String
    /// The positional part of the usage line (`KEY [FILE]`).
    var positionalUsage: String = ""
    /// The fewest positional arguments.
    var minimumPositionals = 0
    /// The most positional arguments, `nil` for no limit.
    var maximumPositionals: Int? = 0
    /// The options, besides `--help`.
    var options: [OptionSpec] = []
    /// Paragraphs after the option list.
    var discussion: String = ""

    /// The text of `larder NAME --help`.
    var help: String {
        var text = "\(summary)\n\nUsage: larder \(name)"
        if !options.isEmpty { text += " [options]" }
        if !positionalUsage.isEmpty { text += " \(positionalUsage)" }
        text += "\n"
        let visible = options.filter { !$0.hidden } + [.flag("help", "Show this help.")]
        let labels = visible.map { "--\($0.name)" + ($0.value.map { " \($0)" } ?? "") }
        let width = labels.map(\.count).max() ?? 0
        text += "\nOptions:\n"
        for (label, option) in zip(labels, visible) {
            text += "  " + label.padding(toLength: width + 2, withPad: " ", startingAt: 0) + option.help + "\n"
        }
        if !discussion.isEmpty { text += "\n" + discussion + "\n" }
        return text
    }
}

/// A parsed command line.
struct ParsedArguments: Sendable, Equatable {
    /// Option values by name; flags map to `""`.
    var options: [String: String] = [:]
    /// Positional arguments, in order.
    var positionals: [String] = []
    /// Whether `--help` (or `-h`) was given.
    var wantsHelp = false

    /// Whether a flag was given.
    func flag(_ name: String) -> Bool { options[name] != nil }

    /// An option's value.
    func value(_ name: String) -> String? { options[name] }

    /// An option's value as a non-negative number.
    func number(_ name: String) throws(CommandFailure) -> Double? {
        guard let text = options[name] else { return nil }
        guard let number = Double(text), number.isFinite, number >= 0 else {
            throw .usage("option '--\(name)' needs a non-negative number, not '\(text)'")
        }
        return number
    }

    /// An option's value as a non-negative whole number.
    func integer(_ name: String) throws(CommandFailure) -> Int? {
        guard let text = options[name] else { return nil }
        guard let number = Int(text), number >= 0 else {
            throw .usage("option '--\(name)' needs a non-negative whole number, not '\(text)'")
        }
        return number
    }
}

/// A small parser: `--name value`, `--name=value`, flags, `--` to end options, and `-h`.
enum ArgumentParser {
    /// Parses the arguments after the subcommand's name.
    /// - Throws: A usage failure naming the unknown option, the missing value, or the wrong count.
    static func parse(_ arguments: [String], spec: CommandSpec) throws(CommandFailure) -> ParsedArguments {
        var result = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                result.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "-h" || argument == "--help" {
                result.wantsHelp = true
                continue
            }
            guard argument.hasPrefix("--") else {
                throw .usage("unknown option '\(argument)' for 'larder \(spec.name)' (see 'larder \(spec.name) --help')")
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                throw .usage("unknown option '--\(name)' for 'larder \(spec.name)' (see 'larder \(spec.name) --help')")
            }
            if option.value == nil {
                guard inlineValue == nil else { throw .usage("option '--\(name)' takes no value") }
                result.options[name] = ""
            } else if let inlineValue {
                result.options[name] = inlineValue
            } else {
                guard index < arguments.count else {
                    throw .usage("option '--\(name)' needs a value (\(option.value!))")
                }
                result.options[name] = arguments[index]
                index += 1
            }
        }
        if result.wantsHelp { return result }
        if result.positionals.count < spec.minimumPositionals {
            throw .usage("'larder \(spec.name)' needs \(spec.positionalUsage) (see 'larder \(spec.name) --help')")
        }
        if let maximum = spec.maximumPositionals, result.positionals.count > maximum {
            let extra = result.positionals[maximum]
            throw .usage("unexpected argument '\(extra)' for 'larder \(spec.name)' (see 'larder \(spec.name) --help')")
        }
        return result
    }
}
