import Foundation
import Larder

/// `larder report --html FILE`: a self-contained HTML page about a cache.
enum ReportCommand: Subcommand {
    static let spec = CommandSpec(
        name: "report", summary: "Write an HTML page about the cache: totals, histograms, largest, stalest, corrupt, images.",
        options: CacheContext.options + [.value("html", "FILE", "Where to write the page (required).")],
        discussion: """
            The page needs no network: CSS and SVG charts are inline, and PNG, JPEG and GIF payloads
            (by their magic bytes) appear as thumbnails from data: URIs, at most \(ReportPage.maximumThumbnails), each at most
            \(ReportPage.maximumThumbnailBytes / 1024) KiB. Reads without taking the directory's lock.
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        guard let output = arguments.value("html") else {
            throw .usage("'larder report' needs --html FILE (see 'larder report --help')")
        }
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let inspector = CacheInspector(context)
        let total = try inspector.recordNames().count
        var progress = ProgressBar(io: io, label: "report", total: total)
        let entries = try inspector.entries(readPayload: false) { done, total in progress.update(done, of: total) }
        progress.finish()
        var thumbnails: [ReportPage.Thumbnail] = []
        for entry in entries.sorted(by: { $0.displayKey < $1.displayKey }) where thumbnails.count < ReportPage.maximumThumbnails {
            guard entry.corruption == nil, let size = entry.payloadSize, size > 0, size <= ReportPage.maximumThumbnailBytes,
                  let full = inspector.entry(named: entry.file, readPayload: true), let payload = full.payload,
                  let mime = PayloadKind.of(payload).imageMIMEType else { continue }
            thumbnails.append(.init(key: entry.displayKey, mimeType: mime, data: payload))
        }
        let page = ReportPage(
            directory: context.layout.root, format: context.formatDescription, now: context.now,
            defaultExpiration: context.defaultExpiration, summary: CacheSummary(entries: entries), thumbnails: thumbnails)
        let html = page.render()
        do {
            try Data(html.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw CommandFailure(.cacheError, "cannot write '\(output)': \((error as NSError).localizedDescription)")
        }
        io.out("wrote \(output): \(entries.count) records, \(HumanFormat.size(page.summary.totalSize)), \(thumbnails.count) thumbnails\n")
        return .success
    }
}
