/// A one-line progress bar on standard error, drawn only when standard error is a terminal and
/// the job is large enough to be worth watching.
struct ProgressBar {
    /// Jobs with fewer items than this get no bar.
    static let threshold = 200

    let io: CommandIO
    let label: String
    let isEnabled: Bool
    private var lastDrawn = -1

    init(io: CommandIO, label: String, total: Int) {
        self.io = io
        self.label = label
        isEnabled = io.isStderrTerminal && total >= Self.threshold
    }

    /// Redraws the bar when the percentage changed.
    mutating func update(_ done: Int, of total: Int) {
        guard isEnabled, total > 0 else { return }
        let percent = done * 100 / total
        guard percent != lastDrawn else { return }
        lastDrawn = percent
        let width = 30
        let filled = width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        io.err("\r\(label) [\(bar)] \(done)/\(total)")
    }

    /// Erases the bar.
    func finish() {
        guard isEnabled, lastDrawn >= 0 else { return }
        io.err("\r\u{1B}[2K")
    }
}
