/// A text table with aligned columns; colour only when asked (when stdout is a terminal).
struct TextTable {
    enum Alignment { case left, right }

    struct Column {
        var title: String
        var alignment: Alignment = .left
    }

    var columns: [Column]
    /// The cells, escaped (``TerminalText``).
    var rows: [[String]] = []
    /// ANSI colour codes per row (`"32"` green), used only when rendering with colour.
    var rowColours: [String?] = []

    init(_ columns: [Column]) { self.columns = columns }

    /// Appends a row of values from anywhere; each cell is escaped (``TerminalText``), so a
    /// newline in a key cannot start a forged row.
    mutating func append(_ row: [String], colour: String? = nil) {
        append(shown: row.map { TerminalText(verbatim: TerminalText.escaped($0)) }, colour: colour)
    }

    /// Appends a row of cells already safe to show (a name that is not UTF-8, escaped from its bytes).
    mutating func append(shown row: [TerminalText], colour: String? = nil) {
        precondition(row.count == columns.count, "a row needs one cell per column")
        rows.append(row.map(\.text))
        rowColours.append(colour)
    }

    /// The table as text, one line per row after a header line.
    func render(colour: Bool) -> TerminalText {
        let columns = columns.map { Column(title: TerminalText.escaped($0.title), alignment: $0.alignment) }
        var widths = columns.map(\.title.count)
        for row in rows {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (i, cell) in cells.enumerated() {
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                let isLast = i == cells.count - 1
                switch columns[i].alignment {
                case .left: parts.append(isLast ? cell : cell + pad)
                case .right: parts.append(pad + cell)
                }
            }
            return parts.joined(separator: "  ")
        }
        var text = line(columns.map(\.title))
        if colour { text = "\u{1B}[1m" + text + "\u{1B}[0m" }
        text += "\n"
        for (row, rowColour) in zip(rows, rowColours) {
            let rendered = line(row)
            if colour, let rowColour {
                text += "\u{1B}[\(rowColour)m" + rendered + "\u{1B}[0m\n"
            } else {
                text += rendered + "\n"
            }
        }
        return TerminalText(verbatim: text)
    }
}

/// Label–value lines with the values aligned, for `show` and `stats`.
struct FieldList {
    /// Labels and values, escaped (``TerminalText``).
    var fields: [(String, String)] = []

    /// Adds a field; label and value are escaped.
    mutating func add(_ label: String, _ value: String) { add(label, shown: "\(value)") }

    /// Adds a field whose value is already safe to show.
    mutating func add(_ label: String, shown value: TerminalText) { fields.append((TerminalText.escaped(label), value.text)) }

    /// One line per field.
    func render() -> TerminalText {
        let width = fields.map(\.0.count).max() ?? 0
        return TerminalText(verbatim: fields.map { $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.1 + "\n" }.joined())
    }
}
