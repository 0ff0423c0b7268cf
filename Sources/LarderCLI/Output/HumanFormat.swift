import Foundation

/// Sizes and times the way people read them: `34.2 KiB`, `in 3 d`, `5 min ago`.
enum HumanFormat {
    /// Bytes in binary units with one decimal: `512 B`, `34.2 KiB`, `1.5 MiB`.
    static func size(_ bytes: Int) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f %@", value, units[unit])
    }

    /// A total of file lengths, then what the files occupy on disk (whole blocks), as
    /// `1.7 KiB (92.0 KiB on disk)`: `stats` and `gc` both show sizes this way.
    static func size(_ bytes: Int, onDisk: Int) -> String {
        "\(size(bytes)) (\(size(onDisk)) on disk)"
    }

    /// A length of time in its largest whole-ish unit: `45 s`, `12 min`, `3 h`, `2 d`.
    static func duration(_ seconds: Double) -> String {
        // Clamped, so that no time read from a file can trap the conversions below.
        let s = seconds.isFinite ? min(abs(seconds), 1e15) : 1e15
        if s < 60 { return "\(Int(s)) s" }
        if s < 3600 { return "\(Int(s / 60)) min" }
        if s < 86400 { return "\(Int(s / 3600)) h" }
        if s < 86400 * 365 { return "\(Int(s / 86400)) d" }
        return "\(Int(s / (86400 * 365))) y"
    }

    /// A time relative to `now`: `in 3 d`, `5 min ago`, `now`.
    static func relative(_ time: Double, now: Double) -> String {
        let delta = time - now
        if abs(delta) < 1 { return "now" }
        return delta > 0 ? "in \(duration(delta))" : "\(duration(delta)) ago"
    }

    /// A TTL: `default` for 0, else its duration.
    static func ttl(_ seconds: Int) -> String {
        seconds == 0 ? "default" : duration(Double(seconds))
    }

    /// An absolute UTC time: `2023-11-14 22:13:20 UTC`.
    static func date(_ time: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: Date(timeIntervalSince1970: time))
    }
}
