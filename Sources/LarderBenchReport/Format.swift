import Foundation

/// How the page writes numbers: times with three significant digits in the unit that suits them,
/// ratios with two decimals (three below 0.1), counts with thousands separators.
public enum Format {
    /// "61.6 ns", "8.50 µs", "43.5 µs", "826 µs", "1.41 ms", "1.23 s".
    public static func time(_ nanoseconds: Double) -> String {
        let units: [(scale: Double, name: String)] = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        for unit in units where nanoseconds >= unit.scale {
            return significant(nanoseconds / unit.scale) + " " + unit.name
        }
        return significant(nanoseconds) + " ns"
    }

    /// "1.19 ×", "0.016 ×"; with `decimals`, that many ("1.003 ×").
    public static func ratio(_ value: Double, decimals: Int? = nil) -> String {
        String(format: "%.\(decimals ?? (value < 0.1 ? 3 : 2))f", value) + " ×"
    }

    /// `value` as a ratio with as many more decimals (up to 5) as it takes not to print as `bound`
    /// when it is not `bound`, so that a missed target never reads as its own bound.
    public static func ratio(_ value: Double, beside bound: Double) -> String {
        var decimals = value < 0.1 ? 3 : 2
        while decimals < 5, value != bound, ratio(value, decimals: decimals) == ratio(bound, decimals: decimals) {
            decimals += 1
        }
        return ratio(value, decimals: decimals)
    }

    /// "100,000"; a fraction keeps two decimals ("0.229").
    public static func count(_ value: Double) -> String {
        guard value == value.rounded(), abs(value) < 1e15 else { return String(format: "%.3g", value) }
        var digits = String(Int(abs(value)))
        var groups: [Substring] = []
        while digits.count > 3 {
            groups.insert(digits.suffix(3), at: 0)
            digits.removeLast(3)
        }
        groups.insert(Substring(digits), at: 0)
        return (value < 0 ? "-" : "") + groups.joined(separator: ",")
    }

    /// A miss ratio as a fraction with three decimals: "0.229".
    public static func fraction(_ value: Double) -> String {
        String(format: "%.3f", value)
    }

    /// Three significant digits, without an exponent: 61.6, 8.50, 826, 1410.
    static func significant(_ value: Double) -> String {
        if value >= 100 { return String(format: "%.0f", value) }
        if value >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.2f", value)
    }
}
