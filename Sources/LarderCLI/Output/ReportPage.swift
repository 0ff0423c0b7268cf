import Foundation

/// The HTML report: one self-contained page (inline CSS and SVG, images as `data:` URIs).
struct ReportPage {
    /// An image payload to show as a thumbnail.
    struct Thumbnail {
        var key: String
        var mimeType: String
        var data: Data
    }

    /// At most this many thumbnails.
    static let maximumThumbnails = 48
    /// Payloads larger than this are not inlined.
    static let maximumThumbnailBytes = 256 * 1024

    var directory: String
    var format: String
    var now: Double
    var defaultExpiration: Double
    var summary: CacheSummary
    var thumbnails: [Thumbnail]

    /// Size buckets: upper bounds in bytes, and labels.
    static let sizeBuckets: [(Int, String)] = [
        (1024, "< 1 KiB"), (4096, "1–4 KiB"), (16384, "4–16 KiB"), (65536, "16–64 KiB"),
        (262_144, "64–256 KiB"), (1_048_576, "256 KiB–1 MiB"), (4_194_304, "1–4 MiB"), (Int.max, "≥ 4 MiB"),
    ]
    /// Age buckets (time since the last update): upper bounds in seconds, and labels.
    static let ageBuckets: [(Double, String)] = [
        (3600, "< 1 h"), (86400, "1 h–1 d"), (7 * 86400, "1–7 d"), (30 * 86400, "7–30 d"),
        (365 * 86400, "30 d–1 y"), (.infinity, "≥ 1 y"),
    ]

    func render() -> String {
        let entries = summary.entries
        let sound = entries.filter { $0.corruption == nil }
        var sizeCounts = Array(repeating: 0, count: Self.sizeBuckets.count)
        for entry in entries {
            sizeCounts[Self.sizeBuckets.firstIndex { entry.fileSize < $0.0 } ?? Self.sizeBuckets.count - 1] += 1
        }
        var ageCounts = Array(repeating: 0, count: Self.ageBuckets.count)
        for entry in sound {
            guard let updated = entry.updateTime else { continue }
            let age = max(0, now - updated)
            ageCounts[Self.ageBuckets.firstIndex { age < $0.0 } ?? Self.ageBuckets.count - 1] += 1
        }
        let largest = entries.sorted { $0.fileSize > $1.fileSize }.prefix(10)
        let stalest = sound.sorted { ($0.lastAccessTime ?? 0) < ($1.lastAccessTime ?? 0) }.prefix(10)
        let expiring =
            sound
            .compactMap { entry in entry.expirationTime.flatMap { $0 >= now ? (entry, $0) : nil } }
            .sorted { $0.1 < $1.1 }.prefix(10)
        let corrupt = entries.filter { $0.corruption != nil }

        var html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Larder report: \(escape(directory))</title>
            <style>\(Self.css)</style></head><body>
            <h1>Larder cache report</h1>
            <p class="meta">\(escape(directory)) · \(escape(format)) · generated \(escape(HumanFormat.date(now)))</p>
            <section class="cards">
            \(card("records", "\(summary.count)", "\(summary.count) records"))
            \(card("total size", HumanFormat.size(summary.totalSize), "\(summary.totalSize) bytes"))
            \(card("ok", "\(summary.count(.ok))", "readable now", tone: "ok"))
            \(card("expired", "\(summary.count(.expired))", "collection removes them", tone: "warn"))
            \(card("corrupt", "\(summary.count(.corrupt))", "verify --repair removes them", tone: summary.count(.corrupt) > 0 ? "bad" : nil))
            \(card("locked", "\(summary.locked.count)", HumanFormat.size(summary.lockedSize)))
            </section>
            <section class="row">
            <div class="panel"><h2>Sizes</h2>\(histogram(zip(Self.sizeBuckets.map(\.1), sizeCounts).map { ($0, $1) }, colour: "#4c78a8"))</div>
            <div class="panel"><h2>Age since last update</h2>\(histogram(zip(Self.ageBuckets.map(\.1), ageCounts).map { ($0, $1) }, colour: "#f58518"))</div>
            </section>
            <section class="panel"><h2>Locked versus unlocked</h2>\(lockBar())</section>

            """
        html += table("Largest records", Array(largest), extra: ("size", { HumanFormat.size($0.fileSize) }))
        html += table(
            "Stalest records (least recently used)", Array(stalest),
            extra: ("last access", { e in e.lastAccessTime.map { HumanFormat.relative($0, now: now) } ?? "-" }))
        html += table(
            "Expiring soon", expiring.map(\.0),
            extra: ("expires", { e in e.expirationTime.map { HumanFormat.relative($0, now: now) } ?? "-" }))
        html += table("Corrupt records", corrupt, extra: ("reason", { $0.corruption?.rawValue ?? "?" }))
        if !thumbnails.isEmpty {
            html += "<section class=\"panel\"><h2>Images (\(thumbnails.count))</h2><div class=\"thumbs\">\n"
            for thumbnail in thumbnails {
                html +=
                    "<figure><img alt=\"\(escape(thumbnail.key))\" src=\"data:\(thumbnail.mimeType);base64,\(thumbnail.data.base64EncodedString())\"><figcaption>\(escape(thumbnail.key))</figcaption></figure>\n"
            }
            html += "</div></section>\n"
        }
        html += "</body></html>\n"
        return html
    }

    private func card(_ label: String, _ value: String, _ note: String, tone: String? = nil) -> String {
        "<div class=\"card \(tone ?? "")\"><div class=\"label\">\(escape(label))</div><div class=\"value\">\(escape(value))</div><div class=\"note\">\(escape(note))</div></div>"
    }

    /// A vertical bar chart in inline SVG.
    private func histogram(_ bars: [(String, Int)], colour: String) -> String {
        let width = 520
        let height = 230
        let top = 20
        let bottom = 50
        let slot = width / max(1, bars.count)
        let peak = max(1, bars.map(\.1).max() ?? 1)
        var svg = "<svg viewBox=\"0 0 \(width) \(height)\" role=\"img\" class=\"chart\">"
        for (i, bar) in bars.enumerated() {
            let h = (height - top - bottom) * bar.1 / peak
            let x = i * slot + 6
            let y = height - bottom - h
            svg +=
                "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(slot - 12)\" height=\"\(h)\" fill=\"\(colour)\"><title>\(escape(bar.0)): \(bar.1)</title></rect>"
            svg += "<text x=\"\(x + (slot - 12) / 2)\" y=\"\(y - 4)\" class=\"count\">\(bar.1)</text>"
            // Alternate label rows, so that long labels of narrow bars do not overlap.
            let labelY = height - bottom + 16 + (bars.count > 6 && i % 2 == 1 ? 14 : 0)
            svg += "<text x=\"\(x + (slot - 12) / 2)\" y=\"\(labelY)\" class=\"axis\">\(escape(bar.0))</text>"
        }
        return svg + "</svg>"
    }

    /// A stacked bar of locked and unlocked bytes, with counts.
    private func lockBar() -> String {
        let total = max(1, summary.totalSize)
        let lockedWidth = 1000 * summary.lockedSize / total
        let lockedCount = summary.locked.count
        return """
            <svg viewBox="0 0 1000 40" class="bar" role="img"><rect x="0" y="0" width="\(lockedWidth)" height="40" fill="#54a24b"><title>locked</title></rect><rect x="\(lockedWidth)" y="0" width="\(1000 - lockedWidth)" height="40" fill="#bab0ac"><title>unlocked</title></rect></svg>
            <p><span class="swatch" style="background:#54a24b"></span>locked: \(lockedCount) \(lockedCount == 1 ? "record" : "records"), \(escape(HumanFormat.size(summary.lockedSize))) &nbsp; <span class="swatch" style="background:#bab0ac"></span>unlocked: \(summary.count - lockedCount) \(summary.count - lockedCount == 1 ? "record" : "records"), \(escape(HumanFormat.size(summary.totalSize - summary.lockedSize)))</p>
            """
    }

    private func table(_ title: String, _ entries: [RecordEntry], extra: (String, (RecordEntry) -> String)) -> String {
        var html = "<section class=\"panel\"><h2>\(escape(title))</h2>"
        guard !entries.isEmpty else { return html + "<p class=\"none\">none</p></section>\n" }
        html += "<table><tr><th>key</th><th>\(escape(extra.0))</th><th>locks</th><th>updated</th><th>status</th></tr>\n"
        for entry in entries {
            html +=
                "<tr class=\"\(entry.status.rawValue)\"><td class=\"key\">\(escape(entry.displayKey))</td><td>\(escape(extra.1(entry)))</td>"
            html +=
                "<td>\(entry.lockCount.map(String.init) ?? "-")</td><td>\(escape(entry.updateTime.map { HumanFormat.relative($0, now: now) } ?? "-"))</td>"
            html += "<td>\(escape(LsCommand.statusText(entry)))</td></tr>\n"
        }
        return html + "</table></section>\n"
    }

    /// Text for HTML, shown as a terminal would show it: control characters and bidirectional
    /// overrides as visible escapes (``TerminalText``), then `&`, `<`, `>`, `"` and `'` as entities.
    func escape(_ text: String) -> String {
        var out = ""
        for c in TerminalText.escaped(text) {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    static let css = """
        body{font:14px/1.4 system-ui,-apple-system,sans-serif;margin:24px;color:#222;background:#fafafa}
        h1{margin:0 0 4px}h2{font-size:16px;margin:0 0 8px}.meta{color:#666;margin:0 0 16px}
        .cards{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:16px}
        .card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:10px 14px;min-width:120px}
        .card .label{color:#666;font-size:12px;text-transform:uppercase}.card .value{font-size:24px;font-weight:600}
        .card .note{color:#888;font-size:12px}.card.ok .value{color:#2e7d32}.card.warn .value{color:#b26a00}.card.bad .value{color:#c62828}
        .row{display:flex;flex-wrap:wrap;gap:12px}.row .panel{flex:1 1 420px}
        .panel{background:#fff;border:1px solid #ddd;border-radius:8px;padding:12px;margin-bottom:12px}
        .chart{width:100%;height:auto}.chart .count{font-size:12px;text-anchor:middle;fill:#333}
        .chart .axis{font-size:11px;text-anchor:middle;fill:#666}.bar{width:100%;height:28px}
        .swatch{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
        table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eee}
        td.key{font-family:ui-monospace,monospace;word-break:break-all}tr.expired td{color:#b26a00}tr.corrupt td{color:#c62828}
        .none{color:#888}.thumbs{display:flex;flex-wrap:wrap;gap:10px}
        figure{margin:0;width:120px;text-align:center}figure img{max-width:120px;max-height:120px;border:1px solid #ddd;background:#fff}
        figcaption{font-size:10px;color:#666;word-break:break-all}
        """
}
