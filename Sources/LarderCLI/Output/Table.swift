/// A text table with aligned columns; colour only when asked (when stdout is a terminal).
struct TextTable {
    enum Alignment { case left, right }

    struct Column {
        var title: String
        var alignment: Alignment = .left
    }

    var columns: [Column]
    var rows: [[String]] = []
    /// ANSI colour codes per row (`"32"` green), used only when rendering with colour.
    var rowColours: [String?] = []

    init(_ columns: [Column]) { self.columns = columns }

    mutating func append(_ row: [String], colour: String? = nil) {
        precondition(row.count == columns.count, "a row needs one cell per column")
        rows.append(row)
        rowColours.append(colour)
    }

    /// The table as text, one line per row after a header line. Every cell is escaped
    /// (``TerminalText``), so a newline in a key cannot start a forged row.
    func render(colour: Bool) -> TerminalText {
        let rows = rows.map { $0.map(TerminalText.escaped) }
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
    var fields: [(String, String)] = []

    mutating func add(_ label: String, _ value: String) { fields.append((label, value)) }

    /// One line per field; labels and values are escaped (``TerminalText``).
    func render() -> TerminalText {
        let fields = fields.map { (TerminalText.escaped($0.0), TerminalText.escaped($0.1)) }
        let width = fields.map(\.0.count).max() ?? 0
        return TerminalText(verbatim: fields.map { $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.1 + "\n" }.joined())
    }
}
