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
            \(ReportPage.maximumThumbnailBytes / 1024) KiB. Checks every record's checksums like 'larder verify', without taking the directory's lock.
            """)

    static func run(_ arguments: ParsedArguments, io: CommandIO) throws(CommandFailure) -> ExitCode {
        guard let output = arguments.value("html") else {
            throw .usage("'larder report' needs --html FILE (see 'larder report --help')")
        }
        let context = try CacheContext(arguments, io: io, mustExist: true)
        let inspector = CacheInspector(context)
        let names = try inspector.recordNames()
        var progress = ProgressBar(io: io, label: "report", total: names.count)
        var entries: [RecordEntry] = []
        var thumbnails: [ReportPage.Thumbnail] = []
        // Payloads are read (and checked) one at a time; only thumbnails keep theirs.
        for (i, name) in names.enumerated() {
            defer { progress.update(i + 1, of: names.count) }
            guard var entry = inspector.entry(named: name, readPayload: true), entry.status != .foreign else { continue }
            if let payload = entry.payload, thumbnails.count < ReportPage.maximumThumbnails,
                payload.count <= ReportPage.maximumThumbnailBytes, let mime = PayloadKind.of(payload).imageMIMEType
            {
                thumbnails.append(.init(key: entry.displayKey, mimeType: mime, data: payload))
            }
            entry.payload = nil
            entries.append(entry)
        }
        progress.finish()
        let page = ReportPage(
            directory: context.layout.root, format: context.formatDescription, now: context.now,
            defaultExpiration: context.defaultExpiration, summary: CacheSummary(entries: entries), thumbnails: thumbnails)
        let html = page.render()
        // The report names keys and shows thumbnails: it keeps the cache's privacy.
        try PrivateOutput(root: context.files.root?.info).write(Data(html.utf8), to: output)
        io.out("wrote \(output): \(entries.count) records, \(HumanFormat.size(page.summary.totalSize)), \(thumbnails.count) thumbnails\n")
        return .success
    }
}
