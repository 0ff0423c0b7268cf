import Foundation

/// Charts as self-contained SVG text: a white background, the generic `sans-serif` font, no
/// scripts and no external references, so that GitHub shows them as images.
public enum SVGChart {
    /// One line of a line chart.
    public struct Series: Sendable {
        /// The legend's name.
        public var name: String
        /// The points, in any order (drawn by increasing x).
        public var points: [(x: Double, y: Double)]
        /// Drawn dashed (a bound rather than a policy).
        public var dashed = false

        /// Makes a series.
        public init(name: String, points: [(x: Double, y: Double)], dashed: Bool = false) {
            self.name = name
            self.points = points
            self.dashed = dashed
        }
    }

    /// One bar of a bar chart: a group (a case), a series (an implementation), a time.
    public struct Bar: Sendable {
        /// The group's label ("load-4k").
        public var group: String
        /// The series' name ("posix-floor").
        public var series: String
        /// The time in nanoseconds.
        public var nanoseconds: Double

        /// Makes a bar.
        public init(group: String, series: String, nanoseconds: Double) {
            self.group = group
            self.series = series
            self.nanoseconds = nanoseconds
        }
    }

    /// The series' colours, in order (Tableau 10).
    static let palette = [
        "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f",
    ]

    /// A line chart with a logarithmic x axis ticked at the measured x values and a linear y axis
    /// over the values' range, one polyline per series, and the legend on the right.
    public static func lines(title: String, xLabel: String, yLabel: String, series: [Series]) -> String {
        let width = 760.0
        let height = 400.0
        let plot = (left: 70.0, right: 530.0, top: 50.0, bottom: 340.0)
        let xs = Set(series.flatMap { $0.points.map(\.x) }).filter { $0 > 0 }.sorted()
        // The y axis spans the values, not zero to the top: policies differ by a few hundredths.
        let ys = series.flatMap { $0.points.map(\.y) }
        let maxY = ys.max() ?? 1
        let minY = min(ys.min() ?? 0, maxY)
        let yStep = niceStep(max(maxY - minY, maxY / 100, 1e-9) / 5)
        let yBottom = max(0, ((minY / yStep).rounded(.down) - 1) * yStep)
        let yTop = max(yBottom + yStep, (maxY / yStep).rounded(.up) * yStep)
        let logMin = log10(xs.first ?? 1)
        let logMax = log10(xs.last ?? 10)
        let span = logMax - logMin
        func x(_ value: Double) -> Double {
            let pad = (plot.right - plot.left) * 0.06
            guard span > 0 else { return (plot.left + plot.right) / 2 }
            return plot.left + pad + (log10(value) - logMin) / span * (plot.right - plot.left - 2 * pad)
        }
        func y(_ value: Double) -> Double { plot.bottom - (value - yBottom) / (yTop - yBottom) * (plot.bottom - plot.top) }

        var svg = header(width: width, height: height, title: title)
        svg += axes(plot)
        var tick = yBottom
        while tick <= yTop + yStep / 2 {
            let position = y(tick)
            svg += line(plot.left, position, plot.right, position, stroke: "#e0e0e0")
            svg += text(plot.left - 6, position + 4, trimmed(tick, step: yStep), anchor: "end")
            tick += yStep
        }
        for value in xs {
            svg += line(x(value), plot.bottom, x(value), plot.bottom + 5, stroke: "#333333")
            svg += text(x(value), plot.bottom + 18, Format.count(value), anchor: "middle")
        }
        svg += text((plot.left + plot.right) / 2, height - 22, xLabel, anchor: "middle")
        svg += text(18, (plot.top + plot.bottom) / 2, yLabel, anchor: "middle", rotate: true)
        for (index, item) in series.enumerated() {
            let colour = palette[index % palette.count]
            let dash = item.dashed ? #" stroke-dasharray="6 4""# : ""
            let points = item.points.filter { $0.x > 0 }.sorted { $0.x < $1.x }
            let path = points.map { String(format: "%.1f,%.1f", x($0.x), y($0.y)) }.joined(separator: " ")
            svg += #"  <polyline fill="none" stroke="\#(colour)" stroke-width="2"\#(dash) points="\#(path)"/>"# + "\n"
            for point in points {
                svg += #"  <circle cx="\#(f(x(point.x)))" cy="\#(f(y(point.y)))" r="3" fill="\#(colour)"/>"# + "\n"
            }
            let legendY = plot.top + 8 + Double(index) * 20
            svg += line(plot.right + 20, legendY, plot.right + 44, legendY, stroke: colour, width: 2, dashed: item.dashed)
            svg += text(plot.right + 50, legendY + 4, item.name, anchor: "start")
        }
        return svg + "</svg>\n"
    }

    /// A horizontal bar chart of times on a logarithmic axis: one group of bars per case, one
    /// colour per series, each bar labelled with its time.
    public static func bars(title: String, bars: [Bar]) -> String {
        var groups: [String] = []
        var names: [String] = []
        for bar in bars {
            if !groups.contains(bar.group) { groups.append(bar.group) }
            if !names.contains(bar.series) { names.append(bar.series) }
        }
        let barHeight = 14.0
        let groupGap = 16.0
        let plot = (left: 190.0, right: 610.0, top: 50.0 + Double(names.count) * 18)
        var rows = 0.0
        for group in groups { rows += Double(bars.filter { $0.group == group }.count) * barHeight + groupGap }
        let bottom = plot.top + rows
        let height = bottom + 50
        let times = bars.map(\.nanoseconds).filter { $0 > 0 }
        // A decade below half the shortest time, so that the shortest bar stays visible.
        let lowDecade = floor(log10((times.min() ?? 2) / 2))
        let highDecade = max(lowDecade + 1, ceil(log10(times.max() ?? 10)))
        func x(_ nanoseconds: Double) -> Double {
            plot.left + (log10(max(nanoseconds, 1)) - lowDecade) / (highDecade - lowDecade) * (plot.right - plot.left)
        }

        var svg = header(width: 720, height: height, title: title)
        for (index, name) in names.enumerated() {
            let legendY = 44 + Double(index) * 18
            svg += rect(plot.left, legendY - 9, 12, 12, fill: palette[index % palette.count])
            svg += text(plot.left + 18, legendY + 1, name, anchor: "start")
        }
        var decade = lowDecade
        while decade <= highDecade {
            let position = x(pow(10, decade))
            svg += line(position, plot.top, position, bottom, stroke: "#e0e0e0")
            // "1 µs", not "1.00 µs": the ticks are powers of ten.
            let label = Format.time(pow(10, decade)).replacingOccurrences(of: ".00 ", with: " ").replacingOccurrences(of: ".0 ", with: " ")
            svg += text(position, bottom + 18, label, anchor: "middle")
            decade += 1
        }
        svg += line(plot.left, plot.top, plot.left, bottom, stroke: "#333333")
        svg += line(plot.left, bottom, plot.right, bottom, stroke: "#333333")
        svg += text((plot.left + plot.right) / 2, bottom + 38, "time per operation (log scale; shorter is faster)", anchor: "middle")
        var top = plot.top + groupGap / 2
        for group in groups {
            let members = bars.filter { $0.group == group }
            svg += text(plot.left - 8, top + Double(members.count) * barHeight / 2 + 4, group, anchor: "end")
            for bar in members {
                let colour = palette[(names.firstIndex(of: bar.series) ?? 0) % palette.count]
                svg += rect(plot.left, top + 1, max(1, x(bar.nanoseconds) - plot.left), barHeight - 2, fill: colour)
                svg += text(x(bar.nanoseconds) + 4, top + barHeight - 3, Format.time(bar.nanoseconds), anchor: "start", size: 10)
                top += barHeight
            }
            top += groupGap
        }
        return svg + "</svg>\n"
    }

    // MARK: Pieces

    private static func header(width: Double, height: Double, title: String) -> String {
        let size = String(format: #"width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f""#, width, height, width, height)
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" \(size) font-family="sans-serif" font-size="12">
              <rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>
              <text x="\(Int(width / 2))" y="24" text-anchor="middle" font-size="15" font-weight="bold" fill="#222222">\(escaped(title))</text>

            """
    }

    private static func axes(_ plot: (left: Double, right: Double, top: Double, bottom: Double)) -> String {
        line(plot.left, plot.top, plot.left, plot.bottom, stroke: "#333333")
            + line(plot.left, plot.bottom, plot.right, plot.bottom, stroke: "#333333")
    }

    private static func line(
        _ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double = 1, dashed: Bool = false
    ) -> String {
        let dash = dashed ? #" stroke-dasharray="6 4""# : ""
        return
            #"  <line x1="\#(f(x1))" y1="\#(f(y1))" x2="\#(f(x2))" y2="\#(f(y2))" stroke="\#(stroke)" stroke-width="\#(f(width))"\#(dash)/>"#
            + "\n"
    }

    private static func rect(_ x: Double, _ y: Double, _ width: Double, _ height: Double, fill: String) -> String {
        #"  <rect x="\#(f(x))" y="\#(f(y))" width="\#(f(width))" height="\#(f(height))" fill="\#(fill)"/>"# + "\n"
    }

    private static func text(
        _ x: Double, _ y: Double, _ content: String, anchor: String, rotate: Bool = false, size: Int = 12
    ) -> String {
        let transform = rotate ? #" transform="rotate(-90 \#(f(x)) \#(f(y)))""# : ""
        return ##"  <text x="\##(f(x))" y="\##(f(y))" text-anchor="\##(anchor)" font-size="\##(size)" fill="#222222"\##(transform)>"##
            + escaped(content) + "</text>\n"
    }

    /// A coordinate with one decimal.
    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// The text with XML's five special characters escaped.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            default: result.append(character)
            }
        }
        return result
    }

    /// 1, 2 or 5 times a power of ten, at least `rough`.
    static func niceStep(_ rough: Double) -> Double {
        guard rough > 0, rough.isFinite else { return 1 }
        let power = pow(10, floor(log10(rough)))
        for factor in [1.0, 2, 5, 10] where factor * power >= rough { return factor * power }
        return 10 * power
    }

    private static func trimmed(_ value: Double, step: Double) -> String {
        let decimals = max(0, Int(-floor(log10(step))))
        return String(format: "%.\(decimals)f", value)
    }
}
